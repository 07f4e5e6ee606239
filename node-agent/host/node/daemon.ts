// The node: one background service per NEXUS_HOME, composed of its parts: the workspaces it serves and
// their queues (served.ts), local delivery between them (delivery.ts), the clock (ticks.ts), what it
// answers (handlers.ts), its socket (rpc/server.ts) and the dashboard (ui/). Routes the node does not own,
// such as nxc's hand-over, are added by whoever starts it.
import { createAdaptorServer } from '@hono/node-server';
import type { Server } from 'node:http';
import { EventEmitter } from 'node:events';
import { chmodSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { OpVerifier } from '../../../crypto/index.js';
import { createLogger, useProcessHelper, type Logger } from '../../../infra/index.js';
import { NexusError } from '../../../protocol/errors.js';
import type { UiInfo } from '../../../protocol/commands.js';
import type { Timers } from '../../kernel/index.js';
import { packageVersion } from '../../paths.js';
import { rpcApp, type NodeRoute } from '../rpc/server.js';
import { startUi, type UiBackend, type UiServer } from '../ui/index.js';
import { LocalDelivery } from './delivery.js';
import { nodePaths, originId, readRegistry, writeInfo, type NodePaths } from './files.js';
import { claimHome } from './claim.js';
import { commandPath } from './handlers.js';
import { Served } from './served.js';
import { Ticker } from './ticks.js';
import { NodeCounters } from './counters.js';
import { healthApp, startHealth, type HealthOptions, type HealthServer, type NodeMetricsView } from './metrics.js';

export type NodeOptions = {
  home?: string;
  tickMs?: number;
  /** Where the node, its sync clients and its dashboard report (default: JSON lines on stderr, component `node`). */
  log?: Logger;
  /**
   * false: no web dashboard. A host and/or port: it listens there from the start (as `nxs ui --host --port`
   * would move it), and a node that cannot have that address does not start; otherwise 127.0.0.1 on the
   * port it had last time.
   */
  ui?: boolean | { host?: string; port?: number };
  /** Routes added to the node's socket beside its commands (nxc's hand-over: node-agent/cli/handover.ts). */
  routes?: readonly NodeRoute[];
  /** The timers its clock arms (default: the process's). */
  timers?: Timers;
  /** Where /healthz and /metrics listen (default: 127.0.0.1, any free port); false: nowhere. */
  health?: HealthOptions | false;
};

export type RunningNode = {
  paths: NodePaths;
  socket: string;
  pid: number;
  /** Where /healthz and /metrics answer (http://host:port), or null when they are off. */
  health: string | null;
  /** The dashboard's URL (with the node's secret), or null when it is off or could not start. */
  ui: () => UiInfo | null;
  /** "ops": a workspace's log grew (a command ran, or synced or delivered ops were taken in); the argument is its id. */
  events: EventEmitter<{ ops: [workspace: string] }>;
  close: () => Promise<void>;
  closed: Promise<void>;
};

/** How often the ticker looks for turns whose process died without reporting. */
const DEFAULT_TICK_MS = 30_000;

export async function startNode(opts: NodeOptions = {}): Promise<RunningNode> {
  const paths = nodePaths(opts.home);
  const log = opts.log ?? createLogger({ component: 'node' });
  const tickMs = opts.tickMs ?? DEFAULT_TICK_MS;
  const startedAt = new Date().toISOString();
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  // Its socket runs any command on every workspace served: a folder an older version left open is closed.
  chmodSync(paths.dir, 0o700);
  const releaseNodeLock = await claimHome(paths);
  // git runs on every message: fork it from a small helper, not from this process once it holds stores.
  useProcessHelper();
  const events = new EventEmitter<{ ops: [workspace: string] }>();
  events.setMaxListeners(0);
  const announce = (id: string) => void events.emit('ops', id);
  // Its own verification threads, for sync and local delivery: they end with the node.
  const verifier = new OpVerifier();
  const check = verifier.check;
  const counters = new NodeCounters();
  const served = new Served({ paths, origin: originId(paths.home), log, announce, check, counters, ...(opts.timers ? { timers: opts.timers } : {}) });
  const delivery = new LocalDelivery(served, announce, log, check);
  served.deliver = (entry) => delivery.from(entry);
  for (const w of readRegistry(paths).workspaces) {
    await served.serve(w.root).catch((err: unknown) => log.error(`cannot serve ${w.id} at ${w.root}`, { workspace: w.id, err }));
  }

  let ui: UiServer | null = null;
  let health: HealthServer | null = null;
  let server: Server | undefined;
  let ticker: Ticker | undefined;
  let stopping: Promise<void> | undefined;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  const close = (): Promise<void> =>
    (stopping ??= (async () => {
      ticker?.close();
      await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
      await ui?.close();
      await health?.close();
      await served.close();
      await verifier.close();
      rmSync(paths.socket, { force: true });
      rmSync(paths.info, { force: true });
      releaseNodeLock();
      log.info('node stopped');
      resolveClosed();
    })());

  // The one command path: the RPC route, the dashboard and added routes all run commands through it.
  const shutdown = () => void setTimeout(() => void close(), 10);
  const run = commandPath({ paths, served, startedAt, ui: () => ui, shutdown, announce });
  const app = rpcApp({ run }, { home: paths.home, version: packageVersion(), serves: (id) => served.get(id) !== undefined, run }, opts.routes);
  rmSync(paths.socket, { force: true });
  server = createAdaptorServer({ fetch: app.fetch }) as Server;
  await new Promise<void>((resolve, reject) => {
    server!.once('error', reject);
    server!.listen(paths.socket, () => resolve());
  });
  chmodSync(paths.socket, 0o600);
  health = await closingOnError(close, () => startNodeHealth(opts.health, { served, counters, version: packageVersion(), registered: () => readRegistry(paths).workspaces.length }, startedAt, log));
  writeInfo(paths, { pid: process.pid, started_at: startedAt, socket: paths.socket, home: paths.home, ...(health ? { health: health.url } : {}) });
  if (opts.ui !== false) {
    const onAppended = (listener: (workspace: string) => void) => (events.on('ops', listener), () => void events.off('ops', listener));
    const backend = { run, onAppended, registered: () => readRegistry(paths).workspaces };
    ui = await closingOnError(close, () => startDashboard(paths, backend, typeof opts.ui === 'object' ? opts.ui : {}, log));
  }
  const tick = (id: string) =>
    served
      .tick(id)
      .then((r) => void (r.settled > 0 && announce(id)))
      .catch((err: unknown) => log.error('tick failed', { workspace: id, err }));
  ticker = new Ticker(tickMs, () => served.ids(), tick, opts.timers);
  log.info(`node ${process.pid} listening on ${paths.socket}; ${served.size} workspace(s); tick every ${tickMs} ms`, {
    pid: process.pid,
    socket: paths.socket,
    workspaces: served.size,
    tick_ms: tickMs,
  });
  if (!existsSync(paths.socket)) throw new NexusError('INTERNAL', 'the node socket vanished');
  return { paths, socket: paths.socket, pid: process.pid, health: health?.url ?? null, ui: () => ui?.info() ?? null, events, close, closed };
}

/** Runs `start`; if it throws, the node closes what it started before the error goes on. */
async function closingOnError<T>(close: () => Promise<void>, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    await close();
    throw err;
  }
}

/** /healthz and /metrics, unless turned off. A port asked for and not had fails the start: the node does not run half-watched. */
async function startNodeHealth(options: HealthOptions | false | undefined, view: NodeMetricsView, startedAt: string, log: Logger): Promise<HealthServer | null> {
  if (options === false) return null;
  const health = await startHealth(healthApp(view, { pid: process.pid, startedAt, log }), options ?? {});
  log.info(`health and metrics on ${health.url}/healthz and ${health.url}/metrics`, { health: health.url });
  return health;
}

/**
 * The dashboard. An address asked for and not had fails the start: the node does not run with its
 * dashboard somewhere else, or nowhere. Without one asked for, a failure is logged and the node runs on.
 */
async function startDashboard(paths: NodePaths, backend: UiBackend, where: { host?: string; port?: number }, log: Logger): Promise<UiServer | null> {
  try {
    return await startUi({ nodeDir: paths.dir, backend, log: log.child({ component: 'ui' }), ...where });
  } catch (err) {
    if (where.host !== undefined || where.port !== undefined) throw err;
    log.error('the dashboard could not start', { err });
    return null;
  }
}
