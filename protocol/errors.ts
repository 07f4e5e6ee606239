// The closed set of error codes, and how each one surfaces on every host.

/**
 * Every refusal and failure carries one of these codes. The table maps each
 * code to its CLI exit code and HTTP status; a code without a row does not
 * compile. Refusals of bad input exit 2; failures of our own exit 1.
 */
export const ERROR_TABLE = {
  USAGE: { exit: 2, http: 400, summary: 'the command line is not valid' },
  NOT_A_WORKSPACE: { exit: 2, http: 404, summary: 'no workspace here' },
  PERSONA_INVALID: { exit: 2, http: 422, summary: 'a persona declaration is not valid' },
  CHANNEL_INVALID: { exit: 2, http: 422, summary: 'a channel declaration is not valid' },
  REWORK_NOT_DECLARED: { exit: 2, http: 409, summary: '--needs-rework on a thread whose channel step declares no rework' },
  UNKNOWN_RECIPIENT: { exit: 2, http: 404, summary: 'no persona or person by that name' },
  AMBIGUOUS_RECIPIENT: { exit: 2, http: 409, summary: 'a short workspace id fits more than one workspace' },
  UNKNOWN_THREAD: { exit: 2, http: 404, summary: 'no such thread' },
  UNKNOWN_SESSION: { exit: 2, http: 404, summary: 'the calling session is not known to this workspace' },
  NO_TRANSCRIPT: { exit: 2, http: 404, summary: 'no transcript of that session turn on this machine' },
  EMPTY_MESSAGE: { exit: 2, http: 400, summary: 'a message needs text' },
  MESSAGE_TOO_LARGE: { exit: 2, http: 413, summary: 'the message is larger than the limit' },
  BAD_TEXT: { exit: 2, http: 400, summary: 'the text holds a character no store can keep (NUL or an unpaired surrogate)' },
  NOT_A_PARTY: { exit: 2, http: 403, summary: 'this workspace neither opened the thread nor is it addressed to it' },
  CLOCK_EXHAUSTED: { exit: 1, http: 500, summary: "the log's Lamport clock is at its limit; no op can be written" },
  BAD_ENVIRONMENT: { exit: 2, http: 400, summary: 'an NXC_* variable is not valid' },
  SANDBOX_UNAVAILABLE: { exit: 1, http: 503, summary: 'no OS sandbox can be had here to run a session in' },
  SANDBOX_REFUSED: { exit: 2, http: 422, summary: 'a declaration asks the sandbox for what it cannot give' },
  DEPTH_EXCEEDED: { exit: 2, http: 409, summary: 'the spawn chain is at its depth cap' },
  REPEATED_COMMISSION: { exit: 2, http: 409, summary: 'the same commission, answered three times already in this operation, is refused as a loop' },
  SUB_ROUND_OPEN: { exit: 2, http: 409, summary: 'a plain reply while your own commissioned round is open' },
  REPLY_ONLY: { exit: 2, http: 403, summary: 'this session may only reply' },
  NODE_RUNNING: { exit: 2, http: 409, summary: 'a node already runs for this NEXUS_HOME' },
  NODE_NOT_RUNNING: { exit: 2, http: 404, summary: 'no node runs for this NEXUS_HOME' },
  NOT_SERVED: { exit: 2, http: 404, summary: 'the node does not serve that workspace' },
  UNAUTHORIZED: { exit: 2, http: 401, summary: 'the operator or stream token is missing or wrong' },
  BAD_REQUEST: { exit: 2, http: 400, summary: 'the request is not valid' },
  STREAM_EXISTS: { exit: 2, http: 409, summary: 'a relay stream by that name already exists' },
  UNKNOWN_STREAM: { exit: 2, http: 404, summary: 'no relay stream by that name' },
  TRUST_KEY_MISMATCH: { exit: 2, http: 422, summary: 'the key given is not the key of that workspace id' },
  UNKNOWN_TRUST: { exit: 2, http: 404, summary: 'no trust entry by that workspace id or alias' },
  STAMP_MALFORMED: { exit: 2, http: 400, summary: 'the commission stamp is not a well-formed stamp' },
  STAMP_UNTRUSTED: { exit: 2, http: 403, summary: 'the commission stamp is from a workspace not trusted here' },
  STAMP_FORGED: { exit: 2, http: 403, summary: 'the commission stamp does not verify with the trusted key' },
  STAMP_WRONG_AUDIENCE: { exit: 2, http: 403, summary: 'the commission stamp is addressed to another workspace' },
  STAMP_EXPIRED: { exit: 2, http: 401, summary: 'the commission stamp has expired' },
  STAMP_NOT_YET_VALID: { exit: 2, http: 401, summary: 'the commission stamp is issued in the future' },
  STAMP_REPLAYED: { exit: 2, http: 409, summary: 'the commission stamp was already used' },
  UNKNOWN_PERSONA: { exit: 2, http: 404, summary: 'the workspace addressed declares no persona by that role' },
  NOT_ADDRESSABLE: { exit: 2, http: 403, summary: 'the persona is not declared addressable by other workspaces' },
  WITHDRAW_BY_SESSION: { exit: 2, http: 403, summary: 'a session may not withdraw a commission; it escalates instead' },
  WITHDRAW_NOT_SENDER: { exit: 2, http: 403, summary: 'only the person who sent the first commission may withdraw it' },
  WITHDRAW_NOT_FIRST_THREAD: { exit: 2, http: 400, summary: "a withdrawal names the operation's first thread" },
  DONE_NOT_OPENER: { exit: 2, http: 403, summary: 'only the person who opened an operation, in the workspace that opened it, may mark its result read' },
  DONE_NOT_ANSWERED: { exit: 2, http: 409, summary: "the operation's first thread has no answer to mark read yet" },
  LEASE_FENCED: { exit: 1, http: 409, summary: 'the working-copy lease has moved on: this holder may no longer change the checkout' },
  GIT_FAILED: { exit: 1, http: 500, summary: 'a git command failed' },
  REVISION_CONFLICT: { exit: 1, http: 409, summary: 'the working copy changed since it was last inspected' },
  LEASE_HELD: { exit: 1, http: 409, summary: 'another editor holds the working copy for a command' },
  LEASE_LOST: { exit: 1, http: 409, summary: 'a command lease was taken over or removed before it was released' },
  RUNTIME_UNCONFIGURED: { exit: 2, http: 422, summary: 'the agent runtime cannot start: a key or setting is missing' },
  JOURNAL_INVALID: { exit: 2, http: 422, summary: 'a run journal cannot be read back' },
  RELAY_UNREACHABLE: { exit: 1, http: 502, summary: 'the relay did not answer' },
  PROVIDER_UNREACHABLE: { exit: 1, http: 502, summary: 'the model provider could not be reached: the connection to its base URL failed or timed out' },
  PROVIDER_ERROR: { exit: 1, http: 502, summary: 'the model provider answered a request with an error (an HTTP status or an error event), or the request failed otherwise' },
  RELAY_CERT_MISMATCH: { exit: 1, http: 502, summary: "the relay's TLS certificate is not the one this binding is pinned to" },
  ADDRESS_IN_USE: { exit: 1, http: 503, summary: 'the address to listen on is taken by another process' },
  LISTEN_FAILED: { exit: 1, http: 503, summary: 'the address could not be listened on' },
  STORE_BUSY: { exit: 1, http: 503, summary: 'the workspace store is held by another process' },
  STORE_FAILED: { exit: 1, http: 500, summary: 'the workspace store could not be opened' },
  CONFIG_INVALID: { exit: 2, http: 422, summary: 'a file under .nxs/ (config.json, trust.json) is not readable or not valid' },
  ALREADY_APPLIED: {
    exit: 1,
    http: 409,
    summary: 'a retried request was applied by its first attempt, whose answer was lost (the node stopped before giving it): nothing more was written',
  },
  INTERNAL: { exit: 1, http: 500, summary: 'an internal failure' },
} as const satisfies Record<string, { exit: 1 | 2; http: number; summary: string }>;

