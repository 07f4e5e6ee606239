// The board: a round's state as a pure fold of its ops, and the reads every decision is made from.
import type { ChannelSnapshot } from '../../../protocol/channel.js';
import type { ChannelOpPayload, CompletionReason, Requester, StepOutcome } from '../../../protocol/round.js';
import { compareOps } from '../../../protocol/ops.js';

export type StepState = 'held' | 'running' | 'on_hold' | 'answered' | 'lapsed' | 'skipped';

/** One step of one pass, from the moment it was chosen to start. Pending steps have no record. */
export type StepRecord = {
  pass: number;
  step: number;
  state: StepState;
  thread: string | null;
  session: string | null;
  handle: string | null;
  depth: number | null;
  started_at: string | null;
  window_ms: number | null;
  deadline: string | null;
  outcome: StepOutcome | null;
  /** The reply that answered it. */
  message: string | null;
  /** Why it is held or was skipped (a stable reason), and the words that go with it. */
  reason: string | null;
  note: string | null;
  /** Its session announced its end. A session counts as running until it does. */
  ended: boolean;
};

/** How a pass began: the round opened, a step sent work back, or the requester asked again. */
export type PassRecord = {
  pass: number;
  /** The first step this pass runs; earlier steps carry their answers over from the pass before. */
  start: number;
  cause: 'opened' | 'reworked' | 'reasked';
  /** The ask (opened, reasked) or the rework reply (reworked). */
  message: string;
  from: { pass: number; step: number } | null;
};

export type Completed = { pass: number; outcome: 'answered' | 'escalated'; reason: CompletionReason; message: string; boundary: string };

export type Board = {
  round: string;
  /** The workspace that opened the round: the only one whose ops move it. */
  workspace: string;
  channel: ChannelSnapshot;
  requester: Requester;
  pass: number;
  /** The pass the current ask began at: the pass limit counts from here. */
  budget_start: number;
  passes: PassRecord[];
  /** Keyed `<pass>:<step>`. */
  steps: Record<string, StepRecord>;
  completed: Completed | null;
};

/** A board op as the fold takes it: the payload and the workspace that wrote it. */
export type AuthoredOp = ChannelOpPayload & { workspace: string };

/** A board op as it comes out of the log: authored, plus the order every node folds in. */
export type BoardOp = AuthoredOp & { id: string; lamport: number };

export const stepKey = (pass: number, step: number): string => `${pass}:${step}`;

/** The owner's fold is the step after the last member, in every pass. */
export function ownerIndex(b: Board): number | null {
  return b.channel.owner === null ? null : b.channel.steps.length;
}

function blank(pass: number, step: number, state: StepState): StepRecord {
  return {
    pass,
    step,
    state,
    thread: null,
    session: null,
    handle: null,
    depth: null,
    started_at: null,
    window_ms: null,
    deadline: null,
    outcome: null,
    message: null,
    reason: null,
    note: null,
    ended: false,
  };
}

function validStep(b: Board, step: number): boolean {
  return step >= 0 && step <= b.channel.steps.length && (step < b.channel.steps.length || b.channel.owner !== null);
}

function withStep(b: Board, r: StepRecord): Board {
  return { ...b, steps: { ...b.steps, [stepKey(r.pass, r.step)]: r } };
}

/**
 * Applies one op. Pure and idempotent: an op that does not fit the board (a duplicate, a stale pass,
 * a step already settled) leaves it as it was, so a replayed or re-delivered log folds the same.
 * Only the workspace that opened the round decides about it; another workspace's round ops are inert.
 */
