// The shapes around a run: what it is given, what it reports as it goes, how it ends, and its small helpers.
import type { PendingCall, RunLimits, RunStatus, RunUsage, TerminalStatus, ToolCallBlock } from '../../../protocol/runs.js';
import type { CommandLeases } from './lease.js';
import type { ModelClient, ProviderFailure } from './model.js';
import type { ToolHost, ToolPolicy } from './tools/index.js';

export type RunIdentity = { run_id: string; role: string; session: string | null; turn: number | null; thread: string | null };

export type RunEvent =
  | { type: 'status'; status: RunStatus; reason: string | null }
  | { type: 'text'; delta: string }
  | { type: 'request'; call: number; attempt: number; tools: string[] }
  | { type: 'retry'; attempt: number; error: string; waitMs: number }
  | { type: 'tool_start'; call: PendingCall }
  /** A call the declaration, the person or the budget did not let run. */
  | { type: 'tool_refused'; call: PendingCall; reason: string }
  | { type: 'tool_end'; call: PendingCall; is_error: boolean; content: string };

/** Asks a person about one call; only an interactive run has one. */
export type Approver = (call: PendingCall, reason: string) => Promise<boolean>;

export type RunOptions = {
  identity: RunIdentity;
  /** The working directory the tools act in. */
  root: string;
  files: { journal: string; state: string };
  system: string;
  /** The first user message. Ignored when resuming. */
  prompt: string;
  client: ModelClient;
  /** Ignored when resuming: a resumed run keeps the limits it started with. */
  limits: RunLimits;
  policy: ToolPolicy;
  leases: CommandLeases;
  revision: () => Promise<string>;
  env: NodeJS.ProcessEnv;
  approve?: Approver | undefined;
  onEvent?: ((e: RunEvent) => void) | undefined;
  signal?: AbortSignal | undefined;
  now?: (() => number) | undefined;
  /** How long to wait before retry `attempt` (1 = the first retry); the provider's retry-after wins when given. */
  backoffMs?: ((attempt: number, retryAfterMs: number | null) => number) | undefined;
  resume?: boolean | undefined;
  /** When the run's clock started (default now): a session turn counts from its launch. */
  startedAt?: number | undefined;
  heartbeatMs?: number | undefined;
  /** Where tool calls run: the turn's sandboxed tool host; absent, in this process. */
  toolHost?: ToolHost | undefined;
};

export type RunResult = {
  run_id: string;
  status: TerminalStatus;
  reason: string | null;
  /** The answer, or the escalation's words when `escalate`. */
  output: string | null;
  escalate: boolean;
  usage: RunUsage;
  limits: RunLimits;
  started_at: number;
  ended_at: number;
  journal: string;
  /** The provider failure the run ended on (or the last one before it ended otherwise); null when none. */
  error: ProviderFailure | null;
};

export function defaultBackoff(attempt: number, retryAfterMs: number | null): number {
  if (retryAfterMs !== null) return Math.min(retryAfterMs, 60_000);
  const base = 500 * 2 ** (attempt - 1);
  return Math.min(8_000, base / 2 + Math.random() * (base / 2));
}

/** How often a running run's state file is refreshed with its usage; status changes are written at once. */
export const PROGRESS_INTERVAL_MS = 250;

/** Thrown inside the loop to end the run with a status other than completed. */
export class Stop extends Error {
  constructor(
    readonly status: Exclude<TerminalStatus, 'completed'>,
    readonly reason: string,
    /** The provider failure that ended the run, when one did. */
    readonly error: ProviderFailure | null = null,
  ) {
    super(reason);
  }
}

/** One line naming a call, for people and for the pending-call list. */
export function summary(call: ToolCallBlock): string {
  const input = call.input as Record<string, unknown> | null;
  const detail = input === null ? '(malformed arguments)' : String(input['command'] ?? input['path'] ?? input['pattern'] ?? '');
  return `${call.name} ${detail.length > 120 ? `${detail.slice(0, 117)}...` : detail}`.trim();
}

