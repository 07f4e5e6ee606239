// The JSON contract of every command: receipts, status rows, thread listings, warnings.
import { BudgetNameSchema, OperationUsageSchema, SpendTodaySchema, TurnUsageSchema } from './usage.js';
import { z } from 'zod';
import { RoundStatusSchema } from './round.js';
import { RUN_STATUSES, RUNTIME_KINDS, RunUsageSchema } from './runs.js';
import { WorkingCopySchema } from './working-copy.js';

/**
 * Machine-readable warning classes. tick_unscheduled, service_not_running and declaration_changed never
 * change a command's exit code; a trigger that failed after its message was written (step_skipped,
 * step_unanswered, requester_not_woken) prints the whole receipt and exits TRIGGER_FAILED_EXIT.
 */
export const WarningClassSchema = z.enum([
  'step_skipped', // a trigger failed after its message was written: nobody is working on it
  'step_unanswered', // a started step's window ran out unanswered
  'requester_not_woken', // an answer is there, and the session that asked was not told (yet)
  'tick_unscheduled', // a declared window has no clock
  'service_not_running', // a registered workspace with no node running
  'declaration_changed', // a persona started under a different declaration than its previous run
  'work_not_parked', // the working copy was due to move on, and its holder's work could not be parked yet: it stays
  'work_handed_on_unparked', // the working copy moved on without its holder's uncommitted work being parked
  'lease_token_reset', // the repository's lease token ref held what no grant of this workspace wrote: it was set back
  'sandbox_off', // the workspace declares `sandbox: off`: this turn runs with nothing around it
  'usage_refused', // a turn's runtime reported usage that is not counts or amounts: its end is recorded without it
  'relay_unreachable', // the message is written here, and the workspace's relay cannot be reached: it waits in the outbox
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
  /** For a turn a budget refused: which one (`max_turns`, `max_tokens`, `max_cost`, `daily_max_tokens`, `daily_max_cost`). */
  budget: BudgetNameSchema.optional(),
  /** For a turn the daily ceiling refused: when the day's spend starts again from nothing. */
  resets_at: z.string().optional(),
  /** relay_unreachable: the ops written here that wait for the relay. */
  outbox: z.number().int().min(0).optional(),
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
  /**
   * The commission was posted and waits for the working copy, which another operation holds: nothing started.
   * `position` counts from 1 at the head of the queue; `holder` names the operation ahead and its first thread.
   */
  queued: z
    .object({ position: z.number().int().min(1), holder: z.object({ operation: z.string(), thread: z.string() }) })
    .optional(),
  /** A message that opened, asked again or moved a channel round: the round as it stands after the command. */
  round: RoundStatusSchema.optional(),
});
export type Receipt = z.infer<typeof ReceiptSchema>;

/** Who wrote a message's text: the agent itself, its runtime (a builtin run's hand-back), or the sidecar (a stand-in). */
export const WrittenBySchema = z.enum(['agent', 'runtime', 'sidecar']);
export type WrittenBy = z.infer<typeof WrittenBySchema>;

/** The prefix every hand-back the runtime writes in a session's place begins with. */
export const RUNTIME_PREFIX = '[runtime]';

/**
 * Who wrote a posted message's text. A stand-in (`substituted`) is the sidecar's, whatever its prefix; a
 * session's own reply whose text the runtime composed begins `[runtime]`; anything else is the agent's.
 */
export function writtenBy(m: { substituted: boolean; text: string }): WrittenBy {
  if (m.substituted) return 'sidecar';
  return m.text.startsWith(RUNTIME_PREFIX) ? 'runtime' : 'agent';
}

/** A session's last turn as its runtime recorded it (`turn-<n>.run.json`): how the run stands or ended, and what it spent. */
export const LastRunSchema = z.object({
  turn: z.number().int(),
  runtime: z.enum(RUNTIME_KINDS),
  status: z.enum(RUN_STATUSES),
  /** Why it ended so, in words; null while running and when completed. */
  reason: z.string().nullable(),
  usage: RunUsageSchema,
});
export type LastRun = z.infer<typeof LastRunSchema>;

