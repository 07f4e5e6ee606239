// `nxs node ...`: run, start, stop, status, register and unregister the per-machine node.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { NexusError } from '../../protocol/errors.js';
import { createLogger, storeCacheSetting, wasmTieringSetting } from '../../infra/index.js';
import { addToRegistry, isRegistered, nodePaths, nodeProcessAlive, readRegistry, removeFromRegistry, runningNode } from '../host/node/files.js';
import { packageRoot } from '../paths.js';
import { callNode, isUnreachable } from '../host/rpc/client.js';
import { findWorkspace } from '../adapters/workspace/index.js';
import { printJson, type Io } from './io.js';
import { str, type Verb } from './spec.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function homeOf(io: Io) {
  return nodePaths(io.env['NEXUS_HOME'] ? io.env['NEXUS_HOME'] : undefined);
}

async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(100);
  }
  return false;
}

/** What `nxs node run` and `start` take: the ticker's period, where /healthz and /metrics listen, where the dashboard listens. */
type RunOptions = {
  tickMs: number | undefined;
  metricsHost: string | undefined;
  metricsPort: number | undefined;
  uiHost: string | undefined;
  uiPort: number | undefined;
};

async function run(io: Io, o: RunOptions): Promise<void> {
  // A node opens its stores only as workspaces come to it: a bad setting is refused now, not at the first one.
  wasmTieringSetting(io.env);
  storeCacheSetting(io.env);
  const [{ startNode }, { CLI_HANDOVER }] = await Promise.all([import('../host/node/index.js'), import('./handover.js')]);
  const log = createLogger({ component: 'node', env: io.env, sink: io.stderr });
  const node = await startNode({
    home: homeOf(io).home,
    // nxc verbs that clients hand over run in the node, through its command path.
    routes: [CLI_HANDOVER],
    log,
    ...(o.tickMs === undefined ? {} : { tickMs: o.tickMs }),
    health: { ...(o.metricsHost === undefined ? {} : { host: o.metricsHost }), ...(o.metricsPort === undefined ? {} : { port: o.metricsPort }) },
    ui: { ...(o.uiHost === undefined ? {} : { host: o.uiHost }), ...(o.uiPort === undefined ? {} : { port: o.uiPort }) },
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void node.close();
  };
  // `on`, not `once`: signal-exit (loaded with the store's lock) re-raises a signal when only its own
  // listeners are left, which would kill the node before it closes its stores.
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // A log line like every other: under `nxs node start` the log file is JSON lines from its first line.
  log.info(`node ${node.pid} running; socket ${node.socket}`, { pid: node.pid, socket: node.socket, health: node.health });
  await node.closed;
}

async function start(io: Io, json: boolean, o: RunOptions): Promise<void> {
  wasmTieringSetting(io.env);
  storeCacheSetting(io.env);
  const paths = homeOf(io);
  const first = runningNode(paths);
  if (first) throw new NexusError('NODE_RUNNING', `a node already runs for ${paths.home}: pid ${first.pid}, socket ${first.socket}`, { pid: first.pid });
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  const logFd = openSync(paths.log, 'a', 0o600);
  const runArgs = [
    ...(o.tickMs === undefined ? [] : ['--tick-ms', String(o.tickMs)]),
    ...(o.metricsHost === undefined ? [] : ['--metrics-host', o.metricsHost]),
    ...(o.metricsPort === undefined ? [] : ['--metrics-port', String(o.metricsPort)]),
    ...(o.uiHost === undefined ? [] : ['--ui-host', o.uiHost]),
    ...(o.uiPort === undefined ? [] : ['--ui-port', String(o.uiPort)]),
  ];
  // The V8 flag bin/nxs's #! line gives a node run in the foreground: the same program either way.
  const child = spawn(process.execPath, ['--single-threaded-gc', join(packageRoot(), 'bin', 'nxs'), 'node', 'run', ...runArgs], {
    detached: true,
    stdio: ['ignore', logFd, logFd],
    env: { ...io.env, NEXUS_HOME: paths.home },
  });
  closeSync(logFd);
  child.unref();
  const up = await waitFor(async () => {
    const info = runningNode(paths);
    if (!info) return child.exitCode !== null ? Promise.reject(new NexusError('INTERNAL', `the node exited at start; see ${paths.log}`)) : false;
    return callNode(info.socket, 'node.info', null, {}).then(
      () => true,
      () => false,
    );
  }, 30_000);
  if (!up) throw new NexusError('INTERNAL', `the node did not come up within 30 s; see ${paths.log}`);
  const info = runningNode(paths)!;
  if (json) printJson(io, { running: true, pid: info.pid, socket: info.socket, log: paths.log, health: info.health ?? null });
  else io.stdout(`node started: pid ${info.pid}, socket ${info.socket}, log ${paths.log}${info.health ? `, metrics ${info.health}/metrics` : ''}\n`);
}

async function stop(io: Io, json: boolean): Promise<void> {
  const paths = homeOf(io);
  const info = runningNode(paths);
  if (!info) {
    if (json) printJson(io, { stopped: false, running: false });
    else io.stdout('no node was running\n');
    return;
  }
  await callNode(info.socket, 'node.shutdown', null, {}).catch((err: unknown) => {
    if (!isUnreachable(err)) throw err;
    process.kill(info.pid, 'SIGTERM');
  });
  if (!(await waitFor(() => !nodeProcessAlive(info.pid), 20_000))) {
    process.kill(info.pid, 'SIGKILL');
  }
  if (json) printJson(io, { stopped: true, pid: info.pid });
  else io.stdout(`node ${info.pid} stopped\n`);
}

async function status(io: Io, json: boolean): Promise<void> {
  const paths = homeOf(io);
  const info = runningNode(paths);
  const registered = readRegistry(paths).workspaces;
  const live = info ? await callNode(info.socket, 'node.info', null, {}).catch(() => null) : null;
  const report = { running: info !== null, pid: info?.pid ?? null, socket: info?.socket ?? null, health: info?.health ?? null, home: paths.home, registered, serving: live?.workspaces ?? [] };
  if (json) return printJson(io, report);
  io.stdout(
    info
      ? `node running: pid ${info.pid}, socket ${info.socket}${info.health ? `; health ${info.health}/healthz, metrics ${info.health}/metrics` : ''}\n`
      : `no node running for ${paths.home} (start one with \`nxs node start\`)\n`,
  );
  for (const w of registered) io.stdout(`  registered ${w.id} ${w.root}\n`);
}

async function register(io: Io, json: boolean, on: boolean): Promise<void> {
  const paths = homeOf(io);
  const ws = findWorkspace(io.cwd, io.env);
  const was = isRegistered(paths, ws.id);
  let info = runningNode(paths);
  if (info) {
    // The node serves first and writes the registry only once it does: a workspace it cannot serve (its
    // store held by a node of another NEXUS_HOME: STORE_BUSY) is refused with nothing written.
    try {
      if (on) await callNode(info.socket, 'node.register', null, { root: ws.paths.root });
      else await callNode(info.socket, 'node.unregister', null, { workspace: ws.id });
    } catch (err) {
      if (!isUnreachable(err)) throw err;
      info = null;
    }
  }
  if (!info) {
    if (on) addToRegistry(paths, ws.id, ws.paths.root);
    else removeFromRegistry(paths, ws.id);
  }
  const changed = on ? !was : was;
  const out = { workspace: ws.id, registered: on, changed, node_running: info !== null };
  if (json) return printJson(io, out);
  io.stdout(
    `${ws.id} ${on ? 'registered' : 'unregistered'}${changed ? '' : ' (it already was)'}` +
      (on && !info ? '; no node is running: start one with `nxs node start`' : '') +
      '\n',
  );
}

/** `--tick-ms N`: how often the node's ticker settles dead turns (default 30 s). */
function tickOption(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const ms = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(ms) || ms < 10) throw new NexusError('USAGE', `--tick-ms needs a whole number of milliseconds, at least 10 (got ${JSON.stringify(raw)})`);
  return ms;
}

