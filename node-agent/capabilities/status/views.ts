// Reading the truth: `nxc status` grouped by operation, and one thread with its messages, each as the chat
// engine's fold, the working-copy lease and the channel rounds tell it together.
import { and, asc, desc, eq, inArray, isNull, or, sql } from 'drizzle-orm';
import { NexusError } from '../../../protocol/errors.js';
import { writtenBy, type StatusReport, type StatusRow, type ThreadView } from '../../../protocol/receipts.js';
import { readLastRun } from '../../adapters/sessions/index.js';
import { tables } from '../../adapters/store/index.js';
import { opsOfThreads } from '../../kernel/index.js';
import { declaredSandbox, declaredSpendRules } from '../../adapters/workspace/index.js';
import { utcDay, type OperationUsage, type SpendToday } from '../../../protocol/usage.js';
import type { EngineDeps } from '../context.js';
import { roundsOfOperations, withRound, withRounds } from '../channels/index.js';
import { leaseStatus } from '../leases/index.js';
import { listTrust } from '../trust/index.js';
import {
  FOLD_VERSION,
  isFinished,
  loadOperation,
  budgetOf,
  operationOfThread,
  operationReport,
  operationUsage,
  spendToday,
  statusRow,
  turnsUsed,
  threadOps,
  withParts,
  type OperationState,
} from '../threads/index.js';

export async function statusReport(deps: EngineDeps, opts: { all: boolean }): Promise<StatusReport> {
  const lease = await leaseStatus(deps, deps.db);
  const notes: string[] = [];
  const trusted = trustedHere(deps, notes);
  // An operation the working-copy lease names is listed even when every thread is answered: one held for a
  // hand-back, or parked, is exactly what a person must see.
  const named = lease.operations.length > 0 ? inArray(tables.operations.id, lease.operations) : undefined;
  const open = named === undefined ? eq(tables.operations.finished, false) : or(eq(tables.operations.finished, false), named);
  // An operation with no thread (only inert ops, or kinds newer than this node: anyone on the stream
  // can name any operation) has nothing to show and is left out, --all included.
  const shown = eq(tables.operations.shown, true);
  const where = opts.all ? shown : and(shown, open);
  const candidates = await deps.db.select({ id: tables.operations.id }).from(tables.operations).where(where).orderBy(asc(tables.operations.openedLamport));
  // Who opened each: a workspace nobody here trusts can open any number of operations on a shared stream, and
  // the default listing must not read (or print) each of them.
  const openers = await rootOpeners(deps, candidates.map((r) => r.id));
  const foreign = candidates.filter((r) => !trusted.has(openers.get(r.id) ?? deps.workspace.id));
  const untrusted = { operations: 0, workspaces: [...new Set(foreign.map((r) => openers.get(r.id)!))].sort() };
  let listed = candidates.map((r) => r.id);
  if (!opts.all) {
    const hidden = new Set(foreign.map((r) => r.id));
    listed = listed.filter((id) => !hidden.has(id));
    untrusted.operations = hidden.size;
  } else untrusted.workspaces = [];
  const rows = await readRows(deps, listed);
  const wc = await deps.readWorkingCopy(deps.workspace.paths.root);
  if (wc === null) notes.push('no git repository of yours holds this workspace, so no working copy is named in any handover');
  notes.push(...lease.notes);
  const boards = await roundsOfOperations(deps.db, rows.map((r) => r.id));
  // A state folded by older rules (a store from before an upgrade) is folded again, as loadOperation does.
  const states: OperationState[] = [];
  for (const state of await withParts(deps.db, rows)) states.push(state.v === FOLD_VERSION ? state : await loadOperation(deps.db, state.id));
  const operations = await Promise.all(
    rows.map(async (r, i) => {
      const op = withRounds(operationReport(states[i]!, r.finished, await budgetOf(deps, states[i]!), lease.of(r.id)), boards);
      const threads = await Promise.all(op.threads.map((row) => withLastRun(deps, { ...row, untrusted: !trusted.has(row.opened_in) })));
      return { ...op, untrusted: !trusted.has(openers.get(r.id) ?? deps.workspace.id), threads };
    }),
  );
  if (sandboxOff(deps)) {
    notes.push('this workspace declares "sandbox": "off" in .nxs/config.json: its sessions run with nothing around them, reading and writing whatever you can');
    // Said on every session of this workspace, where anyone reading a row looks.
    for (const op of operations) for (const row of op.threads) if (row.session !== null && row.session.handle.startsWith(`${deps.workspace.short}/`)) row.session.sandbox = 'off';
  }
  return {
    workspace: { id: deps.workspace.id, name: deps.workspace.name },
    operations,
    worker_names_a_working_copy: wc !== null,
    // Sessions run as local child processes here, so their liveness is answerable unless the host says otherwise.
    worker_answers_liveness: lease.answersLiveness,
    ...(opts.all ? { finished_awaiting: [] } : await finishedAwaiting(deps, new Set(listed)).then((f) => ({ finished_awaiting: f.rows, ...(f.more ? { finished_awaiting_more: true } : {}) }))),
    untrusted,
    spend_today: await workspaceSpendToday(deps),
    notes,
  };
}

