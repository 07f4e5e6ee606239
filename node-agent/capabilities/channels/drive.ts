// Settling a round: what the engine does after every change to a round and on every tick. It asks the
// board (`decide`) what is due, writes it, and does it: lapses, reworks, the steps to start, and once
// the round is done its result in the round's thread and the requester woken at the depth it had.
import { randomBytes } from 'node:crypto';
import { and, eq, isNull } from 'drizzle-orm';
import type { Warning, Woke } from '../../../protocol/receipts.js';
import type { WorkingCopy } from '../../../protocol/working-copy.js';
import { tables } from '../../adapters/store/index.js';
import { appendOps, type Commit, type Exec, type OpDraft, type Tx } from '../../kernel/index.js';
import { emptyPlan, isBudgetRefusal, loadOperation, messageDraft, planRequesterWake, type Intent, type Outcome, type Plan, type ThreadsContext } from '../threads/index.js';
import { stepName, stepOfSession, type Board, type StepRecord } from './board.js';
import { decide, type Completion } from './decide.js';
import { loadRound } from './projection.js';
import { channelAuthor, roundDraft, roundTexts } from './records.js';
import { renderResult, type RandomSource } from './render.js';
import { startStep, type StartContext, type StepGate } from './start.js';
import { resultEffect, roundCompleted } from './verdicts.js';

/** What settling rounds did, for the receipt of the command that caused it. */
export type RoundEffects = { warnings: Warning[]; woke: Woke[] };

export type DriveOptions = { random?: RandomSource; gate?: StepGate | null };

/** A round never needs more passes of the loop than it has steps; this only stops a bug from spinning. */
const MAX_SETTLE_PASSES = 200;

type Settled = {
  plan: Plan;
  /** What the transaction leaves for after it: the policies (the lease) carry the steps' starts out, and their warnings come back in its outcome. */
  commit: Commit<Outcome>;
  warnings: Warning[];
  progressed: boolean;
  steps: Map<string, number>;
  requester: string | null;
  stop: StepRecord[];
};

