// Turning what happened to a round into its ops: opening, starting a step, a step's reply, asking again.
import type { Channel, ChannelSnapshot } from '../../../protocol/channel.js';
import type { ChannelOpPayload, Requester, StepOutcome } from '../../../protocol/round.js';
import { NexusError } from '../../../protocol/errors.js';
import type { Author } from '../../../protocol/ops.js';
import { commissionDepth } from '../threads/index.js';
import { stepName, stepOfSession, stepOfThread, type Board } from './board.js';
import type { Completion, StepRef } from './decide.js';

type Op<K extends ChannelOpPayload['kind']> = Extract<ChannelOpPayload, { kind: K }>;

/** The snapshot a round records, so the fold never reads the declaration file again. */
export function snapshotOf(channel: Channel): ChannelSnapshot {
  const { file: _file, ...snapshot } = channel;
  return snapshot;
}

/**
 * `nxc send '#name'`: the round opens on the thread that send opened. Its steps open one hop below
 * the requester (not two: the round's own thread is no hop), so past the depth cap it is refused
 * here, before anything is written.
 */
export function openRound(input: { channel: Channel; round: string; requester: Requester; ask: string }): Op<'round.opened'> {
  commissionDepth(input.requester.depth, `#${input.channel.name}`);
  return { kind: 'round.opened', body: { round: input.round, channel: snapshotOf(input.channel), requester: input.requester, ask: input.ask } };
}

/** The depth every step of the round starts at, in every pass: the requester's plus one. */
export function stepDepth(b: Board): number {
  return commissionDepth(b.requester.depth, `#${b.channel.name}`);
}

/** A step's window: its own timeout, else the channel's, else its persona's; null when none is declared. */
export function windowFor(b: Board, s: StepRef, personaTimeoutMs: number | null): number | null {
  return b.channel.steps[s.step]?.timeout_ms ?? b.channel.timeout_ms ?? personaTimeoutMs;
}

/** Whether a step wants the working copy to itself: the channel or its persona says so. */
export function wantsExclusive(b: Board, personaWorkingTree: 'shared' | 'exclusive' | null): boolean {
  return b.channel.working_tree === 'exclusive' || personaWorkingTree === 'exclusive';
}

/** The op for a step the engine just commissioned. The deadline is fixed now, from the window. */
export function stepStarted(
  b: Board,
  s: StepRef,
  started: { thread: string; session: string | null; handle: string; now: Date; windowMs: number | null; onHold: boolean },
): Op<'step.started'> {
  const deadline = started.windowMs === null ? null : new Date(started.now.getTime() + started.windowMs).toISOString();
  return {
    kind: 'step.started',
    body: {
      round: b.round,
      pass: s.pass,
      step: s.step,
      thread: started.thread,
      session: started.session,
      handle: started.handle,
      depth: stepDepth(b),
      started_at: started.now.toISOString(),
      window_ms: started.windowMs,
      deadline,
      on_hold: started.onHold,
    },
  };
}

/**
 * A reply in a step's thread by the session that owes it. Null when the step is not waiting for
 * one (it lapsed, or the round moved on): the message posts and moves nothing on the board.
 */
export function stepAnswered(b: Board, thread: string, reply: { message: string; author: string; outcome: StepOutcome }): Op<'step.answered'> | null {
  const r = stepOfThread(b, thread);
  if (r === null || (r.state !== 'running' && r.state !== 'on_hold')) return null;
  return { kind: 'step.answered', body: { round: b.round, pass: r.pass, step: r.step, ...reply } };
}

/**
 * `nxc reply --needs-rework` is only for a step that declares where its answer goes back to.
 * @returns the name of the step the work would go back to.
 * @throws NexusError REWORK_NOT_DECLARED anywhere else (another thread, a fan-out member, the owner).
 */
export function needsRework(b: Board | null, thread: string): string {
  const r = b === null ? null : stepOfThread(b, thread);
  if (b === null || r === null) {
    throw new NexusError('REWORK_NOT_DECLARED', `thread ${thread} is not a step of a channel round: --needs-rework has nowhere to send the work`, { thread });
  }
  const target = b.channel.steps[r.step]?.rework;
  if (target == null) {
    const name = stepName(b, r.step);
    throw new NexusError(
      'REWORK_NOT_DECLARED',
      `step "${name}" of #${b.channel.name} declares no rework: (answer, or --escalate to hand the task back)`,
      { thread, channel: b.channel.name, step: name },
    );
  }
  return b.channel.steps[target]!.name;
}

export type ReaskVerdict = { kind: 'reask'; pass: number } | { kind: 'posted_only'; reason: 'not_requester' | 'round_running' };

/**
 * A message in the round's own thread. From the requester after the result, it asks again: the
 * round is re-declared and the run restarts in new step threads (a hand-back it carried counts as
 * answered from above). Anything else posts and moves nothing.
 */
export function reask(b: Board, author: Author): ReaskVerdict {
  const req = b.requester;
  const same = req.session !== null ? author.session === req.session : author.session === null && author.handle === req.handle;
  if (!same) return { kind: 'posted_only', reason: 'not_requester' };
  if (b.completed === null) return { kind: 'posted_only', reason: 'round_running' };
  return { kind: 'reask', pass: b.pass + 1 };
}

export function reasked(b: Board, channel: Channel, message: string): Op<'round.reasked'> {
  return { kind: 'round.reasked', body: { round: b.round, pass: b.pass + 1, message, channel: snapshotOf(channel) } };
}

/** A step's session ended its turn: the board stops counting it as running. Null for no step's session. */
export function stepEnded(b: Board, session: string): Op<'step.ended'> | null {
  const r = stepOfSession(b, session);
  return r === null || r.ended ? null : { kind: 'step.ended', body: { round: b.round, pass: r.pass, step: r.step } };
}

/** The other workspace admitted a member on hold (its `session.created` reached this node). */
export function stepAdmitted(b: Board, thread: string, session: string): Op<'step.admitted'> | null {
  const r = stepOfThread(b, thread);
  return r === null || r.session !== null ? null : { kind: 'step.admitted', body: { round: b.round, pass: r.pass, step: r.step, session } };
}

export function roundCompleted(b: Board, c: Completion, result: { message: string; boundary: string }): Op<'round.completed'> {
  return { kind: 'round.completed', body: { round: b.round, pass: b.pass, outcome: c.outcome, reason: c.reason, ...result } };
}

/** The effect the result message has on the round's thread: a hand-back goes up as an escalation. */
export function resultEffect(c: Completion): 'answer' | 'escalate' {
  return c.outcome === 'escalated' ? 'escalate' : 'answer';
}
