// The node: one background service per NEXUS_HOME. It holds the stores of its registered workspaces
// open, serves them over a Unix socket, and keeps the clock (a ticker that settles dead turns).
import { createAdaptorServer } from '@hono/node-server';
import type { Server } from 'node:http';
import { EventEmitter } from 'node:events';
import { existsSync, rmSync } from 'node:fs';
import { acquireLock, createLogger, describeOwner, useProcessHelper, type LockOwner, type Logger } from '../../../infra/index.js';
import { mkdirSync } from 'node:fs';
import { and, asc, eq, gt, inArray, isNotNull } from 'drizzle-orm';
import { checkOps } from '../../../crypto/index.js';
import { NexusError } from '../../../protocol/errors.js';
import type { Op } from '../../../protocol/ops.js';
import type { CommandName, NodeCommand, UiInfo, WorkspaceCommand } from '../../../protocol/commands.js';
import { ingestChecked, invoke, rowToOp, wireTextOf, type Handlers } from '../../kernel/index.js';
import { hostFor, realDeps, type Host } from '../index.js';
import { rpcApp, type RpcBackend } from '../rpc/server.js';
import { NODE_PURPOSE, openStore, tables, type Store } from '../../adapters/store/index.js';
import { readBinding, SyncClient } from '../sync/index.js';
import { findWorkspace, type Workspace } from '../../adapters/workspace/index.js';
import { packageVersion } from '../../paths.js';
import { recover } from '../../capabilities/leases/index.js';
import { inertCounts, refusalRepeats } from '../../capabilities/threads/index.js';
import { startUi, type UiServer } from '../ui/index.js';
import { addToRegistry, nodeLockPath, nodePaths, originId, readRegistry, removeFromRegistry, runningNode, writeInfo, type NodePaths } from './files.js';

type Served = {
  workspace: Workspace;
  store: Store;
  host: Host;
  queue: Promise<unknown>;
  sync: SyncClient | null;
  /** local_seq of the last op this workspace wrote that was offered to the other workspaces served here. */
  delivered: number;
  /** A delivery pass is running; another is wanted after it. */
  delivering: boolean;
  deliverAgain: boolean;
  /** The instants the working-copy lease asked a tick for, and the one timer armed for the earliest. */
  leaseTicks: Set<number>;
  leaseTimer: NodeJS.Timeout | null;
};

/** How many own ops one local delivery pass reads at a time. */
const DELIVERY_PAGE = 500;

export type NodeOptions = {
  home?: string;
  tickMs?: number;
  /** Where the node, its sync clients and its dashboard report (default: JSON lines on stderr, component `node`). */
  log?: Logger;
  /** false: no web dashboard. */
  ui?: boolean;
};

export type RunningNode = {
  paths: NodePaths;
  socket: string;
  pid: number;
  /** The dashboard's URL (with the node's secret), or null when it is off or could not start. */
  ui: () => UiInfo | null;
  /** "ops": a workspace's log grew (a command ran, or synced or delivered ops were taken in); the argument is its id. */
  events: EventEmitter<{ ops: [workspace: string] }>;
  close: () => Promise<void>;
  closed: Promise<void>;
};

/** Commands that only read: they append nothing, so they announce nothing (the dashboard runs them on every event). */
const READS: ReadonlySet<CommandName> = new Set(['status', 'threads.show', 'keys.show', 'trust.list', 'sync.status']);

/** How often the ticker looks for turns whose process died without reporting. */
const DEFAULT_TICK_MS = 30_000;

