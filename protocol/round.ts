// A channel round's ops (what the log records of it) and how status presents a round.
import { z } from 'zod';
import { ChannelSnapshotSchema, FLOWS } from './channel.js';
import { AuthorSchema } from './author.js';

// ---------------------------------------------------------------------------------------------
// The ops of a round. A round is one `nxc send #name`: its id is the thread that send opened (the
// round's thread, owed by the channel). Every op below is scoped to that thread, session null.
// `pass` counts runs of the flow (a rework or an ask from above starts the next one); `step` is an
// index into the channel's steps, and `steps.length` is the owner's fold.
// ---------------------------------------------------------------------------------------------

const StepRef = { round: z.string(), pass: z.number().int().min(1), step: z.number().int().min(0) };

export const RequesterSchema = AuthorSchema.extend({
  /** The depth the requester acts at; steps open one hop below it, and it is woken at it again. */
  depth: z.number().int().min(0),
});
export type Requester = z.infer<typeof RequesterSchema>;

export const RoundOpenedSchema = z.object({
  kind: z.literal('round.opened'),
  body: z.object({ round: z.string(), channel: ChannelSnapshotSchema, requester: RequesterSchema, ask: z.string() }),
});

/**
 * A step was commissioned: its own thread (child of the round's thread) and session. The window is
 * fixed here, when the step starts. `on_hold`: a member of another workspace not yet admitted there.
 */
export const StepStartedSchema = z.object({
  kind: z.literal('step.started'),
  body: z.object({
    ...StepRef,
    thread: z.string(),
    session: z.string().nullable(),
    handle: z.string(),
    depth: z.number().int().min(1),
    started_at: z.string(),
    window_ms: z.number().int().positive().nullable(),
    deadline: z.string().nullable(),
    on_hold: z.boolean(),
  }),
});

/** The other workspace admitted a member that was on hold at the availability boundary. */
export const StepAdmittedSchema = z.object({ kind: z.literal('step.admitted'), body: z.object({ ...StepRef, session: z.string() }) });

/** Chosen to start, not started yet, to be tried again (queued behind the working-copy lease, say). It holds later steps. */
export const StepHeldSchema = z.object({ kind: z.literal('step.held'), body: z.object({ ...StepRef, reason: z.string(), message: z.string() }) });

/** Its start failed for good: the round goes on without it (warning step_skipped, with this reason). */
export const StepSkippedSchema = z.object({ kind: z.literal('step.skipped'), body: z.object({ ...StepRef, reason: z.string(), message: z.string() }) });

export const STEP_OUTCOMES = ['answer', 'escalate', 'needs_rework'] as const;
export type StepOutcome = (typeof STEP_OUTCOMES)[number];

/** The step's session discharged its thread; `message` is the reply (its text stays in the thread). */
export const StepAnsweredSchema = z.object({
  kind: z.literal('step.answered'),
  body: z.object({ ...StepRef, message: z.string(), author: z.string(), outcome: z.enum(STEP_OUTCOMES) }),
});

/** Its window ran out unanswered (warning step_unanswered): what follows happens without it. */
export const StepLapsedSchema = z.object({ kind: z.literal('step.lapsed'), body: z.object({ ...StepRef, deadline: z.string() }) });

/** The step's session announced its end; until then it counts as running. */
export const StepEndedSchema = z.object({ kind: z.literal('step.ended'), body: z.object(StepRef) });

/** A `--needs-rework` sent the work back: pass `pass` starts at step `to_step` in new threads. */
export const RoundReworkedSchema = z.object({
  kind: z.literal('round.reworked'),
  body: z.object({
    round: z.string(),
    pass: z.number().int().min(2),
    from: z.object({ pass: z.number().int().min(1), step: z.number().int().min(0) }),
    to_step: z.number().int().min(0),
    message: z.string(),
  }),
});

/**
 * The requester wrote in the round's thread after its result: asked again. The round is declared
 * anew (the channel as it reads now), the pass budget starts over, and the run restarts at its
 * first step in new threads. An escalation the result carried counts as answered from above.
 */
export const RoundReaskedSchema = z.object({
  kind: z.literal('round.reasked'),
  body: z.object({ round: z.string(), pass: z.number().int().min(2), message: z.string(), channel: ChannelSnapshotSchema }),
});

