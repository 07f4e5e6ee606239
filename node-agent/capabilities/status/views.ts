// Reading the truth: `nxc status` grouped by operation, and one thread with its messages, each as the chat
// engine's fold, the working-copy lease and the channel rounds tell it together.
import { and, asc, eq, inArray, or } from 'drizzle-orm';
import { NexusError } from '../../../protocol/errors.js';
import { writtenBy, type StatusReport, type StatusRow, type ThreadView } from '../../../protocol/receipts.js';
import { readLastRun } from '../../adapters/sessions/index.js';
import { tables } from '../../adapters/store/index.js';
import { declaredSandbox, declaredSpendRules } from '../../adapters/workspace/index.js';
import { utcDay, type OperationUsage, type SpendToday } from '../../../protocol/usage.js';
import type { EngineDeps } from '../context.js';
import { roundsOfOperations, withRound, withRounds } from '../channels/index.js';
import { leaseStatus } from '../leases/index.js';
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
  const q = deps.db.select().from(tables.operations);
  // An operation the working-copy lease names is listed even when every thread is answered: one held for a
  // hand-back, or parked, is exactly what a person must see.
  const named = lease.operations.length > 0 ? inArray(tables.operations.id, lease.operations) : undefined;
  const open = named === undefined ? eq(tables.operations.finished, false) : or(eq(tables.operations.finished, false), named);
  // An operation with no thread (only inert ops, or kinds newer than this node: anyone on the stream
  // can name any operation) has nothing to show and is left out, --all included.
  const shown = eq(tables.operations.shown, true);
  const rows = await q.where(opts.all ? shown : and(shown, open)).orderBy(asc(tables.operations.openedLamport));
  const wc = await deps.readWorkingCopy(deps.workspace.paths.root);
  const notes: string[] = [];
  if (wc === null) notes.push('this workspace is not a git repository, so no working copy is named in any handover');
  notes.push(...lease.notes);
  const boards = await roundsOfOperations(deps.db, rows.map((r) => r.id));
  // A state folded by older rules (a store from before an upgrade) is folded again, as loadOperation does.
  const states: OperationState[] = [];
  for (const state of await withParts(deps.db, rows)) states.push(state.v === FOLD_VERSION ? state : await loadOperation(deps.db, state.id));
  const operations = await Promise.all(
    rows.map(async (r, i) => {
      const op = withRounds(operationReport(states[i]!, r.finished, await budgetOf(deps, states[i]!), lease.of(r.id)), boards);
      return { ...op, threads: await Promise.all(op.threads.map((row) => withLastRun(deps, row))) };
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
    spend_today: await workspaceSpendToday(deps),
    notes,
  };
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
