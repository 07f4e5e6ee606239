// The working-copy lease's vocabulary: its state, the events it decides on, the effects it asks for, and the
// facts it records as ops. Pure data: the rules live in node-agent/capabilities/leases.
import { z } from 'zod';

/** The lease's fixed durations. Not tunable on purpose: they are part of the behaviour people rely on. */
export const LEASE_TIMES = {
  /** How long an unanswered hand-back may hold the copy once another operation waits for it. */
  contention_ms: 30 * 60_000,
  /** The bound of an operation that has an obligation with no declared window. */
  flat_bound_ms: 2 * 60 * 60_000,
  /** While anybody waits, how often a tick asks whether the holder is provably gone (and retries a refused park). */
  sweep_ms: 60_000,
} as const;

const Id = z.string().min(1);
const Ms = z.number().int().min(0);

/** Who did something: a handle, and the session it acted from (null for a person at a terminal). */
export const LeaseActorSchema = z.object({ handle: Id, session: Id.nullable() });
export type LeaseActor = z.infer<typeof LeaseActorSchema>;

/**
 * Something the engine will start (a turn to run) once the lease allows it. `id` is opaque to the lease.
 * `run` names an ordered run (a sequential flow or `steps:`) and the step's place in it: two steps of one run
 * never start side by side in one working copy.
 */
export const TriggerSchema = z.object({
  id: Id,
  thread: Id,
  run: z.object({ id: Id, step: z.number().int().min(0) }).nullable(),
});
export type Trigger = z.infer<typeof TriggerSchema>;

/** What is known of the process behind a thread: none (a person owes it), starting, running, or over. */
export const ProcStateSchema = z.enum(['none', 'starting', 'running', 'ended', 'crashed']);
export type ProcState = z.infer<typeof ProcStateSchema>;

/** One thread of a claim area, as far as the lease needs it. */
export const ThreadFactSchema = z.object({
  parent: Id.nullable(),
  /** Who commissioned it: only that handle, writing in this thread, answers a hand-back from above. */
  opener: Id,
  /** Owed by a person: no process to watch, and a person may still answer. */
  person: z.boolean(),
  owing: z.boolean(),
  /** When the current obligation began (ms). */
  since: Ms,
  window_ms: z.number().int().positive().nullable(),
  /** An unanswered hand-back in this thread, and the only handle that may answer it in place. */
  handback: z.enum(['escalation', 'question']).nullable(),
  expected: Id.nullable(),
  session: Id.nullable(),
  proc: ProcStateSchema,
  run: TriggerSchema.shape.run,
});
export type ThreadFact = z.infer<typeof ThreadFactSchema>;

/** The whole operation a claim covers: the root thread and everything beneath it. */
export const AreaSchema = z.object({
  /** The person who sent the operation's first commission: the only one who may withdraw it. */
  root: LeaseActorSchema,
  /** The branch the operation started on, recorded when it first got the copy; null until then or if none. */
  base: Id.nullable(),
  /** Whether the newest discharge in the area was a hand-back (escalation or question). */
  last_word: z.enum(['handback', 'other']),
  threads: z.record(Id, ThreadFactSchema),
});
export type Area = z.infer<typeof AreaSchema>;

export const ParkReasonSchema = z.enum(['contention', 'drain', 'dead', 'takeover', 'withdraw']);
export type ParkReason = z.infer<typeof ParkReasonSchema>;

/** Where a parked operation's work is: enough to put it back. */
export const ParkRecordSchema = z.object({
  token: z.number().int().min(1),
  /** The operation's own branch when it was parked, and the commit it pointed at. */
  branch: Id,
  head: Id,
  base: Id,
  base_commit: Id,
  /** The park commit on the park branch; null when nothing was uncommitted. */
  park_branch: Id,
  work: Id.nullable(),
  at: Ms,
});
export type ParkRecord = z.infer<typeof ParkRecordSchema>;

