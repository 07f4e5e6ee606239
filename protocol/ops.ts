// The op log's vocabulary: every change to a workspace is one of these ops.
import { z } from 'zod';
import { LeaseOpPayloadSchema } from './leases.js';
import { AuthorSchema } from './author.js';
import { ChannelOpPayloadSchema, ChannelTargetSchema } from './round.js';
import { WorkingCopySchema } from './working-copy.js';
import { SpendSchema, TurnUsageSchema } from './usage.js';

export { AuthorSchema, type Author } from './author.js';

/**
 * A thread may be owed by a persona of this workspace, by a person, or by a persona of another
 * workspace (`remote`: a cross-workspace commission, admitted there by its stamp). A `channel`
 * thread is a round's own thread (`nxc send '#name'`): the channel owes it the round's result.
 */
export const TargetSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('persona'), role: z.string(), handle: z.string() }),
  z.object({ kind: z.literal('person'), handle: z.string() }),
  z.object({ kind: z.literal('remote'), workspace: z.string(), role: z.string(), handle: z.string() }),
  ChannelTargetSchema,
]);
export type Target = z.infer<typeof TargetSchema>;

/**
 * What a message does to its thread. The engine decides this when the command
 * is taken; the fold only records it, so replaying the log never re-judges.
 */
export const MessageEffectSchema = z.enum([
  'commission', // the first message of a thread: the thread is owed
  'answer', // the turn is discharged with a result
  'escalate', // the turn is discharged by handing the task back up
  'reopen', // a follow-up to whoever owes the thread: owed again
  'none', // posted, moves nothing
]);
export type MessageEffect = z.infer<typeof MessageEffectSchema>;

export const ThreadOpenedSchema = z.object({
  kind: z.literal('thread.opened'),
  body: z.object({
    parent: z.string().nullable(),
    subject: z.string().nullable(),
    opener: AuthorSchema,
    target: TargetSchema,
    /** For a `remote` target: the commission stamp (compact JWS) signed by the asking workspace. */
    stamp: z.string().optional(),
  }),
});

export const MessagePostedSchema = z.object({
  kind: z.literal('message.posted'),
  body: z.object({
    message: z.string(),
    author: AuthorSchema,
    text: z.string(),
    effect: MessageEffectSchema,
    /** The runtime wrote this answer, standing in for a session that owed one. */
    substituted: z.boolean(),
    refs: z.object({ working_copy: WorkingCopySchema.nullable() }),
    /**
     * On an answer or hand-back to a commission from another workspace: what this operation had spent as
     * the answering workspace counts it, so the asker's total takes in what the far side spent.
     */
    usage: SpendSchema.optional(),
  }),
});

export const SessionCreatedSchema = z.object({
  kind: z.literal('session.created'),
  body: z.object({
    role: z.string(),
    handle: z.string(),
    /** Anchored before the session ever runs: the depth guard reads this, not the environment. */
    depth: z.number().int().min(0),
    /**
     * A commission admitted from another workspace: the turns its asking operation had used when it was
     * stamped. The operation's budget counts on from there (the same trust that carries the depth).
     */
    carried_turns: z.number().int().min(0).optional(),
    /** The same commission's stamp: the tokens and cost its asking operation had spent. */
    carried_usage: SpendSchema.optional(),
  }),
});

export const TurnStartedSchema = z.object({
  kind: z.literal('session.turn_started'),
  body: z.object({
    role: z.string(),
    turn: z.number().int().min(1),
    reason: z.enum(['commissioned', 'answered', 'follow_up']),
    declaration_hash: z.string(),
  }),
});

export const TurnOutcomeSchema = z.enum([
  'replied', // the session posted its answer or escalation
  'waiting', // it ended its turn with a commissioned round of its own still open
  'substituted', // it ended owing a reply; the runtime posted one in its name
  'start_failed', // the runtime could not be started
]);
export type TurnOutcome = z.infer<typeof TurnOutcomeSchema>;

export const TurnEndedSchema = z.object({
  kind: z.literal('session.turn_ended'),
  body: z.object({
    turn: z.number().int().min(1),
    outcome: TurnOutcomeSchema,
    exit_code: z.number().int().nullable(),
    signal: z.string().nullable(),
    timed_out: z.boolean(),
    /** What the turn spent, as its runtime reported it (absent: it reported nothing, or the op predates usage). */
    usage: TurnUsageSchema.optional(),
  }),
});

