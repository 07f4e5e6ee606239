// The workspaces a node serves: each one's store held open, its host, its queue (commands on a workspace
// run one at a time, exactly as the store lock orders them without a node), its sync client and its
// clock. Serving, stopping, and running work in a workspace's queue go through here.
import type { CheckedOp } from '../../../crypto/index.js';
import { NexusError } from '../../../protocol/errors.js';
import { baseEnvironment } from '../../adapters/sessions/index.js';
import { NODE_PURPOSE, openStore, type Store } from '../../adapters/store/index.js';
import { findWorkspace, type Workspace } from '../../adapters/workspace/index.js';
import { recover } from '../../capabilities/leases/index.js';
import { listTrust } from '../../capabilities/trust/index.js';
import type { Timers } from '../../kernel/index.js';
import { hostFor, realDeps, type Host } from '../index.js';
import { readBinding, SyncClient } from '../sync/index.js';
import type { Logger } from '../../../infra/index.js';
import { readRegistry, type NodePaths } from './files.js';
import { TickScheduler } from './ticks.js';
import type { NodeCounters } from './counters.js';

/** One served workspace. */
export type ServedWorkspace = {
  readonly workspace: Workspace;
  readonly store: Store;
  readonly host: Host;
  /** The tail of its queue: store work runs after it. */
  queue: Promise<unknown>;
  sync: SyncClient | null;
  /** The engine's Scheduler here: a tick at each instant the workspace asked for. */
  readonly ticks: TickScheduler;
  /**
   * The environment of the client whose command runs now (a verb handed over by its CLI): an operation it opens
   * records it for its sessions. Null for the node's own work (ticks, sync), which opens nothing of a person's.
   */
  commandEnv: Record<string, string> | null;
};

export type ServedOptions = {
  paths: NodePaths;
  origin: string;
  log: Logger;
  /** A workspace's log grew by ops that came from elsewhere (synced in): announce it. */
  announce: (workspace: string) => void;
  /** Timers for the workspaces' Schedulers (default: the process's). */
  timers?: Timers;
  /** Opens and verifies received op texts: the node's own verification threads. */
  check: (raws: readonly string[]) => Promise<CheckedOp[]>;
  /** Counts the turns each workspace started and did not start, for /metrics. */
  counters?: NodeCounters;
};

/** The registry of served workspaces and their queues. */
export class Served {
  private readonly map = new Map<string, ServedWorkspace>();
  /** What each workspace's last tick warned of (see {@link tick}). */
  private readonly said = new Map<string, Set<string>>();
  /** Offers a workspace's new ops to the others served here (local delivery sets it). */
  deliver: (entry: ServedWorkspace) => void = () => undefined;

  constructor(private readonly opts: ServedOptions) {}

  get size(): number {
    return this.map.size;
  }

  get(id: string): ServedWorkspace | undefined {
    return this.map.get(id);
  }

  /** True while `entry` is the one served under its id (not stopped, not replaced). */
  current(entry: ServedWorkspace): boolean {
    return this.map.get(entry.workspace.id) === entry;
  }

  all(): ServedWorkspace[] {
    return [...this.map.values()];
  }

  ids(): IterableIterator<string> {
    return this.map.keys();
  }

  /** Serves the workspace at `root` (or returns it, served already): store opened, working copy recovered, sync started. */
  async serve(root: string): Promise<ServedWorkspace> {
    const { paths, origin, log } = this.opts;
    const workspace = findWorkspace(root, {});
    const existing = this.map.get(workspace.id);
    if (existing) return existing;
    const store = await openStore(workspace.paths.store, { waitMs: 30_000, purpose: NODE_PURPOSE, home: paths.home, tiering: true });
    // A move of the working copy that a crash interrupted is finished or rolled back before anything else.
    await recover(workspace.paths.root, { journalDir: workspace.paths.nxs }).catch((err: unknown) => log.error('recovering the working copy failed', { workspace: workspace.id, err }));
    const ticks = new TickScheduler(
      () => this.tick(workspace.id),
      (err) => log.error('lease tick failed', { workspace: workspace.id, err }),
      this.opts.timers,
    );
    const current: { env: Record<string, string> | null } = { env: null };
    const host = hostFor(
      realDeps(workspace, store.db, {
        origin,
        baseEnv: () => current.env ?? baseEnvironment(process.env),
        scheduleTick: (at) => ticks.schedule(at),
        peerRoot: (id) => readRegistry(paths).workspaces.find((w) => w.id === id)?.root ?? null,
        ...(this.opts.counters ? { observe: (o) => this.opts.counters!.observe(workspace.id, o) } : {}),
      }),
    );
    const entry: ServedWorkspace = {
      workspace,
      store,
      host,
      queue: Promise.resolve(),
      sync: null,
      ticks,
      get commandEnv() {
        return current.env;
      },
      set commandEnv(env) {
        current.env = env;
      },
    };
    this.map.set(workspace.id, entry);
    log.info(`serving ${workspace.id} (${workspace.name}) at ${workspace.paths.root}`, { workspace: workspace.id });
    await this.startSync(entry);
    for (const other of this.map.values()) this.deliver(other);
    return entry;
  }

