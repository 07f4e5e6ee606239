// What the run loop needs from a model provider, whichever API is behind it, and how provider failures are sorted.
import type { Message, ToolCallBlock } from '../../../protocol/runs.js';

/** A tool as offered to the model: a name, what it is for, and a JSON Schema of its input. */
export type ToolSpec = { name: string; description: string; input_schema: Record<string, unknown> };

export type ModelRequest = {
  system: string;
  messages: Message[];
  /** Empty: the request offers no tools at all. */
  tools: ToolSpec[];
  signal: AbortSignal;
  /** The provider request gives up after this long: what is left of the run's deadline. */
  timeoutMs: number;
  /** Streamed text as it arrives, for a person watching. */
  onText?: (delta: string) => void;
};

export type AssistantBlock = { type: 'text'; text: string } | ToolCallBlock;

export type ModelReply = {
  content: AssistantBlock[];
  /** The provider's own count for this request; null when it sent none. */
  usage: { input: number; output: number } | null;
  stop: string | null;
};

export interface ModelClient {
  readonly provider: 'anthropic' | 'openai';
  readonly model: string;
  call(req: ModelRequest): Promise<ModelReply>;
}

/** A provider request that failed. `transient` ones are worth the same request again. */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly transient: boolean,
    readonly retryAfterMs: number | null,
    readonly aborted: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ProviderError';
  }
}

// Overload, rate limit, timeouts and the server's own failures pass; a bad request or a bad key does not.
const TRANSIENT_STATUS = new Set([408, 409, 429, 500, 502, 503, 504, 529]);
const TRANSIENT_ERROR_TYPES = new Set(['overloaded_error', 'api_error', 'rate_limit_error', 'timeout_error']);

function retryAfter(headers: unknown): number | null {
  if (headers === null || typeof headers !== 'object' || typeof (headers as Headers).get !== 'function') return null;
  const h = headers as Headers;
  const ms = Number(h.get('retry-after-ms'));
  if (h.get('retry-after-ms') !== null && Number.isFinite(ms) && ms >= 0) return ms;
  const s = h.get('retry-after');
  if (s === null) return null;
  const secs = Number(s);
  if (Number.isFinite(secs) && secs >= 0) return secs * 1000;
  const at = Date.parse(s);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

/**
 * Sorts an error thrown by either SDK (`url`: the base URL the client called, named in a connection failure).
 * Both SDKs share the same class names and fields
 * (`status`, `headers`, `error`), so one reading serves both.
 */
export function classifyProviderError(err: unknown, url?: string): ProviderError {
  if (err instanceof ProviderError) return err;
  // A connection that failed or timed out says where it was going: a wrong base_url reads at once.
  const at = url === undefined ? '' : ` (${url})`;
  const e = err as { name?: string; constructor?: { name?: string }; status?: unknown; headers?: unknown; error?: unknown; message?: string };
  const kind = e?.constructor?.name ?? e?.name ?? '';
  const message = e?.message ?? String(err);
  if (kind === 'APIUserAbortError' || e?.name === 'AbortError') return new ProviderError('the request was aborted', false, null, true, { cause: err });
  if (kind === 'APIConnectionTimeoutError') return new ProviderError(`the request timed out${at}`, true, null, false, { cause: err });
  if (kind === 'APIConnectionError') return new ProviderError(`the connection failed${at}: ${message}`, true, null, false, { cause: err });
  const status = typeof e?.status === 'number' ? e.status : null;
  if (status !== null) return new ProviderError(`HTTP ${status}: ${message}`, TRANSIENT_STATUS.has(status), retryAfter(e.headers), false, { cause: err });
  // An error event inside a stream carries no HTTP status, only the error's type.
  const body = e?.error as { error?: { type?: string }; type?: string } | undefined;
  const type = body?.error?.type ?? body?.type;
  if (typeof type === 'string') return new ProviderError(`${type}: ${message}`, TRANSIENT_ERROR_TYPES.has(type), null, false, { cause: err });
  return new ProviderError(`${message}${at}`, false, null, false, { cause: err });
}

/** Parses tool arguments the model sent as text. Malformed JSON is kept, not thrown: the loop asks for a correction. */
export function toolCall(id: string, name: string, raw: string): ToolCallBlock {
  if (raw.trim() === '') return { type: 'tool_call', id, name, input: {} };
  try {
    const input: unknown = JSON.parse(raw);
    if (input !== null && typeof input === 'object' && !Array.isArray(input)) return { type: 'tool_call', id, name, input };
  } catch {
    // fall through: kept as malformed
  }
  return { type: 'tool_call', id, name, input: null, raw };
}