export const HolderSchema = z.object({
  operation: Id,
  token: z.number().int().min(1),
  since: Ms,
  /** False while the operation's parked work is being put back: nothing of it starts before. */
  ready: z.boolean(),
  withdrawn: z.boolean(),
  /** When contention began while the copy is held for a hand-back; null when it is not. */
  contention_since: Ms.nullable(),
  /** Triggers granted but not started yet (restore under way, or a later step of an ordered run). */
  waiting: z.array(TriggerSchema),
  /** The fixed text for the first session started after a restore. */
  notice: z.string().nullable(),
});
export type Holder = z.infer<typeof HolderSchema>;

/**
 * `woken`: a parked operation whose session an answer woke. It waits for the copy ahead of every commission, behind
 * only the parked operations woken before it.
 */
export const QueueEntrySchema = z.object({ operation: Id, since: Ms, triggers: z.array(TriggerSchema), woken: z.boolean().optional() });
export type QueueEntry = z.infer<typeof QueueEntrySchema>;

/** A park asked for and not yet answered. */
export const PendingParkSchema = z.object({ operation: Id, token: z.number().int().min(1), reason: ParkReasonSchema, at: Ms });
export type PendingPark = z.infer<typeof PendingParkSchema>;

/** A refused park that is being retried: `nxc status` shows it as PARK REFUSED with `text`. */
export const RefusalSchema = z.object({ operation: Id, reason: ParkReasonSchema, text: z.string(), since: Ms });

/** The lease of one working copy. A plain JSON value: the fold of the lease ops, stored as it is. */
export const LeaseStateSchema = z.object({
  /** The last token granted. Tokens only grow. */
  token: z.number().int().min(0),
  holder: HolderSchema.nullable(),
  queue: z.array(QueueEntrySchema),
  /** Operations the lease follows: the holder and those queued. */
  areas: z.record(Id, AreaSchema),
  parked: z.record(Id, ParkRecordSchema),
  pending: PendingParkSchema.nullable(),
  refusal: RefusalSchema.nullable(),
  /** Whether the worker said, at the last tick, that it can tell a session's process is alive. */
  liveness_known: z.boolean().nullable(),
});
export type LeaseState = z.infer<typeof LeaseStateSchema>;

export function emptyLeaseState(): LeaseState {
  return { token: 0, holder: null, queue: [], areas: {}, parked: {}, pending: null, refusal: null, liveness_known: null };
}

// ---------------------------------------------------------------------------------------------------------
// Events: what the engine feeds the lease. Every event that can change a decision carries the facts it needs.

/**
 * Device-local facts the engine gathers when it feeds an event that may take a copy away: whether the worker
 * can tell a session's process is alive, which sessions are alive now, and which operations have something on
 * hold at an availability boundary (a commission to another workspace not yet admitted counts).
 */
export const WorldFactsSchema = z.object({
  liveness_known: z.boolean(),
  alive: z.array(Id),
  boundary: z.array(Id),
});
export type WorldFacts = z.infer<typeof WorldFactsSchema>;

/** A thread as the engine's fold knows it, for an operation the lease starts following. */
export const ThreadSnapshotSchema = ThreadFactSchema.extend({ thread: Id });
export type ThreadSnapshot = z.infer<typeof ThreadSnapshotSchema>;

const Scoped = { operation: Id, thread: Id };

/**
 * A commissioning trigger going down: a new thread (`commission`) or a follow-up that makes a thread owed
 * again (`reopen`). `exclusive` is the target's declaration (working_tree: exclusive). `root` is the sender of
 * the operation's first commission and `area` the operation's threads before this one: both are read only when
 * the lease does not follow the operation yet.
 */
const CommissionFields = {
  ...Scoped,
  parent: Id.nullable(),
  by: LeaseActorSchema,
  person: z.boolean(),
  exclusive: z.boolean(),
  window_ms: z.number().int().positive().nullable(),
  trigger: TriggerSchema.nullable(),
  root: LeaseActorSchema,
  area: z.array(ThreadSnapshotSchema),
  facts: WorldFactsSchema,
};

export const ParkResultSchema = z.discriminatedUnion('outcome', [
  z.object({ outcome: z.literal('parked'), record: ParkRecordSchema }),
  /** Can pass: a sequence in progress, or a git command that failed. `what` says what to finish. */
  z.object({ outcome: z.literal('refused_passable'), what: z.string().min(1) }),
  /** Cannot pass: no working copy named, not a git repository, no base branch recorded, no commit. */
  z.object({ outcome: z.literal('refused_unpassable'), why: z.string().min(1) }),
]);
export type ParkResult = z.infer<typeof ParkResultSchema>;

