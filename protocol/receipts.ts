// The JSON contract of every command: receipts, status rows, thread listings, warnings.
import { z } from 'zod';
import { WorkingCopySchema } from './working-copy.js';

/** Machine-readable warning classes. None of them changes a command's exit code. */
export const WarningClassSchema = z.enum([
  'step_skipped', // a trigger failed after its message was written: nobody is working on it
  'step_unanswered', // a started step's window ran out unanswered
  'requester_not_woken', // an answer is there, and the session that asked was not told (yet)
  'tick_unscheduled', // a declared window has no clock
  'service_not_running', // a registered workspace with no node running
  'declaration_changed', // a persona started under a different declaration than its previous run
]);
export type WarningClass = z.infer<typeof WarningClassSchema>;

export const WarningSchema = z.object({
  class: WarningClassSchema,
  /** Why a session was not put in motion, when that is the point (e.g. already_running). */
  reason: z.string().optional(),
  message: z.string(),
  role: z.string().optional(),
  session: z.string().optional(),
  thread: z.string().optional(),
  /** For a channel round's step: the round (its thread) and the step's declared name. */
  round: z.string().optional(),
  step: z.string().optional(),
  declaration: z.object({ hash: z.string(), previous_hash: z.string() }).optional(),
});
export type Warning = z.infer<typeof WarningSchema>;

export const WokeSchema = z.object({
  session: z.string(),
  handle: z.string(),
  role: z.string(),
  depth: z.number().int(),
  turn: z.number().int(),
  thread: z.string(),
  pid: z.number().int().nullable(),
});
export type Woke = z.infer<typeof WokeSchema>;

export const ReceiptSchema = z.object({
  posted: z.boolean(),
  thread: z.string(),
  operation: z.string(),
  message: z.string(),
  /** The session this command started (or woke), or null. */
  woke: WokeSchema.nullable(),
  warnings: z.array(WarningSchema),
  /** Set when a send named no subject: the message still posted. */
  refs_warning: z.string().nullable(),
  working_copy: WorkingCopySchema.nullable(),
  worker_names_a_working_copy: z.boolean(),
  /** Human-readable handover line for the working copy. */
  working_copy_note: z.string(),
  /** A cross-workspace commission: the workspace and role it was sent to (its node admits it, or refuses it). */
  remote: z.object({ workspace: z.string(), role: z.string() }).optional(),
});
export type Receipt = z.infer<typeof ReceiptSchema>;

export const StatusRowSchema = z.object({
  thread: z.string(),
  parent: z.string().nullable(),
  subject: z.string().nullable(),
  opener: z.string(),
  to: z.string(),
  state: z.enum(['open', 'answered']),
  escalated: z.boolean(),
  substituted: z.boolean(),
  waiting_on_sub_round: z.boolean(),
  awaiting_human: z.boolean(),
  answered_by: z.string().nullable(),
  session: z
    .object({ id: z.string(), handle: z.string(), depth: z.number().int(), turn: z.number().int(), running: z.boolean() })
    .nullable(),
  messages: z.number().int(),
  updated: z.string(),
  working_copy: WorkingCopySchema.nullable(),
  /** Set when the workspace a remote commission was addressed to refused it: the stable code (STAMP_UNTRUSTED, ...). */
  rejected_code: z.string().nullable(),
  /** The refusing workspace's words for it, beside the code. */
  rejected_reason: z.string().nullable(),
});
export type StatusRow = z.infer<typeof StatusRowSchema>;

export const StatusOperationSchema = z.object({
  operation: z.string(),
  subject: z.string().nullable(),
  opener: z.string(),
  finished: z.boolean(),
  threads: z.array(StatusRowSchema),
  open: z.number().int(),
});

export const StatusReportSchema = z.object({
  workspace: z.object({ id: z.string(), name: z.string() }),
  operations: z.array(StatusOperationSchema),
  worker_names_a_working_copy: z.boolean(),
  worker_answers_liveness: z.boolean(),
  notes: z.array(z.string()),
});
export type StatusReport = z.infer<typeof StatusReportSchema>;
export type StatusOperation = z.infer<typeof StatusOperationSchema>;

export const ThreadMessageSchema = z.object({
  message: z.string(),
  author: z.string(),
  session: z.string().nullable(),
  effect: z.string(),
  substituted: z.boolean(),
  ts: z.string(),
  text: z.string(),
  refs: z.object({ working_copy: WorkingCopySchema.nullable() }),
});

export const ThreadViewSchema = z.object({
  thread: StatusRowSchema,
  operation: z.string(),
  messages: z.array(ThreadMessageSchema),
});
export type ThreadView = z.infer<typeof ThreadViewSchema>;