export const ROUND_OUTCOMES = ['answered', 'escalated'] as const;
export const COMPLETION_REASONS = [
  'answered', // every step settled and at least one answered: replies passed through
  'folded', // the owner folded the replies into one answer
  'owner_unanswered', // the owner lapsed or was skipped: replies passed through
  'escalation', // a step (or the owner) handed back: passed through, never folded
  'pass_limit', // rework was still asked for when the passes ran out
  'nobody_answered', // every step lapsed or was skipped
  'withdrawn', // the person who opened the operation withdrew it: the round was discharged as it stood
] as const;
export type CompletionReason = (typeof COMPLETION_REASONS)[number];

/** The round's result was posted in its thread (message `message`), wrapped under `boundary`. */
export const RoundCompletedSchema = z.object({
  kind: z.literal('round.completed'),
  body: z.object({
    round: z.string(),
    pass: z.number().int().min(1),
    outcome: z.enum(ROUND_OUTCOMES),
    reason: z.enum(COMPLETION_REASONS),
    message: z.string(),
    boundary: z.string(),
  }),
});

/** Every op a round writes; the engine adds these to the op log's union. */
export const ChannelOpPayloadSchema = z.discriminatedUnion('kind', [
  RoundOpenedSchema,
  StepStartedSchema,
  StepAdmittedSchema,
  StepHeldSchema,
  StepSkippedSchema,
  StepAnsweredSchema,
  StepLapsedSchema,
  StepEndedSchema,
  RoundReworkedSchema,
  RoundReaskedSchema,
  RoundCompletedSchema,
]);
export type ChannelOpPayload = z.infer<typeof ChannelOpPayloadSchema>;
export type ChannelOpKind = ChannelOpPayload['kind'];
export const CHANNEL_OP_KINDS = ChannelOpPayloadSchema.options.map((o) => o.shape.kind.value) as ChannelOpKind[];

/** The thread target a round's thread is opened with (`nxc send '#name'`); for the op log's TargetSchema. */
export const ChannelTargetSchema = z.object({ kind: z.literal('channel'), channel: z.string(), handle: z.string() });
export type ChannelTarget = z.infer<typeof ChannelTargetSchema>;

// ---------------------------------------------------------------------------------------------
// How status and thread views present a round (`round` on the round thread's status row).
// ---------------------------------------------------------------------------------------------

export const ROUND_STEP_STATES = [
  'pending', // not chosen to start yet (a later step of an ordered run, or waiting for a fan-out slot)
  'held', // chosen, could not start yet, will be tried again; holds later steps
  'on_hold', // a member of another workspace not admitted there yet
  'running',
  'answered',
  'needs_rework',
  'escalated',
  'lapsed', // its window ran out unanswered
  'skipped', // its start failed for good
  'not_reached', // the round finished before this step's turn
] as const;

export const RoundStepStatusSchema = z.object({
  name: z.string(),
  kind: z.enum(['member', 'owner']),
  address: z.string(),
  handle: z.string().nullable(),
  /** The pass this step's record belongs to (an earlier one when carried over a rework); null while pending. */
  pass: z.number().int().nullable(),
  state: z.enum(ROUND_STEP_STATES),
  thread: z.string().nullable(),
  session: z.string().nullable(),
  /** Its session may still be at work (not ended). */
  running: z.boolean(),
  window_ms: z.number().int().nullable(),
  deadline: z.string().nullable(),
  reason: z.string().nullable(),
  /**
   * The warning class this step's state reports (the class receipts use): step_unanswered for a lapsed step,
   * step_skipped for one that never started; null otherwise. (The classes are named here, not imported: the
   * receipts' schema includes this one.)
   */
  warning: z.enum(['step_unanswered', 'step_skipped']).nullable(),
});
export type RoundStepStatus = z.infer<typeof RoundStepStatusSchema>;

export const RoundStatusSchema = z.object({
  round: z.string(),
  channel: z.string(),
  flow: z.enum(FLOWS),
  state: z.enum(['running', 'answered', 'escalated']),
  reason: z.enum(COMPLETION_REASONS).nullable(),
  requester: z.string(),
  pass: z.number().int(),
  passes_used: z.number().int(),
  passes_limit: z.number().int(),
  steps: z.array(RoundStepStatusSchema),
  next_deadline: z.string().nullable(),
  /** The result handed back and nobody has asked again yet: a working-copy lease keeps holding. */
  holds_hand_back: z.boolean(),
  boundary: z.string().nullable(),
});
export type RoundStatus = z.infer<typeof RoundStatusSchema>;

/** A step's window as people read it: seconds below a minute (a 20 s window is not "0 min"), minutes above. */
export function windowText(ms: number): string {
  return ms < 60_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`;
}
