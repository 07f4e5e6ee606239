// The round's decisions as values: what starts next, what lapsed at `now`, when the round is done.
import { MAX_ROUND_CONCURRENCY } from '../../../protocol/channel.js';
import { windowText, type ChannelOpPayload, type CompletionReason } from '../../../protocol/round.js';
import type { Warning } from '../../../protocol/receipts.js';
import {
  allRecords,
  applyBoardOp,
  currentPass,
  escalates,
  inFlight,
  isSettled,
  ownerIndex,
  ownerRecord,
  passesUsed,
  runRecords,
  stepKey,
  stepName,
  type Board,
  type StepRecord,
} from './board.js';

/** A step the engine may start now. `held`: it was chosen before and could not start then. */
export type StepRef = {
  round: string;
  pass: number;
  step: number;
  name: string;
  kind: 'member' | 'owner';
  /** `<workspace>/<role>` or `<role>`, as declared; the owner is always a role of this workspace. */
  address: string;
  workspace: string | null;
  role: string;
  held: boolean;
};

export type Completion = { outcome: 'answered' | 'escalated'; reason: CompletionReason };

export type Decision = {
  /** Ops to append, in order: lapses, then a rework that starts the next pass. */
  ops: ChannelOpPayload[];
  /** Steps to start now (the engine commissions each, then writes step.started, step.held or step.skipped). */
  start: StepRef[];
  /** Lapsed steps whose session still runs: ask it to stop, the round went on without it. */
  stop: StepRecord[];
  /** The round is done: render its result, post it in the round's thread, write round.completed. */
  complete: Completion | null;
  warnings: Warning[];
  /** The board with `ops` applied. */
  board: Board;
};

function ref(b: Board, step: number, held: boolean): StepRef {
  const s = b.channel.steps[step];
  if (s === undefined) {
    return { round: b.round, pass: b.pass, step, name: stepName(b, step), kind: 'owner', address: b.channel.owner!, workspace: null, role: b.channel.owner!, held };
  }
  return { round: b.round, pass: b.pass, step, name: s.name, kind: 'member', address: s.address, workspace: s.workspace, role: s.role, held };
}

function startable(r: StepRecord | null): boolean {
  return r === null || r.state === 'held';
}

/** The owner folds only when every member settled, nobody handed back, and somebody answered. */
function ownerMayStart(b: Board): boolean {
  const run = runRecords(b);
  if (ownerIndex(b) === null || run.some((r) => r === null || !isSettled(r))) return false;
  if (run.some((r) => r !== null && escalates(b, r)) || !run.some((r) => r?.state === 'answered')) return false;
  return startable(ownerRecord(b));
}

/** A `--needs-rework` of the current pass that has not moved the round yet. */
export function pendingRework(b: Board): StepRecord | null {
  if (b.completed !== null) return null;
  return runRecords(b).find((r) => r !== null && r.pass === b.pass && r.state === 'answered' && r.outcome === 'needs_rework' && b.channel.steps[r.step]?.rework != null) ?? null;
}

/**
 * The steps that may start now; the working-copy lease consults this when it promotes a claim.
 * Ordered flow: one step at a time, and only when no step of the round (any pass) may still be at
 * work, so two steps of one run never share the working copy. A held step holds the ones after it.
 * Fan-out: every member not started yet, in declared order, while fewer than eight sessions of the
 * round are in flight. The owner's fold follows the members.
 */
export function nextStartable(b: Board): StepRef[] {
  if (b.completed !== null || pendingRework(b) !== null || completion(b) !== null) return [];
  const flying = allRecords(b).filter(inFlight).length;
  const run = runRecords(b);
  if (b.channel.flow === 'sequential') {
    if (flying > 0) return [];
    for (let i = currentPass(b).start; i < run.length; i++) {
      const r = run[i]!;
      if (startable(r)) return [ref(b, i, r !== null)];
      if (!isSettled(r)) return [];
    }
    return ownerMayStart(b) ? [ref(b, ownerIndex(b)!, ownerRecord(b) !== null)] : [];
  }
  const room = MAX_ROUND_CONCURRENCY - flying;
  const members = run.flatMap((r, i) => (startable(r) ? [ref(b, i, r !== null)] : []));
  if (members.length > 0) return members.slice(0, Math.max(0, room));
  return room > 0 && ownerMayStart(b) ? [ref(b, ownerIndex(b)!, ownerRecord(b) !== null)] : [];
}

/** Started steps whose window ran out unanswered by `now`, in (pass, step) order. */
export function lapsedAt(b: Board, now: Date): StepRecord[] {
  return allRecords(b).filter(
    (r) => (r.state === 'running' || r.state === 'on_hold') && r.deadline !== null && Date.parse(r.deadline) <= now.getTime(),
  );
}