export function driverOf(c: ThreadsContext, opts: DriveOptions = {}) {
  const { deps, writer } = c;
  const { db, workspace } = deps;
  const random = opts.random ?? ((n: number) => randomBytes(n));

  /**
   * One transaction's worth: decide, write what was decided, plan the turns it starts. Null: not ours
   * to settle. `copy` reads the working copy once per settle (briefs and results record it).
   */
  async function settleOnce(tx: Tx, round: string, copy: () => Promise<WorkingCopy | null>): Promise<Settled | null> {
    const row = await loadRound(tx, round);
    if (row === null || row.board.workspace !== workspace.id) return null;
    const now = deps.now();
    const d = decide(row.board, now);
    const drafts: OpDraft[] = d.ops.map((op) => roundDraft(row.operation, round, op));
    const out: Settled = { plan: emptyPlan(), commit: c.engine.commit(), warnings: [...d.warnings], progressed: d.ops.length > 0, steps: new Map(), requester: row.board.requester.session, stop: d.stop };
    if (d.complete === null && d.start.length === 0) {
      await appendOps(tx, writer, drafts);
      out.commit.outcome.warnings.push(...out.warnings);
      return out;
    }
    const state = await loadOperation(tx, row.operation);
    const wc = await copy();
    const texts = await roundTexts(tx, d.board);
    const intents: Intent[] = [];
    if (d.complete !== null) {
      await complete(tx, row.operation, d.board, d.complete, { drafts, plan: out.plan, texts, wc, intents });
      out.progressed = true;
    } else {
      const ctx: StartContext = { deps, tx, operation: row.operation, state, now, wc, random, texts, drafts, plan: out.plan, warnings: out.warnings, gate: opts.gate ?? null, intents };
      for (const s of d.start) {
        const started = await startStep(ctx, d.board, s);
        if (started.kind !== 'held_again') out.progressed = true;
        if (started.kind === 'started' && started.session !== null) out.steps.set(started.session, s.step);
      }
    }
    // The turns planned (a step's first turn, the requester's wake) come after the ops they belong to. The lease
    // hears of each step started and of the result, and keeps back a turn that must wait for the working copy.
    out.plan.drafts.unshift(...drafts);
    // The decision's warnings first, then the plan's (the append adds those).
    out.commit.outcome.warnings.push(...out.warnings);
    await c.engine.append(tx, out.commit, { cause: 'round', ...out.plan, intents, state });
    return out;

    async function complete(
      tx2: Exec,
      operation: string,
      b: Board,
      c: Completion,
      io: { drafts: OpDraft[]; plan: Plan; texts: Map<string, string>; wc: WorkingCopy | null; intents: Intent[] },
    ): Promise<void> {
      const result = renderResult(b, c, io.texts, random);
      const message = messageDraft(operation, round, channelAuthor(workspace.short, b), result.text, resultEffect(c), io.wc);
      const id = (message.body as { message: string }).message;
      io.drafts.push(message, roundDraft(operation, round, roundCompleted(b, c, { message: id, boundary: result.boundary })));
      const thread = state.threads[round];
      const before = io.plan.turns.length;
      if (thread !== undefined) await planRequesterWake(deps, tx2, state, thread, io.plan);
      // The round's thread is discharged: the lease stops counting it as owed, and the requester's wake goes up unheld.
      const outcome = resultEffect(c) === 'escalate' ? 'escalate' : 'answer';
      io.intents.push({ type: 'reply', operation, thread: round, by: channelAuthor(workspace.short, b), outcome, wake: io.plan.turns[before] ?? null });
    }
  }

  /** A lapsed step's session that still runs is asked to stop: the round went on without it. */
  async function stopLapsed(records: StepRecord[]): Promise<void> {
    if (deps.stop === undefined) return;
    for (const r of records) {
      if (r.session === null) continue;
      const live = await db
        .select({ pid: tables.sessionProcs.sidecarPid })
        .from(tables.sessionProcs)
        .where(and(eq(tables.sessionProcs.session, r.session), isNull(tables.sessionProcs.endedAt)));
      for (const p of live) if (p.pid !== null) deps.stop(p.pid);
    }
  }

  /**
   * Starts what the settled transaction planned. A step whose process did not start is skipped for
   * good (its reason is the start failure); a requester that could not be started was not told.
   */
  async function afterCommit(round: string, s: Settled, out: RoundEffects): Promise<void> {
    // The policies' effects (the lease starts what it lets start), then failed starts recorded.
    const done = await c.engine.settle(s.commit);
    const warnings = done.warnings;
    out.woke.push(...done.woke);
    await stopLapsed(s.stop);
    // A step the operation budget refused will never start either: the round goes on without it.
    const failed = warnings.filter((w) => (w.reason === 'start_failed' || isBudgetRefusal(w.reason)) && w.session !== undefined && s.steps.has(w.session));
    if (failed.length > 0) {
      await db.transaction(async (tx) => {
        const row = await loadRound(tx, round);
        if (row === null) return;
        for (const w of failed) {
          const r = stepOfSession(row.board, w.session!);
          if (r === null) continue;
          await appendOps(tx, writer, [roundDraft(row.operation, round, { kind: 'step.skipped', body: { round, pass: r.pass, step: r.step, reason: w.reason!, message: w.message } })]);
          Object.assign(w, { round, step: stepName(row.board, r.step) });
        }
      });
    }
    for (const w of warnings) {
      // The requester is the one waiting for this answer: anything that kept it from starting means it was not told.
      if (s.requester !== null && w.session === s.requester && w.class === 'step_skipped') w.class = 'requester_not_woken';
    }
    out.warnings.push(...warnings);
  }

  /**
   * Settles each round until its board asks for nothing more. `wc`: the working copy as the command
   * that caused this read it (read here, once, when not given and needed).
   */
  async function settle(rounds: Iterable<string>, wc?: WorkingCopy | null): Promise<RoundEffects> {
    const out: RoundEffects = { warnings: [], woke: [] };
    let known = wc;
    const copy = async () => (known !== undefined ? known : (known = (await c.engine.workingCopy()).wc));
    for (const round of new Set(rounds)) {
      for (let i = 0; i < MAX_SETTLE_PASSES; i++) {
        const s = await db.transaction((tx) => settleOnce(tx, round, copy));
        if (s === null) break;
        await afterCommit(round, s, out);
        if (!s.progressed) break;
      }
    }
    return out;
  }

  return { settle };
}

export type Driver = ReturnType<typeof driverOf>;