/** The operations rows of `ids`, in the order given. */
async function readRows(deps: EngineDeps, ids: readonly string[]) {
  const out: Array<typeof tables.operations.$inferSelect> = [];
  for (let i = 0; i < ids.length; i += 1000) out.push(...(await deps.db.select().from(tables.operations).where(inArray(tables.operations.id, ids.slice(i, i + 1000)))));
  const at = new Map(ids.map((id, i) => [id, i]));
  return out.sort((a, b) => at.get(a.id)! - at.get(b.id)!);
}

/**
 * The workspace that opened each operation's first thread, read from the log's openings (one index read per
 * 1,000 operations, no fold). A first thread opened twice is contested; the earliest opening names it, as in the fold.
 */
async function rootOpeners(deps: EngineDeps, ids: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, { workspace: string; lamport: number }>();
  const o = tables.ops;
  for (const r of await opsOfThreads(deps.db, ids, and(eq(o.kind, 'thread.opened'), eq(o.operation, o.thread), isNull(o.inert))!)) {
    const known = out.get(r.thread!);
    if (known === undefined || r.lamport < known.lamport || (r.lamport === known.lamport && r.workspace < known.workspace)) out.set(r.thread!, r);
  }
  return new Map([...out].map(([id, r]) => [id, r.workspace]));
}

/** This workspace and every workspace its trust file names. A trust file that cannot be read trusts nobody else, and says so. */
function trustedHere(deps: EngineDeps, notes: string[]): Set<string> {
  const ids = new Set<string>([deps.workspace.id]);
  try {
    for (const e of listTrust(deps.workspace.paths)) ids.add(e.workspace);
  } catch (err) {
    notes.push(`the trust file could not be read, so every other workspace counts as untrusted here: ${err instanceof Error ? err.message : String(err)}`);
  }
  return ids;
}

/**
 * Finished operations whose first thread, opened by a person of this workspace, awaits that person (answered,
 * and not marked read since), other than those `listed`: read from the stored first threads alone.
 */
/**
 * The summary line looks at the newest finished operations only (this many), newest first, and lists at most
 * FINISHED_AWAITING_SHOWN of those awaiting a person: reading every finished operation would make status
 * grow with history. `nxc status --all` lists them all.
 */
export const FINISHED_AWAITING_SCAN = 15;
export const FINISHED_AWAITING_SHOWN = 10;

async function finishedAwaiting(deps: EngineDeps, listed: ReadonlySet<string>): Promise<{ rows: StatusReport['finished_awaiting']; more: boolean }> {
  const newest = await deps.db
    .select({ id: tables.operations.id })
    .from(tables.operations)
    .where(and(eq(tables.operations.shown, true), eq(tables.operations.finished, true)))
    .orderBy(desc(tables.operations.openedLamport))
    .limit(FINISHED_AWAITING_SCAN);
  const ids = newest.map((r) => r.id).filter((id) => !listed.has(id));
  if (ids.length === 0) return { rows: [], more: false };
  // Each operation's first thread: the part keyed by the operation's own id.
  const roots = await deps.db
    .select({ operation: tables.operationParts.operation, value: tables.operationParts.value })
    .from(tables.operationParts)
    .where(and(inArray(tables.operationParts.operation, ids), eq(tables.operationParts.kind, 'thread'), eq(tables.operationParts.key, tables.operationParts.operation)));
  const order = new Map(ids.map((id, i) => [id, i]));
  type Root = { workspace?: string; state?: string; subject?: string | null; opener?: { handle?: string; session?: string | null }; done_at?: number | null; answered_at?: number | null };
  const found = roots
    .flatMap(({ operation, value }) => {
      const t = value as Root;
      const awaits = t.workspace === deps.workspace.id && (t.opener?.session ?? null) === null && t.state === 'answered' && (t.done_at ?? 0) <= (t.answered_at ?? 0);
      return awaits ? [{ operation, subject: t.subject ?? null, opener: t.opener?.handle ?? '' }] : [];
    })
    .sort((a, b) => order.get(a.operation)! - order.get(b.operation)!);
  return { rows: found.slice(0, FINISHED_AWAITING_SHOWN), more: found.length > FINISHED_AWAITING_SHOWN };
}

