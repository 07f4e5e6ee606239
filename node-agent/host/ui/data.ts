// What the dashboard shows, read through the node's own command path (the commands of
// protocol/commands.ts, exactly as `nxc ... --json` reads them), so the page and the CLI never disagree.
import type { CommandInput, CommandName, CommandOutput, NodeInfo, RunOptions, SyncReport } from '../../../protocol/commands.js';
import { isNexusError, userMessage } from '../../../protocol/errors.js';
import type { StatusReport, StatusRow, ThreadView } from '../../../protocol/receipts.js';

/** What the dashboard needs from the node that serves it. */
export type UiBackend = {
  /** Runs a command exactly as the node's RPC route runs it; `workspace` is null for node commands. `opts.request`: its idempotency key. */
  run: <K extends CommandName>(name: K, workspace: string | null, input: CommandInput<K>, opts?: RunOptions) => Promise<CommandOutput<K>>;
  /** Subscribes to "ops appended" (a command ran, or a synced page was taken in); returns the unsubscribe. */
  onAppended: (listener: (workspace: string) => void) => () => void;
  /** The workspaces registered with this node (its registry file), served or not. */
  registered: () => Array<{ id: string; root: string }>;
};

export type Failure = { code: string; message: string };

export type WorkspaceSnapshot = {
  id: string;
  name: string;
  root: string;
  status: StatusReport | null;
  sync: SyncReport | null;
  /** Set when reading this workspace failed: shown, never hidden. */
  error: Failure | null;
};

export type Snapshot = {
  node: NodeInfo;
  workspaces: WorkspaceSnapshot[];
  /** Registered with the node but not served by it (its store could not be opened, say). */
  unserved: Array<{ id: string; root: string }>;
  /** Thread views of the rows that may need a person, by `${workspace}/${thread}`. */
  views: Map<string, ThreadView>;
  /** Rows that may need a person beyond the newest DETAIL_LIMIT: counted, not read. */
  undetailed: number;
};

/**
 * How many rows that may need a person are read in full (newest first) for one page. Each is a
 * threads.show the first time; a node with thousands of finished operations still answers its
 * first page in a moment, and says how many older ones it did not look at.
 */
export const DETAIL_LIMIT = 100;

export function failureOf(err: unknown): Failure {
  if (isNexusError(err)) return { code: err.code, message: err.message };
  return { code: 'INTERNAL', message: userMessage(err) };
}

/**
 * A row that may be waiting on a person of `workspace`: the finished root a person opened, or a root
 * handed back, until its opener marks it read. Another workspace's operation, carried here by sync (or
 * opened by a workspace nobody here trusts), awaits that workspace's person.
 */
export function mayNeedPerson(row: StatusRow, workspace: string): boolean {
  if (row.awaiting_workspace !== null && row.awaiting_workspace !== workspace) return false;
  // Its opener has read it (nxc done), or it is not this workspace's person's at all: waits on nobody here.
  if (row.done || row.opened_in !== workspace) return false;
  return row.awaiting_human || (row.escalated && row.parent === null);
}

/**
 * Thread views, remembered by thread until its message count or update time moves, so a page
 * reload reads only the threads that changed.
 */
export class ViewCache {
  private readonly views = new Map<string, { stamp: string; view: ThreadView }>();
  constructor(private readonly max = 5_000) {}

  async get(backend: UiBackend, workspace: string, row: StatusRow): Promise<ThreadView> {
    const key = `${workspace}/${row.thread}`;
    const stamp = `${row.messages}|${row.updated}|${row.state}|${row.escalated}|${row.done}`;
    const hit = this.views.get(key);
    if (hit && hit.stamp === stamp) return hit.view;
    const view = await backend.run('threads.show', workspace, { thread: row.thread });
    this.views.delete(key);
    this.views.set(key, { stamp, view });
    // Oldest first out: a Map iterates in insertion order.
    while (this.views.size > this.max) this.views.delete(this.views.keys().next().value!);
    return view;
  }
}

/**
 * Status reports, kept per workspace until that workspace announces appended ops: a page that
 * refreshes because one workspace moved re-reads that one only. A report read while ops were
 * being announced is not kept (its generation is already old).
 */
export class StatusCache {
  private readonly generation = new Map<string, number>();
  private readonly reports = new Map<string, { generation: number; report: StatusReport }>();
  private readonly unsubscribe: () => void;

  constructor(backend: UiBackend) {
    this.unsubscribe = backend.onAppended((workspace) => {
      this.generation.set(workspace, (this.generation.get(workspace) ?? 0) + 1);
      this.reports.delete(workspace);
    });
  }

  async get(backend: UiBackend, workspace: string): Promise<StatusReport> {
    const generation = this.generation.get(workspace) ?? 0;
    const hit = this.reports.get(workspace);
    if (hit && hit.generation === generation) return hit.report;
    const report = await backend.run('status', workspace, { all: true });
    if ((this.generation.get(workspace) ?? 0) === generation) this.reports.set(workspace, { generation, report });
    return report;
  }

  close(): void {
    this.unsubscribe();
  }
}

export type Caches = { views: ViewCache; status: StatusCache };

/** Reads every served workspace: status (all operations) and sync, plus the views of rows that may need a person. */
export async function snapshot(backend: UiBackend, cache: Caches): Promise<Snapshot> {
  const node = await backend.run('node.info', null, {});
  const workspaces = await Promise.all(
    node.workspaces.map(async (w): Promise<WorkspaceSnapshot> => {
      const out: WorkspaceSnapshot = { id: w.id, name: w.name, root: w.root, status: null, sync: null, error: null };
      try {
        // Sync is read afresh every time: a relay going away appends nothing.
        [out.status, out.sync] = await Promise.all([cache.status.get(backend, w.id), backend.run('sync.status', w.id, {})]);
      } catch (err) {
        out.error = failureOf(err);
      }
      return out;
    }),
  );
  const candidates: Array<{ workspace: string; row: StatusRow }> = [];
  for (const w of workspaces) {
    for (const op of w.status?.operations ?? []) for (const row of op.threads) if (mayNeedPerson(row, w.id)) candidates.push({ workspace: w.id, row });
  }
  candidates.sort((a, b) => b.row.updated.localeCompare(a.row.updated));
  const views = new Map<string, ThreadView>();
  for (const { workspace, row } of candidates.slice(0, DETAIL_LIMIT)) {
    try {
      views.set(`${workspace}/${row.thread}`, await cache.views.get(backend, workspace, row));
    } catch {
      /* a thread that cannot be read is left out of Needs you; Operations still lists it */
    }
  }
  const served = new Set(node.workspaces.map((w) => w.id));
  const unserved = backend.registered().filter((r) => !served.has(r.id));
  return { node, workspaces, unserved, views, undetailed: Math.max(0, candidates.length - DETAIL_LIMIT) };
}
