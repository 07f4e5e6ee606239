// What every command of the chat engine shares: the caller's identity, the kernel it appends through (every
// batch passes the capabilities' policies), the working-copy record, and recording turns whose start failed.
import { NexusError } from '../../../protocol/errors.js';
import type { Author, Op } from '../../../protocol/ops.js';
import type { Warning } from '../../../protocol/receipts.js';
import type { CallerClaim } from '../../../protocol/commands.js';
import { describeWorkingCopy } from '../../adapters/git/index.js';
import { readSpec, sessionDir } from '../../adapters/sessions/index.js';
import { appendOps, type Author as Writer, type Commit, type Exec, type Tx } from '../../kernel/index.js';
import type { EngineDeps } from '../context.js';
import type { Batch, Intent, KernelContext, Outcome } from './batch.js';
import { callerDepth } from './depth.js';
import { loadOperation, operationOfSession, operationOfThread } from './operations.js';
import { spendOf, turnsUsed, type OperationState, type SessionState, type ThreadState } from './fold.js';
import { BUDGET_REASON, budgetHandBack, budgetOf, exhaustedBudget, exhaustedDaily, isBudgetRefusal, operationBudget, spendToday } from './brakes.js';
import { declaredSpendRules } from '../../adapters/workspace/index.js';
import { NO_SPEND } from '../../../protocol/usage.js';
import { emptyPlan, messageDraft, recordSenderEnv } from './turns.js';

/** Messages above this size are refused: a message is a note, not a file transfer. */
export const MAX_MESSAGE_BYTES = 256 * 1024;

export type Caller = {
  handle: string;
  session: SessionState | null;
  operation: OperationState | null;
  depth: number;
  replyOnly: boolean;
};

export function checkText(text: string): string {
  if (text.trim().length === 0) throw new NexusError('EMPTY_MESSAGE', 'the message is empty');
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_MESSAGE_BYTES) {
    throw new NexusError('MESSAGE_TOO_LARGE', `the message is ${bytes} bytes; the limit is ${MAX_MESSAGE_BYTES}`);
  }
  return text;
}

export async function resolveCaller(deps: EngineDeps, db: Exec, claim: CallerClaim): Promise<Caller> {
  if (claim.session === null) {
    return { handle: claim.actor, session: null, operation: null, depth: callerDepth(null, claim.hop), replyOnly: false };
  }
  const opId = await operationOfSession(db, claim.session);
  if (opId === null) {
    throw new NexusError('UNKNOWN_SESSION', `NXC_SESSION=${claim.session} is not a session of this workspace`);
  }
  const operation = await loadOperation(db, opId);
  const session = operation.sessions[claim.session];
  if (!session) throw new NexusError('UNKNOWN_SESSION', `session ${claim.session} is not in its operation's fold`);
  const spec = readSpec(sessionDir(deps.workspace.paths.sessions, session.id));
  return {
    handle: session.handle,
    session,
    operation,
    depth: callerDepth(session.depth, claim.hop),
    replyOnly: spec?.reply_only ?? false,
  };
}

export function authorOf(caller: Caller): Author {
  return { handle: caller.handle, session: caller.session?.id ?? null };
}


/** The engine's shared state and helpers, built once per engine. */
export type EngineCore = {
  deps: EngineDeps;
  db: EngineDeps['db'];
  workspace: EngineDeps['workspace'];
  writer: Writer;
  workingCopy(): Promise<{ wc: Awaited<ReturnType<EngineDeps['readWorkingCopy']>>; note: string }>;
  recordStartFailures(warnings: Warning[]): Promise<void>;
  /** Settles turns whose supervisor died without reporting (set by the engine, which owns finishTurn). */
  reap(): Promise<number>;
  /** A commit for one transaction: what its batches leave for after it. */
  commit(): Commit<Outcome>;
  /** Appends a batch inside `tx` through every capability's append policies (the working-copy lease among them); gives the ops stored. */
  append(tx: Tx, commit: Commit<Outcome>, batch: Batch): Promise<Op[]>;
  /** After the transaction committed: the policies' effects, then every capability's reaction. */
  settle(commit: Commit<Outcome>): Promise<Outcome>;
};