  /** Stops serving `id` (nothing when it is not served): its clock, sync and queue end, its store closes. */
  async unserve(id: string): Promise<void> {
    const entry = this.map.get(id);
    if (!entry) return;
    this.map.delete(id);
    this.said.delete(id);
    this.opts.counters?.forget(id);
    await this.stop(entry);
  }

  /** Stops serving every workspace; a store that fails to close is left to the process's end. */
  async close(): Promise<void> {
    for (const entry of this.map.values()) await this.stop(entry, true);
  }

  private async stop(entry: ServedWorkspace, quiet = false): Promise<void> {
    entry.ticks.close();
    await entry.sync?.stop();
    await entry.queue;
    await (quiet ? entry.store.close().catch(() => undefined) : entry.store.close());
  }

  /** After work in a workspace's queue, or ops that reached it: its sync pushes, its new ops are delivered. */
  changed(entry: ServedWorkspace): void {
    entry.sync?.kick();
    this.deliver(entry);
  }

  /** Runs store work in the workspace's queue, after whatever command is in progress. */
  inQueue<T>(entry: ServedWorkspace, fn: () => Promise<T>): Promise<T> {
    const run = entry.queue.then(fn);
    entry.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Runs the clock's work in a workspace (its lease, dead turns, lapsed rounds). Nobody reads a tick's receipt,
   * so its warnings go to the log: each once, while the ticks before kept saying it (a park refused every tick
   * is one line), and again when it comes back after a tick without it.
   */
  async tick(id: string): Promise<{ settled: number }> {
    const out = await this.withHost(id, (h) => h.run('tick', {}));
    const said = (out.warnings ?? []).map((w) => ({ w, key: `${w.class}\0${w.thread ?? ''}\0${w.message}` }));
    const before = this.said.get(id);
    for (const { w, key } of said) {
      if (before?.has(key)) continue;
      this.opts.log.warn(w.message, { workspace: id, class: w.class, ...(w.reason ? { reason: w.reason } : {}), ...(w.thread ? { thread: w.thread } : {}) });
    }
    if (said.length > 0) this.said.set(id, new Set(said.map((x) => x.key)));
    else this.said.delete(id);
    return out;
  }

  /** Runs `fn` with the workspace's host in its queue; NOT_SERVED when this node does not serve it. */
  withHost<T>(id: string, fn: (host: Host) => Promise<T>, env: Record<string, string> | null = null): Promise<T> {
    const entry = this.map.get(id);
    if (!entry) return Promise.reject(new NexusError('NOT_SERVED', `this node does not serve workspace ${id}`));
    return this.inQueue(entry, async () => {
      entry.commandEnv = env === null ? null : baseEnvironment(env);
      try {
        return await fn(entry.host);
      } finally {
        entry.commandEnv = null;
      }
    }).finally(() => this.changed(entry));
  }

  /** (Re)starts the workspace's sync client from its binding; none when it is not bound. */
  async startSync(entry: ServedWorkspace): Promise<void> {
    const { origin, log, announce } = this.opts;
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
      run: (fn) => this.inQueue(entry, () => fn(entry.store.db)),
      // Foreign ops just stored: commissions addressed here are admitted, answers wake requesters.
      onIngested: (ops) => {
        announce(entry.workspace.id);
        void this.inQueue(entry, () => entry.host.engine.react(ops))
          .then(() => this.changed(entry))
          .catch((err: unknown) => log.error('reacting to synced ops failed', { workspace: entry.workspace.id, err }));
      },
      log: log.child({ component: 'sync', workspace: entry.workspace.id, stream: binding.stream }),
      check: this.opts.check,
      // Joining a long stream, the ops of the workspaces trusted here come first, with this one's.
      trusted: () => listTrust(entry.workspace.paths).map((t) => t.workspace),
    });
    await entry.sync.start();
    log.info(`syncs with stream ${binding.stream} at ${binding.relay}`, { workspace: entry.workspace.id, stream: binding.stream, relay: binding.relay });
  }
}