/** `--metrics-port N`, `--ui-port N`: 0 to 65535. */
function portOption(raw: string | undefined, flag: string): number | undefined {
  if (raw === undefined) return undefined;
  const port = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(port) || port > 65535) throw new NexusError('USAGE', `${flag} needs a port number, 0 to 65535 (got ${JSON.stringify(raw)})`);
  return port;
}

/** `--ui-host H`: a host name or address, as `nxs ui --host` takes it. */
function hostOption(raw: string | undefined): string | undefined {
  if (raw !== undefined && !/^[A-Za-z0-9.:_-]{1,253}$/.test(raw)) throw new NexusError('USAGE', `--ui-host ${JSON.stringify(raw)} is not a host name or address`);
  return raw;
}

const RUN_FLAGS = {
  'tick-ms': { type: 'string', value: 'N', help: 'run the ticker (settling turns whose process died without reporting) every N ms instead of every 30 s' },
  'metrics-host': { type: 'string', value: 'H', help: 'where /healthz and /metrics listen (default 127.0.0.1; 0.0.0.0 exposes them to the network)' },
  'metrics-port': { type: 'string', value: 'N', help: 'the port of /healthz and /metrics (default 0: any free one, shown by `nxs node status`)' },
  'ui-host': { type: 'string', value: 'H', help: 'where the dashboard listens from the start (default 127.0.0.1; beyond loopback the URL secret guards every request)' },
  'ui-port': { type: 'string', value: 'N', help: 'the dashboard\'s port from the start (default: the one it had last time, when free); a node that cannot have it does not start' },
} as const;

function runOptions(a: Parameters<Verb['run']>[1]): RunOptions {
  return {
    tickMs: tickOption(str(a, 'tick-ms')),
    metricsHost: str(a, 'metrics-host'),
    metricsPort: portOption(str(a, 'metrics-port'), '--metrics-port'),
    uiHost: hostOption(str(a, 'ui-host')),
    uiPort: portOption(str(a, 'ui-port'), '--ui-port'),
  };
}

export const NODE_VERBS: readonly Verb[] = [
  {
    path: ['node', 'run'],
    summary: 'run the per-machine node in the foreground (NEXUS_HOME names its state folder)',
    flags: RUN_FLAGS,
    run: (io, a) => run(io, runOptions(a)),
  },
  {
    path: ['node', 'start'],
    summary: 'start the per-machine node in the background and wait until it answers',
    flags: RUN_FLAGS,
    run: (io, a) => start(io, a.json, runOptions(a)),
  },
  { path: ['node', 'stop'], summary: 'stop the node (SIGKILL if it does not stop within 20 s)', run: (io, a) => stop(io, a.json) },
  { path: ['node', 'status'], summary: 'whether a node runs, and the workspaces registered with it', run: (io, a) => status(io, a.json) },
  { path: ['node', 'register'], summary: 'have the node serve this workspace (it keeps its clock and syncs it)', run: (io, a) => register(io, a.json, true) },
  { path: ['node', 'unregister'], summary: 'stop serving this workspace', run: (io, a) => register(io, a.json, false) },
];