export async function threadView(deps: EngineDeps, thread: string): Promise<ThreadView> {
  const opId = await operationOfThread(deps.db, thread);
  if (opId === null) throw new NexusError('UNKNOWN_THREAD', `no thread ${thread} in this workspace`);
  const state = await loadOperation(deps.db, opId);
  const finished = isFinished(state);
  const t = state.threads[thread]!;
  // Inert messages (posted by a workspace with no say in this thread) are not the thread's: sync status counts them.
  const ops = await threadOps(deps.db, thread, { effective: true });
  const turns = ops.flatMap((op) =>
    op.kind === 'session.turn_ended' && op.session !== null && op.session === t.session
      ? [{ session: op.session, turn: op.body.turn, outcome: op.body.outcome, ts: op.ts, usage: op.body.usage ?? null }]
      : [],
  );
  const messages = ops.flatMap((op) =>
    op.kind === 'message.posted'
      ? [
          {
            message: op.body.message,
            author: op.body.author.handle,
            session: op.body.author.session,
            effect: op.body.effect,
            substituted: op.body.substituted,
            written_by: writtenBy(op.body),
            ts: op.ts,
            text: op.body.text,
            refs: op.body.refs,
          },
        ]
      : [],
  );
  const row = withRound(statusRow(state, t, finished), await roundsOfOperations(deps.db, [opId]));
  return { thread: await withLastRun(deps, row), operation: opId, messages, turns };
}

/** A row with its session's last turn as the runtime recorded it, so a person sees how the run ended without opening files. */
async function withLastRun(deps: EngineDeps, row: StatusRow): Promise<StatusRow> {
  if (row.session === null) return row;
  const last_run = await readLastRun(deps.workspace.paths.sessions, row.session.id, row.session.turn);
  return { ...row, session: { ...row.session, last_run } };
}

/** What this workspace's own turns spent in the current UTC day, against its daily ceiling. */
export async function workspaceSpendToday(deps: EngineDeps): Promise<SpendToday> {
  const now = deps.now();
  const { day, resetsAt } = utcDay(now);
  const { daily } = declaredSpendRules(deps.workspace.paths);
  const spent = await spendToday(deps.db, deps.workspace.id, now);
  return { day, tokens: spent.tokens, cost: spent.cost, resets_at: resetsAt, budget: { max_tokens: daily?.max_tokens ?? null, max_cost: daily?.max_cost ?? null } };
}

/**
 * The spend figures a metrics exporter reads: each open operation's tokens and cost against its budget
 * (finished ones too with `all`), and the workspace's spend today. No I/O beyond the store and the config.
 */
export async function spendFigures(deps: EngineDeps, opts: { all?: boolean } = {}): Promise<{
  workspace: string;
  today: SpendToday;
  operations: Array<{ operation: string; finished: boolean; turns: number; usage: OperationUsage }>;
}> {
  const rows = await deps.db.select().from(tables.operations).where(opts.all === true ? eq(tables.operations.shown, true) : and(eq(tables.operations.shown, true), eq(tables.operations.finished, false)));
  const operations = [];
  for (const part of await withParts(deps.db, rows)) {
    const state = part.v === FOLD_VERSION ? part : await loadOperation(deps.db, part.id);
    operations.push({ operation: state.id, finished: isFinished(state), turns: turnsUsed(state), usage: operationUsage(state, await budgetOf(deps, state)) });
  }
  return { workspace: deps.workspace.id, today: await workspaceSpendToday(deps), operations };
}

/** Whether the workspace declares its sessions unsandboxed; a config that cannot be read says nothing here. */
function sandboxOff(deps: EngineDeps): boolean {
  try {
    return declaredSandbox(deps.workspace.paths) === 'off';
  } catch {
    return false;
  }
}