/** An Ed25519 public key as it appears in ops: the unpadded base64url of its 32 raw bytes (43 characters). */
export const PublicKeyText = z.string().regex(/^[A-Za-z0-9_-]{43}$/);

/**
 * The operation every workspace-scoped op (not part of any thread tree) names: `t-` and 26 zeros, a valid
 * thread id that no real thread can have (its ULID time is the epoch). Ops scoped to it are never folded
 * into an operation.
 */
export const WORKSPACE_OPERATION = 't-00000000000000000000000000';

/**
 * The workspace moves to a new signing key. Signed by the key it replaces (or any key already certified
 * for the workspace), so a peer that has verified it can place ops signed by `new_key`. Inert in folds;
 * it lives at {@link WORKSPACE_OPERATION}, thread and session null.
 */
export const KeyRotatedSchema = z.object({
  kind: z.literal('workspace.key_rotated'),
  body: z.strictObject({ new_key: PublicKeyText }),
});

/**
 * A cross-workspace commission was refused by the workspace it was addressed to: nothing ran there.
 * Authored by the receiver, in the asker's operation and thread; the fold answers the thread as an
 * escalation carrying the code, so an asker waiting on it is woken.
 */
export const CommissionRejectedSchema = z.object({
  kind: z.literal('commission.rejected'),
  // A code in the shape of protocol/errors.ts codes, not the closed list itself: a newer receiver's
  // code must still reach an older asker instead of being refused as a bad body.
  body: z.object({ code: z.string().regex(/^[A-Z][A-Z0-9_]{1,63}$/), message: z.string().max(4096) }),
});

/**
 * The person who opened an operation has read its result (`nxc done`): the root awaits nobody until a newer
 * answer arrives. Written in the operation's first thread by the workspace that opened it, and only that one;
 * `by` is the person, named as the thread names its opener.
 */
export const ThreadDoneSchema = z.object({
  kind: z.literal('thread.done'),
  body: z.object({ by: z.string().min(1).max(256) }),
});

/**
 * The kind-specific part of an op. One union, parsed once at every edge. The working-copy lease's facts
 * (`lease.*`) live at {@link WORKSPACE_OPERATION}: they describe the workspace's one checkout, not a thread.
 */
export const OpPayloadSchema = z.discriminatedUnion('kind', [
  ThreadOpenedSchema,
  MessagePostedSchema,
  SessionCreatedSchema,
  TurnStartedSchema,
  TurnEndedSchema,
  KeyRotatedSchema,
  CommissionRejectedSchema,
  ThreadDoneSchema,
  ...LeaseOpPayloadSchema.options,
  // A channel round's board: see protocol/round.ts.
  ...ChannelOpPayloadSchema.options,
]);
export type OpPayload = z.infer<typeof OpPayloadSchema>;
export type OpKind = OpPayload['kind'];

/** Where an op belongs: the operation (root thread) it folds into, its thread and session. */
export const OpScopeSchema = z.object({
  operation: z.string(),
  thread: z.string().nullable(),
  session: z.string().nullable(),
});

export const OpEnvelopeSchema = z.object({
  id: z.string(),
  workspace: z.string(),
  origin: z.string(),
  lamport: z.number().int().min(1),
  ts: z.string(),
  /**
   * The public key the op is signed with (see {@link PublicKeyText}): the workspace's genesis key (whose
   * sha256 gives the workspace id) or one certified by a `workspace.key_rotated` op of that workspace.
   */
  key: z.string(),
});

/** A complete op as stored and as it travels. */
export type Op = z.infer<typeof OpEnvelopeSchema> & z.infer<typeof OpScopeSchema> & OpPayload;

/** Ops of one kind, for fold handlers. */
export type OpOf<K extends OpKind> = Op & { kind: K } & Extract<OpPayload, { kind: K }>;

/** The order every node folds in, whatever order ops arrived in. */
export function compareOps(a: Pick<Op, 'lamport' | 'workspace' | 'id'>, b: Pick<Op, 'lamport' | 'workspace' | 'id'>): number {
  if (a.lamport !== b.lamport) return a.lamport - b.lamport;
  if (a.workspace !== b.workspace) return a.workspace < b.workspace ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