export const RestoreResultSchema = z.object({
  /** False when the work could not be put back in the tree (it stays on its park branch). */
  applied: z.boolean(),
  /** The fixed text the operation's next session is told. */
  notice: z.string().min(1),
});
export type RestoreResult = z.infer<typeof RestoreResultSchema>;

export const LeaseEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('commission'), ...CommissionFields }),
  z.object({ type: z.literal('reopen'), ...CommissionFields }),
  /**
   * A reply in a thread. `wakes` is the session an answer going up starts: never held back by a commission, but a
   * parked operation's session waits for the copy (at the head of the queue). `root`, `area` and `facts` are read
   * only then, when the lease does not follow the operation yet (as for a commission).
   */
  z.object({
    type: z.literal('reply'),
    ...Scoped,
    by: LeaseActorSchema,
    outcome: z.enum(['answer', 'escalate', 'question', 'none']),
    wakes: TriggerSchema.nullable(),
    root: LeaseActorSchema,
    area: z.array(ThreadSnapshotSchema),
    facts: WorldFactsSchema,
  }),
  /** The commissioner of `thread` wrote in it and asked again; null `by` is the engine moving on its own. */
  z.object({ type: z.literal('answered_from_above'), ...Scoped, by: LeaseActorSchema.nullable() }),
  z.object({ type: z.literal('session_started'), ...Scoped, session: Id }),
  /** The session reported its end (an orderly shutdown). */
  z.object({ type: z.literal('session_ended'), ...Scoped, session: Id }),
  /** The session's process is known to be gone without reporting an end. */
  z.object({ type: z.literal('session_crashed'), ...Scoped, session: Id }),
  /** A trigger could not be started and will not be retried. */
  z.object({ type: z.literal('start_failed'), ...Scoped }),
  /** The branch the copy was on when a grant was fenced: the base the operation started on. */
  z.object({ type: z.literal('base_recorded'), operation: Id, token: z.number().int().min(1), branch: Id.nullable() }),
  z.object({ type: z.literal('tick'), facts: WorldFactsSchema }),
  z.object({ type: z.literal('withdraw'), thread: Id, by: LeaseActorSchema, facts: WorldFactsSchema }),
  z.object({ type: z.literal('park_result'), operation: Id, token: z.number().int().min(1), result: ParkResultSchema }),
  z.object({ type: z.literal('restore_result'), operation: Id, token: z.number().int().min(1), result: RestoreResultSchema }),
]);
export type LeaseEvent = z.infer<typeof LeaseEventSchema>;
export type LeaseEventOf<T extends LeaseEvent['type']> = Extract<LeaseEvent, { type: T }>;

// ---------------------------------------------------------------------------------------------------------
// Effects: what the engine must carry out, in the order given.

export const LeaseEffectSchema = z.discriminatedUnion('type', [
  /** Start these triggers. `token` goes to each session as NXC_LEASE_TOKEN (null: the operation holds no copy). */
  z.object({
    type: z.literal('start'),
    operation: Id,
    triggers: z.array(TriggerSchema).min(1),
    token: z.number().int().min(1).nullable(),
    notice: z.string().nullable(),
  }),
  /** The commission was posted and waits for the copy: the receipt says so (warning-free, exit 0). */
  z.object({
    type: z.literal('queued'),
    operation: Id,
    thread: Id,
    position: z.number().int().min(1),
    holder: z.object({ operation: Id, thread: Id }),
  }),
  /** Raise the token ref to `token` before anything else of this grant; report the branch as base_recorded. */
  z.object({ type: z.literal('fence'), operation: Id, token: z.number().int().min(1) }),
  /** Commit the operation's uncommitted work to its park branch and check out `base`; answer with park_result. */
  z.object({ type: z.literal('park'), operation: Id, token: z.number().int().min(1), base: Id.nullable(), reason: ParkReasonSchema }),
  /** Put a parked operation back on its branch with its work; answer with restore_result. */
  z.object({ type: z.literal('restore'), operation: Id, token: z.number().int().min(1), record: ParkRecordSchema }),
  z.object({ type: z.literal('schedule_tick'), at: Ms }),
  z.object({
    type: z.literal('warn'),
    class: z.enum(['work_not_parked', 'work_handed_on_unparked']),
    reason: z.string(),
    operation: Id,
    message: z.string(),
  }),
  /** A withdrawal: discharge these threads and stop these sessions (the whole chain below the first thread). */
  z.object({ type: z.literal('stop'), operation: Id, discharge: z.array(Id), sessions: z.array(Id) }),
  /** A status mark changed: PARK REFUSED with its words, or cleared (text null). */
  z.object({ type: z.literal('mark'), operation: Id, mark: z.literal('park_refused'), text: z.string().nullable() }),
]);
export type LeaseEffect = z.infer<typeof LeaseEffectSchema>;