export const StatusRowSchema = z.object({
  thread: z.string(),
  parent: z.string().nullable(),
  subject: z.string().nullable(),
  opener: z.string(),
  to: z.string(),
  state: z.enum(['open', 'answered']),
  escalated: z.boolean(),
  substituted: z.boolean(),
  /** Who wrote its answer's text (null while it is open). */
  written_by: WrittenBySchema.nullable(),
  /** Its answer is the discharge written when the operation's sender withdrew it. */
  withdrawn: z.boolean(),
  waiting_on_sub_round: z.boolean(),
  awaiting_human: z.boolean(),
  /**
   * Whose person it awaits, when `awaiting_human`: the workspace that opened the operation. A synced log
   * holds other workspaces' operations too; only where this is the reading workspace's own id is it
   * awaiting someone here. Null when nothing awaits a person.
   */
  awaiting_workspace: z.string().nullable(),
  /** The person who opened the operation has read this answer (`nxc done`, on its first thread): it awaits nobody. */
  done: z.boolean(),
  /** The workspace that opened the thread. */
  opened_in: z.string(),
  /**
   * Opened by a workspace this one neither is nor trusts (it reached this store through a shared stream): what it
   * asks of anyone here is its own claim. Its person is never one of this workspace's.
   */
  untrusted: z.boolean(),
  answered_by: z.string().nullable(),
  session: z
    .object({
      id: z.string(),
      handle: z.string(),
      depth: z.number().int(),
      turn: z.number().int(),
      running: z.boolean(),
      /** The persona declaration its newest turn started under (`sha256:` + hex, as spec.json records it); null before a turn. */
      declaration_hash: z.string().nullable(),
      /** Present when this workspace runs its sessions with no sandbox around them (`"sandbox": "off"` in .nxs/config.json). */
      sandbox: z.literal('off').optional(),
      /** Its last turn's run state and usage, where its runtime keeps a run-state file (the built-in runtime does). */
      last_run: LastRunSchema.nullable(),
    })
    .nullable(),
  messages: z.number().int(),
  updated: z.string(),
  working_copy: WorkingCopySchema.nullable(),
  /** Set when the workspace a remote commission was addressed to refused it: the stable code (STAMP_UNTRUSTED, ...). */
  rejected_code: z.string().nullable(),
  /** On a round's own thread (`nxc send '#name'`): the round with its steps, windows and passes. */
  round: RoundStatusSchema.optional(),
  /** On a step's thread: which round, step and pass it belongs to. */
  step: z.object({ round: z.string(), channel: z.string(), name: z.string(), pass: z.number().int() }).optional(),
  /** The refusing workspace's words for it, beside the code. */
  rejected_reason: z.string().nullable(),
});
export type StatusRow = z.infer<typeof StatusRowSchema>;

/**
 * Where an operation stands with the working-copy lease. `state`: `holds` the checkout, `queued` for it, or
 * `parked` (its work waits on a branch). `text` is the line a person reads; the other fields are what scripts use.
 */
export const OperationLeaseSchema = z.object({
  state: z.enum(['holds', 'queued', 'parked']),
  text: z.string(),
  /** The grant's fencing token while it holds (sessions get it as NXC_LEASE_TOKEN). */
  token: z.number().int().nullable(),
  /** When the lease stops refusing others if the holder is gone (ISO time); null while nothing is owed. */
  bound: z.string().nullable(),
  /** Queued: the place in line (1 is next) and the first thread of the operation holding the copy. */
  position: z.number().int().nullable(),
  behind: z.string().nullable(),
  /** Where its parked work is: the park branch and the commit on it (the branch head when nothing was uncommitted). */
  parked: z.object({ branch: z.string(), commit: z.string(), from_branch: z.string(), work: z.boolean() }).nullable(),
  /** PARK REFUSED: what must be finished before its work can be parked. */
  park_refused: z.string().nullable(),
  /** The thread whose unanswered hand-back keeps the copy while no thread is open. */
  held_for_handback: z.string().nullable(),
  /** When an unanswered hand-back loses the copy to the operation waiting for it (ISO time). */
  contention_deadline: z.string().nullable(),
  withdrawn: z.boolean(),
  /** Queued because an answer woke one of its sessions while its work was parked: first in line, ahead of commissions. */
  woken: z.boolean(),
});
export type OperationLease = z.infer<typeof OperationLeaseSchema>;

export const StatusOperationSchema = z.object({
  operation: z.string(),
  subject: z.string().nullable(),
  opener: z.string(),
  finished: z.boolean(),
  threads: z.array(StatusRowSchema),
  open: z.number().int(),
  /**
   * The turns its sessions have started together (`used`, with what a commission from another workspace
   * carried in), against the operation budget in force here: at `budget`, no further turn starts.
   */
  turns: z.object({ used: z.number().int(), budget: z.number().int() }),
  /**
   * Its tokens and cost (summed over every session, other workspaces' included) against the budgets in force
   * here. Absent from a node that predates usage.
   */
  usage: OperationUsageSchema.optional(),
  /** Its working-copy lease; null when the lease has nothing to say about it. */
  lease: OperationLeaseSchema.nullable(),
  /** Opened by a workspace this one neither is nor trusts: left out of the default listing, counted in `untrusted`. */
  untrusted: z.boolean(),
});

