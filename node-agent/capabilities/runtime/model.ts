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

/**
 * How a provider request failed, by code: PROVIDER_UNREACHABLE when no answer came (the connection failed
 * or timed out), PROVIDER_ERROR when the provider answered with an error (an HTTP status, an error event
 * in the stream) or the request failed otherwise.
 */
export type ProviderErrorCode = 'PROVIDER_UNREACHABLE' | 'PROVIDER_ERROR';

/** A provider failure as a run reports it: its code, its words, and the base URL that was called. */
export type ProviderFailure = { code: ProviderErrorCode; message: string; url: string | null };

/** A provider request that failed. `transient` ones are worth the same request again. */
export class ProviderError extends Error {
  readonly code: ProviderErrorCode;
  /** The base URL the request went to, without credentials; null when not known. */
  readonly url: string | null;
  constructor(
    message: string,
    readonly transient: boolean,
    readonly retryAfterMs: number | null,
    readonly aborted: boolean,
    options?: { cause?: unknown; code?: ProviderErrorCode; url?: string | null },
  ) {
    super(message, options);
    this.name = 'ProviderError';
    this.code = options?.code ?? 'PROVIDER_ERROR';
    this.url = options?.url ?? null;
  }

  failure(): ProviderFailure {
    return { code: this.code, message: this.message, url: this.url };
  }
}

/**
 * A base URL fit to print: any user name, password, query or fragment (where a key could be carried) is
 * left out. One that does not parse is shown only by its scheme and host-like start.
 */
export function printableUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url.replace(/[?#].*$/, '').replace(/\/\/[^/@]*@/, '//');
  }
  if (u.username === '' && u.password === '' && u.search === '' && u.hash === '') return url;
  u.username = '';
  u.password = '';
  u.search = '';
  u.hash = '';
  return u.toString();
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
 * An SDK error's class name. A bundler that meets two classes of one name (both SDKs define
 * `APIConnectionError`, ...) renames one with a number at its end; the SDKs keep the true name in
 * `_errorName`, and the number is dropped when they do not.
 */
function errorKind(e: { name?: string; constructor?: { name?: string; _errorName?: unknown } } | null | undefined): string {
  const own = e?.constructor?._errorName;
  if (typeof own === 'string') return own;
  return (e?.constructor?.name ?? e?.name ?? '').replace(/\d+$/, '');
}

/**
 * Sorts an error thrown by either SDK. Both SDKs share the same class names and fields
 * (`status`, `headers`, `error`), so one reading serves both.
 * `url`: the base URL the client called, named in every failure but an abort, so a wrong base_url or a
 * provider that fails reads at once. `secret`: the key the request carried, never repeated in the words
 * (a provider may echo what it was sent).
 */
export function classifyProviderError(err: unknown, url?: string, secret?: string): ProviderError {
  if (err instanceof ProviderError) return err;
  const at = url === undefined ? null : printableUrl(url);
  const where = at ?? 'the provider';
  const e = err as { name?: string; constructor?: { name?: string; _errorName?: unknown }; status?: unknown; headers?: unknown; error?: unknown; message?: string };
  const kind = errorKind(e);
  const raw = e?.message ?? String(err);
  const message = secret !== undefined && secret.length >= 4 ? raw.split(secret).join('[key]') : raw;
  const opts = (code: ProviderErrorCode) => ({ cause: err, code, url: at });
  if (kind === 'APIUserAbortError' || e?.name === 'AbortError') return new ProviderError('the request was aborted', false, null, true, opts('PROVIDER_ERROR'));
  if (kind === 'APIConnectionTimeoutError') return new ProviderError(`the request to ${where} timed out`, true, null, false, opts('PROVIDER_UNREACHABLE'));
  if (kind === 'APIConnectionError') return new ProviderError(`the connection to ${where} failed: ${message}`, true, null, false, opts('PROVIDER_UNREACHABLE'));
  const status = typeof e?.status === 'number' ? e.status : null;
  if (status !== null) return new ProviderError(`${where} answered HTTP ${status}: ${message}`, TRANSIENT_STATUS.has(status), retryAfter(e.headers), false, opts('PROVIDER_ERROR'));
  // An error event inside a stream carries no HTTP status, only the error's type.
  const body = e?.error as { error?: { type?: string }; type?: string } | undefined;
  const type = body?.error?.type ?? body?.type;
  if (typeof type === 'string') return new ProviderError(`${where} sent ${type}: ${message}`, TRANSIENT_ERROR_TYPES.has(type), null, false, opts('PROVIDER_ERROR'));
  return new ProviderError(`the request to ${where} failed: ${message}`, false, null, false, opts('PROVIDER_ERROR'));
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