// ---------------------------------------------------------------------------------------------------------
// Facts: every change to the lease state is one of these, recorded as an op. Folding them in order from
// emptyLeaseState() gives the state back exactly; the fold never re-decides anything.

const Op = z.object({ operation: Id });
export const LeaseOpPayloadSchema = z.discriminatedUnion('kind', [
  /** The lease starts following an operation (its threads as the engine knew them). */
  z.object({ kind: z.literal('lease.followed'), body: Op.extend({ root: LeaseActorSchema, base: Id.nullable(), threads: z.record(Id, ThreadFactSchema) }) }),
  /** One thread of a followed operation changed (null: forgotten); `last_word` when a discharge sets it. */
  z.object({
    kind: z.literal('lease.noted'),
    body: Op.extend({ thread: Id, fact: ThreadFactSchema.nullable(), last_word: z.enum(['handback', 'other']).nullable() }),
  }),
  /** `woken`: a parked operation's session woken by an answer, which goes ahead of every commission waiting. */
  z.object({ kind: z.literal('lease.queued'), body: Op.extend({ trigger: TriggerSchema.nullable(), at: Ms, woken: z.boolean().optional() }) }),
  z.object({
    kind: z.literal('lease.claimed'),
    body: Op.extend({ token: z.number().int().min(1), at: Ms, ready: z.boolean(), waiting: z.array(TriggerSchema) }),
  }),
  z.object({ kind: z.literal('lease.base'), body: Op.extend({ branch: Id }) }),
  z.object({ kind: z.literal('lease.waiting'), body: Op.extend({ add: z.array(TriggerSchema), started: z.array(Id) }) }),
  z.object({ kind: z.literal('lease.contention'), body: Op.extend({ since: Ms.nullable() }) }),
  z.object({ kind: z.literal('lease.park_requested'), body: PendingParkSchema }),
  z.object({ kind: z.literal('lease.parked'), body: Op.extend({ record: ParkRecordSchema }) }),
  z.object({
    kind: z.literal('lease.refused'),
    body: Op.extend({ token: z.number().int().min(1), passable: z.boolean(), reason: ParkReasonSchema, text: z.string(), at: Ms }),
  }),
  z.object({ kind: z.literal('lease.refusal_cleared'), body: Op }),
  z.object({ kind: z.literal('lease.restored'), body: Op.extend({ token: z.number().int().min(1), applied: z.boolean(), notice: z.string() }) }),
  z.object({ kind: z.literal('lease.notice_given'), body: Op }),
  z.object({
    kind: z.literal('lease.released'),
    /** `requeue`: granted triggers not started yet; they go to the back of the queue rather than vanish. */
    body: Op.extend({ token: z.number().int().min(1), why: z.enum(['finished', 'parked', 'unparked']), requeue: z.array(TriggerSchema), at: Ms }),
  }),
  z.object({ kind: z.literal('lease.withdrawn'), body: Op.extend({ by: LeaseActorSchema }) }),
  z.object({ kind: z.literal('lease.liveness'), body: z.object({ known: z.boolean() }) }),
]);
export type LeaseOpPayload = z.infer<typeof LeaseOpPayloadSchema>;
export type LeaseOpKind = LeaseOpPayload['kind'];