export function createCore(ctx: KernelContext, reap: () => Promise<number>): EngineCore {
  const { deps, writer, kernel } = ctx;
  const { db, workspace } = deps;

  async function workingCopy() {
    const wc = await deps.readWorkingCopy(workspace.paths.root);
    return { wc, note: describeWorkingCopy(wc) };
  }

  const commit = () => kernel.commit();
  const append = async (tx: Tx, c: Commit<Outcome>, batch: Batch) => {
    // A new operation's sessions will start from its sender's environment, whoever's command starts them.
    recordSenderEnv(deps, batch.drafts);
    return kernel.append(tx, c, await withSpendOnAnswers(tx, batch));
  };

  /**
   * An answer or hand-back to a commission from another workspace carries what this operation has spent as
   * this workspace counts it, so the asker's total takes in the far side's turns even before their ends reach it.
   */
  async function withSpendOnAnswers(tx: Tx, batch: Batch): Promise<Batch> {
    let state: OperationState | null = null;
    let drafts: Batch['drafts'] | null = null;
    for (const [i, d] of batch.drafts.entries()) {
      if (d.kind !== 'message.posted' || (d.body.effect !== 'answer' && d.body.effect !== 'escalate') || d.thread === null) continue;
      if (state === null || state.id !== d.operation) state = batch.state?.id === d.operation ? batch.state : await loadOperation(tx, d.operation);
      const t = state.threads[d.thread];
      if (t === undefined || t.target.kind !== 'remote' || t.owner !== workspace.id) continue;
      drafts ??= [...batch.drafts];
      drafts[i] = { ...d, body: { ...d.body, usage: spendOf(state) } };
    }
    return drafts === null ? batch : { ...batch, drafts };
  }
  const settle = (c: Commit<Outcome>) => kernel.settle(c);

  /**
   * A turn whose start failed is over: record it, so the session is not taken for running. A turn a budget
   * refused means no turn will start there again (today, for the daily ceiling): the operation is handed back.
   */
  async function recordStartFailures(warnings: Warning[]): Promise<void> {
    await handBackExhausted(warnings);
    const failed = warnings.filter((w) => w.reason === 'start_failed' && w.session !== undefined);
    if (failed.length === 0) return;
    await db.transaction(async (tx) => {
      for (const w of failed) {
        const opId = await operationOfSession(tx, w.session!);
        if (opId === null) continue;
        const s = (await loadOperation(tx, opId)).sessions[w.session!];
        if (!s || !s.in_turn) continue;
        await appendOps(tx, writer, [
          {
            operation: opId,
            thread: s.thread,
            session: s.id,
            kind: 'session.turn_ended',
            body: { turn: s.turn, outcome: 'start_failed', exit_code: null, signal: null, timed_out: false },
          },
        ]);
      }
    });
  }

  /**
   * Every operation whose budget refused a turn is handed back: each thread a session of this workspace
   * still owes in it, deepest first and its root last, gets an escalation written in that session's name
   * naming the budget. No turn can start there any more, so nothing else would ever answer them; the
   * person who opened the operation finds its root handed back (awaiting them once nothing else is owed).
   */
  async function handBackExhausted(warnings: Warning[]): Promise<void> {
    const operations = new Set<string>();
    for (const w of warnings) {
      if (!isBudgetRefusal(w.reason) || w.thread === undefined) continue;
      const op = await operationOfThread(db, w.thread);
      if (op !== null) operations.add(op);
    }
    for (const opId of operations) {
      const c = commit();
      const wrote = await db.transaction(async (tx) => {
        const state = await loadOperation(tx, opId);
        const now = deps.now();
        const { daily } = declaredSpendRules(workspace.paths);
        const over = exhaustedBudget(state, await budgetOf(deps, state)) ?? exhaustedDaily(daily === null ? NO_SPEND : await spendToday(tx, workspace.id, now), daily, now);
        if (over === null) return false;
        const local = (t: ThreadState) => t.session !== null && state.sessions[t.session]?.handle.startsWith(`${workspace.short}/`) === true;
        const owed = Object.values(state.threads)
          .filter((t) => t.state === 'open' && local(t))
          .sort((a, b) => state.sessions[b.session!]!.depth - state.sessions[a.session!]!.depth);
        if (owed.length === 0) return false;
        const plan = emptyPlan();
        const intents: Intent[] = [];
        for (const t of owed) {
          const s = state.sessions[t.session!]!;
          const by = { handle: s.handle, session: s.id };
          plan.drafts.push(messageDraft(opId, t.id, by, budgetHandBack(opId, over.text.startsWith('this workspace') ? `is stopped: ${over.text}` : over.text), 'escalate', null, true));
          intents.push({ type: 'reply', operation: opId, thread: t.id, by, outcome: 'escalate', wake: null });
        }
        await append(tx, c, { cause: 'budget', ...plan, intents });
        return true;
      });
      if (!wrote) continue;
      warnings.push(...(await settle(c)).warnings);
    }
  }

  return { deps, db, workspace, writer, workingCopy, recordStartFailures, reap, commit, append, settle };
}