export const StatusReportSchema = z.object({
  workspace: z.object({ id: z.string(), name: z.string() }),
  operations: z.array(StatusOperationSchema),
  worker_names_a_working_copy: z.boolean(),
  worker_answers_liveness: z.boolean(),
  /**
   * Finished operations whose first thread awaits a person of this workspace and which this listing leaves
   * out (the default one lists open operations only; with `all` they are listed, and this is empty).
   */
  finished_awaiting: z.array(z.object({ operation: z.string(), subject: z.string().nullable(), opener: z.string() })),
  /** True when more finished operations await than `finished_awaiting` lists (the newest are listed). */
  finished_awaiting_more: z.boolean().optional(),
  /**
   * Operations opened by workspaces this one neither is nor trusts, which this listing leaves out (with `all`
   * they are listed, each marked `untrusted`, and this counts none): how many, and by which workspaces.
   */
  untrusted: z.object({ operations: z.number().int(), workspaces: z.array(z.string()) }),
  /** What this workspace's own turns spent in the current UTC day, against its daily ceiling. */
  spend_today: SpendTodaySchema.optional(),
  notes: z.array(z.string()),
});
export type StatusReport = z.infer<typeof StatusReportSchema>;

/** What `nxc withdraw` did: the chain it stopped, and the working copy's moves it set off. */
export const WithdrawResultSchema = z.object({
  withdrawn: z.literal(true),
  operation: z.string(),
  thread: z.string(),
  /** Threads discharged (each gets an answer written by the runtime saying it was withdrawn). */
  discharged: z.array(z.string()),
  /** Sessions asked to stop; their work is parked once the last of them is gone. */
  stopping: z.array(z.string()),
  /** Whether its work is already parked (nothing was running), and where. */
  parked: z.object({ branch: z.string(), commit: z.string() }).nullable(),
  /** Sessions the copy handed on to started. */
  woke: z.array(WokeSchema),
  warnings: z.array(WarningSchema),
});
export type WithdrawResult = z.infer<typeof WithdrawResultSchema>;
export type StatusOperation = z.infer<typeof StatusOperationSchema>;

export const ThreadMessageSchema = z.object({
  message: z.string(),
  author: z.string(),
  session: z.string().nullable(),
  effect: z.string(),
  substituted: z.boolean(),
  written_by: WrittenBySchema,
  ts: z.string(),
  text: z.string(),
  refs: z.object({ working_copy: WorkingCopySchema.nullable() }),
});

/** One turn of the thread's session as its end recorded it: how it ended and what it spent (null: nothing reported). */
export const ThreadTurnSchema = z.object({
  session: z.string(),
  turn: z.number().int(),
  outcome: z.string(),
  ts: z.string(),
  usage: TurnUsageSchema.nullable(),
});
export type ThreadTurn = z.infer<typeof ThreadTurnSchema>;

export const ThreadViewSchema = z.object({
  thread: StatusRowSchema,
  operation: z.string(),
  messages: z.array(ThreadMessageSchema),
  /** Absent from a node that predates usage. */
  turns: z.array(ThreadTurnSchema).optional(),
});
export type ThreadView = z.infer<typeof ThreadViewSchema>;

/** The classes that mean a trigger failed after its message was durably written. */
export const TRIGGER_FAILED_CLASSES: readonly WarningClass[] = ['step_skipped', 'step_unanswered', 'requester_not_woken'];

/**
 * The exit code of a command whose message was written but whose trigger failed: not 0 (something
 * is not in motion that should be), not 1 (nothing of ours failed), not 2 (something was written).
 */
export const TRIGGER_FAILED_EXIT = 3;

/** The exit code a receipt's warnings call for. */
export function exitCodeOf(warnings: readonly Warning[]): 0 | typeof TRIGGER_FAILED_EXIT {
  return warnings.some((w) => TRIGGER_FAILED_CLASSES.includes(w.class)) ? TRIGGER_FAILED_EXIT : 0;
}

/** How a wait on a thread ends: answered, escalated, refused by the workspace addressed, or still open when the time ran out. */
export type WaitOutcome = 'answered' | 'escalated' | 'refused' | 'timed_out';

/** What an answered thread means for whoever waited (null while it is open): a refusal is told apart from an escalation. */
export function waitOutcome(row: Pick<StatusRow, 'state' | 'escalated' | 'rejected_code'>): Exclude<WaitOutcome, 'timed_out'> | null {
  if (row.state !== 'answered') return null;
  if (row.rejected_code) return 'refused';
  return row.escalated ? 'escalated' : 'answered';
}
