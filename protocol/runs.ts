// The shape of an agent run's budget, its state file and its journal: what the runtime writes for others to read.
import { z } from 'zod';

/** Every status a run can be in. Only an interactive run ever waits for approval. */
export const RUN_STATUSES = [
  'running',
  'waiting_approval',
  'completed',
  'failed',
  'cancelled',
  'timed_out',
  'budget_exhausted',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** The statuses a run ends in; nothing moves it out of one of these. */
export const TERMINAL_STATUSES = ['completed', 'failed', 'cancelled', 'timed_out', 'budget_exhausted'] as const;
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

export function isTerminal(status: RunStatus): status is TerminalStatus {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

/** Below this an inline tool output is too short to show what happened, so it is the floor. */
export const MIN_TOOL_OUTPUT_CHARS = 256;

/** `nxs agent run`'s exit code when the run ended other than completed (failed, timed out, out of budget, cancelled, handed back). */
export const RUN_NOT_COMPLETED_EXIT = 4;

/** What a run may spend when its persona says nothing. `max_tokens: null` means unlimited. */
export const BUDGET_DEFAULTS = {
  max_model_calls: 20,
  max_tool_calls: 10,
  max_tokens: null,
  retries: 2,
  max_tool_output_chars: 16_000,
} as const;

const count = (floor: number) => z.number().int('must be a whole number').min(floor, `must be at least ${floor}`);

/**
 * The `budget:` key of a persona. Every field is optional; an absent one takes its default.
 * `retries` is two separate allowances: transient provider retries per request, and
 * corrections of malformed model output across the whole run.
 */
export const BudgetDeclarationSchema = z.strictObject({
  max_model_calls: count(1).max(10_000).optional(),
  max_tool_calls: count(0).max(100_000).optional(),
  max_tokens: count(1).nullable().optional(),
  retries: count(0).max(20).optional(),
  max_tool_output_chars: count(MIN_TOOL_OUTPUT_CHARS).max(10_000_000).optional(),
});
export type BudgetDeclaration = z.infer<typeof BudgetDeclarationSchema>;

/** The limits a run started with; a resumed run keeps these, never the persona's current ones. */
export const RunLimitsSchema = z.object({
  timeout_ms: z.number().int().positive(),
  /** Wall clock, ms since the epoch: the deadline counts time spent before a resume. */
  deadline_at: z.number().int(),
  max_model_calls: z.number().int().positive(),
  max_tool_calls: z.number().int().nonnegative(),
  max_tokens: z.number().int().positive().nullable(),
  retries: z.number().int().nonnegative(),
  max_tool_output_chars: z.number().int().min(MIN_TOOL_OUTPUT_CHARS),
  /**
   * The tokens its operation had left under its `max_tokens` budget when the turn started (NXC_OPERATION_TOKENS_LEFT):
   * the run stops at its next model call once it has spent them. Absent: the operation's tokens are not capped.
   */
  operation_tokens_left: z.number().int().nonnegative().optional(),
});
export type RunLimits = z.infer<typeof RunLimitsSchema>;

/** What a run has spent. Model calls include retries and corrections; tokens come from the provider. */
export const RunUsageSchema = z.object({
  model_calls: z.number().int().nonnegative(),
  tool_calls: z.number().int().nonnegative(),
  tokens_in: z.number().int().nonnegative(),
  tokens_out: z.number().int().nonnegative(),
  corrections: z.number().int().nonnegative(),
});
export type RunUsage = z.infer<typeof RunUsageSchema>;

export const EMPTY_USAGE: RunUsage = { model_calls: 0, tool_calls: 0, tokens_in: 0, tokens_out: 0, corrections: 0 };

export const RUNTIME_KINDS = ['builtin', 'claude-code', 'codex'] as const;
export type RuntimeKind = (typeof RUNTIME_KINDS)[number];

export const PendingCallSchema = z.object({ id: z.string(), tool: z.string(), summary: z.string() });
export type PendingCall = z.infer<typeof PendingCallSchema>;

/**
 * The run-state file (`turn-<n>.run.json` in a session folder, `run.json` in a foreground
 * run's folder). Rewritten atomically at every status change and after every model or tool
 * call, so a status command can show a run that is still going.
 */
export const RunStateFileSchema = z.object({
  version: z.literal(1),
  run_id: z.string(),
  runtime: z.enum(RUNTIME_KINDS),
  provider: z.string().nullable(),
  model: z.string(),
  role: z.string(),
  session: z.string().nullable(),
  turn: z.number().int().nullable(),
  thread: z.string().nullable(),
  status: z.enum(RUN_STATUSES),
  /** Why the run ended as it did, in words; null while running and when completed. */
  reason: z.string().nullable(),
  started_at: z.string(),
  updated_at: z.string(),
  ended_at: z.string().nullable(),
  limits: RunLimitsSchema,
  usage: RunUsageSchema,
  /** What the run cost in US dollars, when its runtime reports it (claude-code's `total_cost_usd`); absent otherwise. */
  cost_usd: z.number().nonnegative().optional(),
  journal: z.string(),
  pending_calls: z.array(PendingCallSchema),
  /** The final answer when there is one. */
  output: z.string().nullable(),
  pid: z.number().int(),
});
export type RunStateFile = z.infer<typeof RunStateFileSchema>;

export function runStateFileName(turn: number): string {
  return `turn-${turn}.run.json`;
}

export function journalFileName(turn: number): string {
  return `turn-${turn}.journal.jsonl`;
}

// The conversation as the runtime keeps it, independent of any provider's wire format.
export const TextBlockSchema = z.object({ type: z.literal('text'), text: z.string() });
export const ToolCallBlockSchema = z.object({
  type: z.literal('tool_call'),
  id: z.string(),
  name: z.string(),
  /** null when the model's arguments were not valid JSON; `raw` then holds what it sent. */
  input: z.unknown(),
  raw: z.string().optional(),
});
export const ToolResultBlockSchema = z.object({
  type: z.literal('tool_result'),
  id: z.string(),
  content: z.string(),
  is_error: z.boolean(),
});
export const BlockSchema = z.discriminatedUnion('type', [TextBlockSchema, ToolCallBlockSchema, ToolResultBlockSchema]);
export const MessageSchema = z.object({ role: z.enum(['user', 'assistant']), content: z.array(BlockSchema) });
export type Block = z.infer<typeof BlockSchema>;
export type ToolCallBlock = z.infer<typeof ToolCallBlockSchema>;
export type Message = z.infer<typeof MessageSchema>;

/**
 * One line of a run's journal (JSONL). `message` lines rebuild the conversation on resume;
 * `usage` lines carry the running totals; the others record what happened, for people.
 */
export const JournalEntrySchema = z.discriminatedUnion('t', [
  z.object({
    t: z.literal('start'),
    ts: z.string(),
    run_id: z.string(),
    started_at: z.string(),
    limits: RunLimitsSchema,
    system: z.string(),
    runtime: z.enum(RUNTIME_KINDS),
    provider: z.string().nullable(),
    model: z.string(),
  }),
  z.object({ t: z.literal('resume'), ts: z.string() }),
  z.object({ t: z.literal('message'), ts: z.string(), message: MessageSchema }),
  z.object({ t: z.literal('request'), ts: z.string(), call: z.number().int(), attempt: z.number().int(), tools: z.array(z.string()) }),
  z.object({ t: z.literal('retry'), ts: z.string(), call: z.number().int(), attempt: z.number().int(), error: z.string() }),
  z.object({ t: z.literal('tool_call'), ts: z.string(), id: z.string(), name: z.string(), decision: z.string(), lease: z.string().nullable() }),
  z.object({ t: z.literal('tool_done'), ts: z.string(), id: z.string(), content: z.string(), is_error: z.boolean(), artifact: z.string().nullable() }),
  z.object({ t: z.literal('correction'), ts: z.string(), count: z.number().int(), reason: z.string() }),
  z.object({ t: z.literal('usage'), ts: z.string(), usage: RunUsageSchema }),
  z.object({ t: z.literal('status'), ts: z.string(), status: z.enum(RUN_STATUSES), reason: z.string().nullable() }),
]);
export type JournalEntry = z.infer<typeof JournalEntrySchema>;