export type ErrorCode = keyof typeof ERROR_TABLE;

export const ERROR_CODES = Object.keys(ERROR_TABLE) as ErrorCode[];

/** The one error class that crosses module borders. Tests assert `code`, never the prose. */
export class NexusError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  /** `options.cause` keeps the error this one reports (an OS error, a driver's), for logs and for callers that branch on it. */
  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NexusError';
    this.code = code;
    this.details = details;
  }

  get exitCode(): 1 | 2 {
    return ERROR_TABLE[this.code].exit;
  }

  toJSON(): { code: ErrorCode; message: string; details?: Record<string, unknown> } {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

export function isNexusError(err: unknown): err is NexusError {
  return err instanceof NexusError;
}

/**
 * The message of a failure that is not ours to name, fit to show a user. A failed store query's own
 * message holds its SQL and parameters (a signed op, a message's text), and the database's reason may
 * quote a value: only the SQLSTATE code is kept (NEXUS_DEBUG=1 prints the whole error).
 */
export function userMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const query = 'query' in err && 'params' in err;
  if (query || /^Failed query:/.test(err.message)) {
    const code = (err.cause as { code?: unknown } | undefined)?.code;
    return `a store query failed${typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? ` (SQLSTATE ${code})` : ''}; run with NEXUS_DEBUG=1 for the database's own message`;
  }
  return err.message;
}

/** `err` as a NexusError: itself when it is one, else INTERNAL with {@link userMessage} (the original kept as the cause). */
export function internalError(err: unknown): NexusError {
  return isNexusError(err) ? err : new NexusError('INTERNAL', userMessage(err), undefined, { cause: err });
}