/**
 * Whether the round is done, and how. An ordered run stops at a hand-back (it goes up, never on to
 * the next step); a fan-out waits for every member. An escalating round is never folded.
 */
export function completion(b: Board): Completion | null {
  if (b.completed !== null || pendingRework(b) !== null) return null;
  const run = runRecords(b);
  for (const r of run) {
    if (r !== null && escalates(b, r) && b.channel.flow === 'sequential') return { outcome: 'escalated', reason: 'escalation' };
    if (r === null || !isSettled(r)) return null;
  }
  if (run.some((r) => escalates(b, r!))) return { outcome: 'escalated', reason: 'escalation' };
  if (!run.some((r) => r!.state === 'answered')) return { outcome: 'escalated', reason: 'nobody_answered' };
  if (ownerIndex(b) === null) return { outcome: 'answered', reason: 'answered' };
  const o = ownerRecord(b);
  if (o === null || !isSettled(o)) return null;
  if (o.state !== 'answered') return { outcome: 'answered', reason: 'owner_unanswered' };
  return escalates(b, o) || o.outcome !== 'answer' ? { outcome: 'escalated', reason: 'escalation' } : { outcome: 'answered', reason: 'folded' };
}

function lapseWarning(b: Board, r: StepRecord): Warning {
  const minutes = r.window_ms === null ? '' : ` of ${windowText(r.window_ms)}`;
  return {
    class: 'step_unanswered',
    message: `step "${stepName(b, r.step)}" (${r.handle ?? '?'}) of #${b.channel.name} was not answered within its window${minutes}; the round goes on without it`,
    round: b.round,
    step: stepName(b, r.step),
    ...(r.thread === null ? {} : { thread: r.thread }),
    ...(r.session === null ? {} : { session: r.session }),
    role: b.channel.steps[r.step]?.role ?? b.channel.owner ?? '',
  };
}

/**
 * Everything the board asks for at `now`, after the ops the engine just wrote: lapse what ran out,
 * turn a rework into the next pass (or, past the pass limit, into a hand-back), finish the round,
 * or name the steps to start. Call it after every change to a round and on every tick.
 */
export function decide(board: Board, now: Date): Decision {
  let b = board;
  const out: Decision = { ops: [], start: [], stop: [], complete: null, warnings: [], board };
  if (b.completed !== null) return out;
  const apply = (op: ChannelOpPayload) => {
    out.ops.push(op);
    b = applyBoardOp(b, { ...op, workspace: b.workspace })!;
  };
  for (const r of lapsedAt(b, now)) {
    apply({ kind: 'step.lapsed', body: { round: b.round, pass: r.pass, step: r.step, deadline: r.deadline! } });
    out.warnings.push(lapseWarning(b, r));
    if (inFlight(b.steps[stepKey(r.pass, r.step)]!)) out.stop.push(b.steps[stepKey(r.pass, r.step)]!);
  }
  const rework = pendingRework(b);
  if (rework !== null) {
    if (passesUsed(b) >= b.channel.passes) {
      out.complete = { outcome: 'escalated', reason: 'pass_limit' };
      out.board = b;
      return out;
    }
    const to = b.channel.steps[rework.step]!.rework!;
    apply({ kind: 'round.reworked', body: { round: b.round, pass: b.pass + 1, from: { pass: rework.pass, step: rework.step }, to_step: to, message: rework.message! } });
  }
  out.complete = completion(b);
  if (out.complete === null) out.start = nextStartable(b);
  out.board = b;
  return out;
}

/** Whether the board still has a hand-back nobody answered: the result escalated and no ask came since. */
export function holdsForHandBack(b: Board): boolean {
  return b.completed?.outcome === 'escalated';
}

/** Members of other workspaces not admitted there yet: on hold at an availability boundary. */
export function onHoldAtBoundary(b: Board): StepRecord[] {
  return allRecords(b).filter((r) => r.state === 'on_hold');
}

/**
 * What the lease's bound reads: the deadlines still outstanding, and whether any outstanding step
 * has no window at all (then the flat bound applies).
 */
export function outstandingWindows(b: Board): { deadlines: string[]; unbounded: boolean } {
  const open = allRecords(b).filter((r) => r.state === 'running' || r.state === 'on_hold');
  return { deadlines: open.flatMap((r) => (r.deadline === null ? [] : [r.deadline])).sort(), unbounded: open.some((r) => r.deadline === null) };
}

/** The earliest window still open: when a tick has something to do for this round. */
export function nextDeadline(b: Board): string | null {
  return outstandingWindows(b).deadlines[0] ?? null;
}