export function applyBoardOp(b: Board | null, op: AuthoredOp): Board | null {
  if (op.kind === 'round.opened') {
    if (b !== null) return b;
    const { round, channel, requester, ask } = op.body;
    return { round, workspace: op.workspace, channel, requester, pass: 1, budget_start: 1, passes: [{ pass: 1, start: 0, cause: 'opened', message: ask, from: null }], steps: {}, completed: null };
  }
  if (b === null || op.body.round !== b.round || op.workspace !== b.workspace) return b;
  switch (op.kind) {
    case 'step.started': {
      const o = op.body;
      const prev = b.steps[stepKey(o.pass, o.step)];
      if (b.completed !== null || o.pass !== b.pass || !validStep(b, o.step) || (prev !== undefined && prev.state !== 'held')) return b;
      return withStep(b, {
        ...blank(o.pass, o.step, o.on_hold ? 'on_hold' : 'running'),
        thread: o.thread,
        session: o.session,
        handle: o.handle,
        depth: o.depth,
        started_at: o.started_at,
        window_ms: o.window_ms,
        deadline: o.deadline,
      });
    }
    case 'step.held': {
      const o = op.body;
      if (b.completed !== null || o.pass !== b.pass || !validStep(b, o.step) || b.steps[stepKey(o.pass, o.step)] !== undefined) return b;
      return withStep(b, { ...blank(o.pass, o.step, 'held'), reason: o.reason, note: o.message });
    }
    case 'step.skipped': {
      // Before it started (persona missing, say), or after step.started when the process could not be
      // started or the other workspace refused the commission: either way nobody works on it.
      const o = op.body;
      const prev = b.steps[stepKey(o.pass, o.step)] ?? blank(o.pass, o.step, 'held');
      if (b.completed !== null || o.pass !== b.pass || !validStep(b, o.step) || !['held', 'running', 'on_hold'].includes(prev.state)) return b;
      return withStep(b, { ...prev, state: 'skipped', reason: o.reason, note: o.message });
    }
    case 'step.admitted': {
      const r = b.steps[stepKey(op.body.pass, op.body.step)];
      if (!r || (r.state !== 'on_hold' && r.session !== null)) return b;
      return withStep(b, { ...r, session: op.body.session, state: r.state === 'on_hold' ? 'running' : r.state });
    }
    case 'step.answered': {
      const r = b.steps[stepKey(op.body.pass, op.body.step)];
      // A reply after the window lapsed, or after the round moved on, is posted and moves nothing here.
      if (!r || (r.state !== 'running' && r.state !== 'on_hold')) return b;
      return withStep(b, { ...r, state: 'answered', outcome: op.body.outcome, message: op.body.message, handle: op.body.author });
    }
    case 'step.lapsed': {
      const r = b.steps[stepKey(op.body.pass, op.body.step)];
      if (!r || (r.state !== 'running' && r.state !== 'on_hold')) return b;
      return withStep(b, { ...r, state: 'lapsed' });
    }
    case 'step.ended': {
      const r = b.steps[stepKey(op.body.pass, op.body.step)];
      return !r || r.ended ? b : withStep(b, { ...r, ended: true });
    }
    case 'round.reworked': {
      const o = op.body;
      if (b.completed !== null || o.pass !== b.pass + 1 || o.from.pass !== b.pass || o.to_step >= b.channel.steps.length) return b;
      const passes = [...b.passes, { pass: o.pass, start: o.to_step, cause: 'reworked' as const, message: o.message, from: o.from }];
      return { ...b, pass: o.pass, passes };
    }
    case 'round.reasked': {
      const o = op.body;
      if (b.completed === null || o.pass !== b.pass + 1) return b;
      const passes = [...b.passes, { pass: o.pass, start: 0, cause: 'reasked' as const, message: o.message, from: null }];
      return { ...b, channel: o.channel, pass: o.pass, budget_start: o.pass, passes, completed: null };
    }
    case 'round.completed': {
      const o = op.body;
      if (b.completed !== null || o.pass !== b.pass) return b;
      return { ...b, completed: { pass: o.pass, outcome: o.outcome, reason: o.reason, message: o.message, boundary: o.boundary } };
    }
  }
}

/** Folds a round's ops from scratch in the canonical order, whatever order they arrived in. */
export function foldBoard(ops: readonly BoardOp[]): Board | null {
  return [...ops].sort(compareOps).reduce<Board | null>(applyBoardOp, null);
}

// ---------------------------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------------------------

export function currentPass(b: Board): PassRecord {
  return b.passes[b.passes.length - 1]!;
}

/** The message the current ask is: the one that opened the round, or the newest ask from above. */
export function askMessage(b: Board): string {
  return [...b.passes].reverse().find((p) => p.cause !== 'reworked')!.message;
}

/**
 * The record standing for `step` in the current run: this pass's own, or, for a step before the
 * pass's start, the newest one carried over from an earlier pass of the same ask.
 */
export function runRecord(b: Board, step: number): StepRecord | null {
  if (step >= currentPass(b).start) return b.steps[stepKey(b.pass, step)] ?? null;
  for (let p = b.pass - 1; p >= b.budget_start; p--) {
    const r = b.steps[stepKey(p, step)];
    if (r) return r;
  }
  return null;
}

/** The members' records of the current run, in declared order (null: not chosen to start yet). */
export function runRecords(b: Board): Array<StepRecord | null> {
  return b.channel.steps.map((_, i) => runRecord(b, i));
}

export function ownerRecord(b: Board): StepRecord | null {
  const i = ownerIndex(b);
  return i === null ? null : (b.steps[stepKey(b.pass, i)] ?? null);
}

export function isSettled(r: StepRecord): boolean {
  return r.state === 'answered' || r.state === 'lapsed' || r.state === 'skipped';
}

/** A session that may still be at work: not settled yet, or settled with no end announced. */
export function inFlight(r: StepRecord): boolean {
  if (r.state === 'running' || r.state === 'on_hold') return true;
  return (r.state === 'answered' || r.state === 'lapsed') && r.session !== null && !r.ended;
}

/** Whether a settled answer sends the round up rather than on. A rework with no target goes up too. */
export function escalates(b: Board, r: StepRecord): boolean {
  if (r.state !== 'answered') return false;
  if (r.outcome === 'escalate') return true;
  return r.outcome === 'needs_rework' && b.channel.steps[r.step]?.rework == null;
}

export function allRecords(b: Board): StepRecord[] {
  return Object.values(b.steps).sort((x, y) => x.pass - y.pass || x.step - y.step);
}

/** The step a thread belongs to, in any pass. */
export function stepOfThread(b: Board, thread: string): StepRecord | null {
  return allRecords(b).find((r) => r.thread === thread) ?? null;
}

/** The step a session runs, in any pass. */
export function stepOfSession(b: Board, session: string): StepRecord | null {
  return allRecords(b).find((r) => r.session === session) ?? null;
}

/** The declared name of a step index (the owner is named by its role). */
export function stepName(b: Board, step: number): string {
  return b.channel.steps[step]?.name ?? b.channel.owner ?? `step-${step}`;
}

/** How many passes the current ask has used. */
export function passesUsed(b: Board): number {
  return b.pass - b.budget_start + 1;
}