export async function startNode(opts: NodeOptions = {}): Promise<RunningNode> {
  const paths = nodePaths(opts.home);
  const log = opts.log ?? createLogger({ component: 'node' });
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  // One node per home: the lock's holder is known by pid, so a node killed a moment ago frees it at
  // once, and a live one is refused at once (a node still starting gets a few seconds to show up).
  const busy = (owner: LockOwner | null) => {
    const first = runningNode(paths);
    return new NexusError(
      'NODE_RUNNING',
      first
        ? `a node already runs for ${paths.home}: pid ${first.pid}, started ${first.started_at}, socket ${first.socket}`
        : `a node is starting or running for ${paths.home}: ${describeOwner(owner)}`,
      first ? { pid: first.pid, socket: first.socket } : { pid: owner?.pid ?? null },
    );
  };
  const releaseNodeLock = await acquireLock(nodeLockPath(paths), {
    waitMs: 3_000,
    purpose: NODE_PURPOSE,
    home: paths.home,
    busy,
    // The holder is up (its node.json names it): waiting could only end in the same refusal.
    refuseEarly: (owner) => (runningNode(paths)?.pid === owner.pid ? busy(owner) : null),
  });

  // git runs on every message: fork it from a small helper, not from this process once it holds stores.
  useProcessHelper();
  const served = new Map<string, Served>();
  const events = new EventEmitter<{ ops: [workspace: string] }>();
  events.setMaxListeners(0);
  let ui: UiServer | null = null;
  const origin = originId(paths.home);
  const startedAt = new Date().toISOString();

  async function serve(root: string): Promise<Served> {
    const workspace = findWorkspace(root, {});
    const existing = served.get(workspace.id);
    if (existing) return existing;
    const store = await openStore(workspace.paths.store, { waitMs: 30_000, purpose: NODE_PURPOSE, home: paths.home, tiering: true });
    // A move of the working copy that a crash interrupted is finished or rolled back before anything else.
    await recover(workspace.paths.root).catch((err: unknown) => log.error('recovering the working copy failed', { workspace: workspace.id, err }));
    const entry: Served = {
      workspace,
      store,
      host: null as unknown as Host,
      queue: Promise.resolve(),
      sync: null,
      delivered: 0,
      delivering: false,
      deliverAgain: false,
      leaseTicks: new Set(),
      leaseTimer: null,
    };
    entry.host = hostFor(
      realDeps(workspace, store.db, {
        origin,
        scheduleTick: (at) => scheduleLeaseTick(entry, at),
        peerRoot: (id) => readRegistry(paths).workspaces.find((w) => w.id === id)?.root ?? null,
      }),
    );
    served.set(workspace.id, entry);
    log.info(`serving ${workspace.id} (${workspace.name}) at ${workspace.paths.root}`, { workspace: workspace.id });
    await startSync(entry);
    for (const other of served.values()) deliverFrom(other);
    return entry;
  }

  /**
   * Local delivery between the workspaces this node serves, with no relay: the ops `from` wrote
   * that concern another served workspace (a thread addressed to it, or an operation it already
   * holds) are taken in there as their signed wire texts, verified exactly as synced ops are, and
   * that workspace reacts to them (admits a commission, wakes a requester). Runs after every
   * command and reaction; passes on one workspace never overlap.
   */
  function deliverFrom(from: Served): void {
    if (from.delivering) {
      from.deliverAgain = true;
      return;
    }
    // With one workspace served there is nobody to deliver to; the mark stays, so a workspace
    // registered later is offered everything it may need.
    if (served.get(from.workspace.id) !== from || served.size < 2) return;
    from.delivering = true;
    void (async () => {
      try {
        for (;;) {
          const after = from.delivered;
          const rows = await inQueue(from, () =>
            from.store.db
              .select()
              .from(tables.ops)
              .where(and(eq(tables.ops.workspace, from.workspace.id), gt(tables.ops.localSeq, after), isNotNull(tables.ops.sig)))
              .orderBy(asc(tables.ops.localSeq))
              .limit(DELIVERY_PAGE),
          );
          if (rows.length === 0) break;
          const ops = rows.map((r) => ({ op: rowToOp(r), raw: wireTextOf(r)! }));
          for (const to of [...served.values()]) {
            if (to === from) continue;
            await deliverTo(to, await withPast(from, to, ops)).catch((err: unknown) => log.error('local delivery failed', { from: from.workspace.id, to: to.workspace.id, err }));
          }
          from.delivered = Math.max(from.delivered, rows[rows.length - 1]!.localSeq);
          if (rows.length < DELIVERY_PAGE) break;
        }
      } catch (err) {
        log.error('local delivery failed', { from: from.workspace.id, err });
      } finally {
        from.delivering = false;
        if (from.deliverAgain) {
          from.deliverAgain = false;
          deliverFrom(from);
        }
      }
    })();
  }

  /**
   * A thread addressed to `to` brings the whole operation it is in, as `from` holds it (its own ops and
   * those it took in): the fold places a thread only beneath a parent it has folded, and judges who may
   * act in a thread by the threads above it.
   */
  async function withPast(from: Served, to: Served, ops: Array<{ op: Op; raw: string }>): Promise<Array<{ op: Op; raw: string }>> {
    const addressed = new Set<string>();
    for (const { op } of ops) {
      if (op.kind === 'thread.opened' && op.body.target.kind === 'remote' && op.body.target.workspace === to.workspace.id) addressed.add(op.operation);
    }
    if (addressed.size === 0) return ops;
    const past = await inQueue(from, () =>
      from.store.db
        .select()
        .from(tables.ops)
        .where(and(inArray(tables.ops.operation, [...addressed]), isNotNull(tables.ops.sig)))
        .orderBy(asc(tables.ops.localSeq)),
    );
    const ids = new Set(ops.map((o) => o.op.id));
    return [...past.filter((r) => !ids.has(r.id)).map((r) => ({ op: rowToOp(r), raw: wireTextOf(r)! })), ...ops];
  }

  async function deliverTo(to: Served, ops: Array<{ op: Op; raw: string }>): Promise<void> {
    const addressed = new Set<string>();
    for (const { op } of ops) {
      if (op.kind === 'thread.opened' && op.body.target.kind === 'remote' && op.body.target.workspace === to.workspace.id) addressed.add(op.operation);
    }
    const reacted = await inQueue(to, async () => {
      const operations = [...new Set(ops.map((o) => o.op.operation))];
      const held = new Set(
        (await to.store.db.select({ id: tables.operations.id }).from(tables.operations).where(inArray(tables.operations.id, operations))).map((r) => r.id),
      );
      // Key rotations always: they are the sender's key chain, without which its later ops (and the
      // stamps they carry) cannot be placed here.
      const wanted = ops.filter((o) => addressed.has(o.op.operation) || held.has(o.op.operation) || o.op.kind === 'workspace.key_rotated');
      if (wanted.length === 0) return false;
      const checked = await checkOps(wanted.map((o) => o.raw));
      const report = await to.store.db.transaction((tx) => ingestChecked(tx, checked, { projections: to.host.deps.projections }));
      if (report.refusals.length > 0) log.warn(`local delivery: ${report.refusals.length} op(s) refused or held`, { to: to.workspace.id, refused: report.refusals.length });
      if (report.fresh.length === 0) return false;
      await to.host.engine.react(report.fresh);
      return true;
    });
    if (reacted) {
      events.emit('ops', to.workspace.id);
      to.sync?.kick();
      deliverFrom(to);
    }
  }

  /**
   * The working-copy lease's clock: a tick at each instant it asked for (a contention deadline, a bound, the
   * minute sweep while somebody waits), so those happen with nobody around. One timer per workspace, armed for
   * the earliest instant still ahead.
   */
  function scheduleLeaseTick(entry: Served, at: number): void {
    entry.leaseTicks.add(at);
    armLeaseTimer(entry);
  }

  function armLeaseTimer(entry: Served): void {
    if (entry.leaseTimer !== null) clearTimeout(entry.leaseTimer);
    entry.leaseTimer = null;
    if (entry.leaseTicks.size === 0 || served.get(entry.workspace.id) !== entry) return;
    const next = Math.min(...entry.leaseTicks);
    entry.leaseTimer = setTimeout(() => {
      entry.leaseTimer = null;
      const now = Date.now();
      for (const at of entry.leaseTicks) if (at <= now + 10) entry.leaseTicks.delete(at);
      void withHost(entry.workspace.id, (h) => h.run('tick', {}))
        .catch((err: unknown) => log.error('lease tick failed', { workspace: entry.workspace.id, err }))
        .finally(() => armLeaseTimer(entry));
    }, Math.max(0, Math.min(next - Date.now(), 2 ** 31 - 1)));
    entry.leaseTimer.unref();
  }

  /** Runs store work in the workspace's queue, after whatever command is in progress. */
  function inQueue<T>(entry: Served, fn: () => Promise<T>): Promise<T> {
    const run = entry.queue.then(fn);
    entry.queue = run.catch(() => undefined);
    return run;
  }

  /** (Re)starts the workspace's sync client from its binding; none when it is not bound. */
  async function startSync(entry: Served): Promise<void> {
    await entry.sync?.stop();
    entry.sync = null;
    const binding = readBinding(entry.workspace.paths);
    if (binding === null) return;
    entry.sync = new SyncClient({
      binding,
      origin,
      workspace: entry.workspace.id,
      signer: () => entry.host.deps.keys.signer,
      projections: entry.host.deps.projections,
      run: (fn) => inQueue(entry, () => fn(entry.store.db)),
      // Foreign ops just stored: commissions addressed here are admitted, answers wake requesters.
      onIngested: (ops) => {
        events.emit('ops', entry.workspace.id);
        void inQueue(entry, () => entry.host.engine.react(ops))
          .then(() => {
            entry.sync?.kick();
            deliverFrom(entry);
          })
          .catch((err: unknown) => log.error('reacting to synced ops failed', { workspace: entry.workspace.id, err }));
      },
      log: log.child({ component: 'sync', workspace: entry.workspace.id, stream: binding.stream }),
    });
    await entry.sync.start();
    log.info(`syncs with stream ${binding.stream} at ${binding.relay}`, { workspace: entry.workspace.id, stream: binding.stream, relay: binding.relay });
  }

  for (const w of readRegistry(paths).workspaces) {
    await serve(w.root).catch((err: unknown) => log.error(`cannot serve ${w.id} at ${w.root}`, { workspace: w.id, err }));
  }

  /** Commands on one workspace run one at a time, exactly as the store lock orders them without a node. */
  function withHost<T>(id: string, fn: (host: Host) => Promise<T>): Promise<T> {
    const entry = served.get(id);
    if (!entry) return Promise.reject(new NexusError('NOT_SERVED', `this node does not serve workspace ${id}`));
    return inQueue(entry, () => fn(entry.host)).finally(() => {
      entry.sync?.kick();
      deliverFrom(entry);
    });
  }

  let stopping: Promise<void> | undefined;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  let server: Server;
  const close = (): Promise<void> => {
    stopping ??= (async () => {
      clearInterval(ticker);
      await new Promise<void>((r) => server.close(() => r()));
      await ui?.close();
      for (const entry of served.values()) {
        if (entry.leaseTimer !== null) clearTimeout(entry.leaseTimer);
        await entry.sync?.stop();
        await entry.queue;
        await entry.store.close().catch(() => undefined);
      }
      rmSync(paths.socket, { force: true });
      rmSync(paths.info, { force: true });
      releaseNodeLock();
      log.info('node stopped');
      resolveClosed();
    })();
    return stopping;
  };

  const nodeHandlers: Handlers<null, NodeCommand> = {
    'node.info': async () => ({
      pid: process.pid,
      started_at: startedAt,
      home: paths.home,
      socket: paths.socket,
      workspaces: [...served.values()].map((s) => ({ id: s.workspace.id, name: s.workspace.name, root: s.workspace.paths.root })),
    }),
    'node.register': async (_, { root }) => {
      const entry = await serve(root);
      addToRegistry(paths, entry.workspace.id, entry.workspace.paths.root);
      return { workspace: entry.workspace.id, serving: true };
    },
    'node.unregister': async (_, { workspace }) => {
      const entry = served.get(workspace);
      removeFromRegistry(paths, workspace);
      if (entry) {
        served.delete(workspace);
        if (entry.leaseTimer !== null) clearTimeout(entry.leaseTimer);
        await entry.sync?.stop();
        await entry.queue;
        await entry.store.close();
      }
      return { workspace: workspace, serving: false };
    },
    'node.ui': async (_, { host, port }) => {
      if (ui === null) throw new NexusError('INTERNAL', `the dashboard is not running on this node; see ${paths.log}`);
      return host === null && port === null ? ui.info() : ui.rebind(host, port);
    },
    'node.shutdown': async () => {
      setTimeout(() => void close(), 10);
      return { stopping: true };
    },
  };
  // Unbound, ops still arrive by local delivery: the inert ones among them are counted all the same.
  const unbound = (entry: Served) =>
    inQueue(entry, async () => ({ bound: false as const, inert: await inertCounts(entry.store.db), refusals_unsigned: await refusalRepeats(entry.store.db) }));
  // Sync runs in the node: its status and restart come from the live client, not the store.
  const syncHandlers: Handlers<Served, 'sync.status' | 'sync.reload'> = {
    'sync.status': async (entry) => (entry.sync ? entry.sync.status() : unbound(entry)),
    'sync.reload': async (entry) => {
      await startSync(entry);
      return entry.sync ? entry.sync.status() : unbound(entry);
    },
  };

  // The one command path: the RPC route and the dashboard both run commands through it.
  const run: RpcBackend['run'] = (name, workspace, input, opts) => {
    if (workspace === null) return invoke(nodeHandlers, null, name as NodeCommand, input as never) as never;
    const entry = served.get(workspace);
    if (!entry) return Promise.reject(new NexusError('NOT_SERVED', `this node does not serve workspace ${workspace}`));
    if (name === 'sync.status' || name === 'sync.reload') return invoke(syncHandlers, entry, name, input as never) as never;
    const done = withHost(workspace, (h) => h.run(name as WorkspaceCommand, input as never, opts));
    // A refused command may still have written (a start failure it recorded): announce either way.
    if (!READS.has(name)) void done.then(() => events.emit('ops', workspace), () => events.emit('ops', workspace));
    return done as never;
  };
  // nxc verbs that clients hand over run here too, through the same command path (host/rpc/cli.ts).
  const app = rpcApp({ run }, { home: paths.home, version: packageVersion(), serves: (id) => served.has(id), run });

  rmSync(paths.socket, { force: true });
  server = createAdaptorServer({ fetch: app.fetch }) as Server;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(paths.socket, () => resolve());
  });
  writeInfo(paths, { pid: process.pid, started_at: startedAt, socket: paths.socket, home: paths.home });
  if (opts.ui !== false) {
    const onAppended = (listener: (workspace: string) => void) => {
      events.on('ops', listener);
      return () => void events.off('ops', listener);
    };
    ui = await startUi({ nodeDir: paths.dir, backend: { run, onAppended, registered: () => readRegistry(paths).workspaces }, log: log.child({ component: 'ui' }) }).catch((err: unknown) => {
      log.error('the dashboard could not start', { err });
      return null;
    });
  }

  // A workspace whose previous tick has not finished is skipped, so ticks never pile up in its queue.
  const ticking = new Set<string>();
  const ticker = setInterval(() => {
    for (const id of served.keys()) {
      if (ticking.has(id)) continue;
      ticking.add(id);
      void withHost(id, (h) => h.run('tick', {}))
        .then((r) => void (r.settled > 0 && events.emit('ops', id)))
        .catch((err: unknown) => log.error('tick failed', { workspace: id, err }))
        .finally(() => ticking.delete(id));
    }
  }, opts.tickMs ?? DEFAULT_TICK_MS);
  ticker.unref();
  log.info(`node ${process.pid} listening on ${paths.socket}; ${served.size} workspace(s); tick every ${opts.tickMs ?? DEFAULT_TICK_MS} ms`, {
    pid: process.pid,
    socket: paths.socket,
    workspaces: served.size,
    tick_ms: opts.tickMs ?? DEFAULT_TICK_MS,
  });
  if (!existsSync(paths.socket)) throw new NexusError('INTERNAL', 'the node socket vanished');
  return { paths, socket: paths.socket, pid: process.pid, ui: () => ui?.info() ?? null, events, close, closed };
}
