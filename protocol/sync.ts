// The sync wire protocol between nodes and the relay: frames each way, limits, error codes and their ws close codes.
import { z } from 'zod';
import { OP_ID_RE, OpId, SESSION_ID_RE, SessionId, THREAD_ID_RE, ThreadId, WORKSPACE_ID_RE, WorkspaceId } from './ids.js';
import { STORABLE_REASONS } from './storable.js';

/**
 * The version both sides put in their first frame (`hello`, `welcome`). 2: every op carries `key` and
 * `sig` (ops are signed over their exact bytes); a node or relay of version 1 is refused at hello.
 */
export const SYNC_PROTOCOL = 2;

/**
 * What a relay can do beyond protocol 2, named in `welcome.features` (a relay that names none can do
 * none of them; a node never asks an older relay for them). `history`: `hello.join` starts the live
 * feed at the head, and `fetch` frames are answered with `history` frames, filtered by author
 * workspace when asked. Older nodes never send either, and never see a `history` frame.
 */
export const SYNC_FEATURES = ['history'] as const;
/** A feature a relay may name in `welcome`. */
export type SyncFeature = (typeof SYNC_FEATURES)[number];

/** Where the sync socket lives on a relay. */
export const SYNC_PATH = '/v1/sync';

/** A stream's name, as the operator chose it: `^[a-z0-9][a-z0-9_-]{0,63}$`. */
export const StreamName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/)
  .brand<'StreamName'>();
/** A validated stream name. */
export type StreamName = z.infer<typeof StreamName>;

// The patterns of an op's members, shared by the schemas and by isPlainOp.
const NODE_NAME_RE = /^[\x21-\x7e]{1,128}$/;
const KIND_RE = /^[a-z_]+\.[a-z_]+$/;
const KEY_TEXT_RE = /^[A-Za-z0-9_-]{43}$/;
const SIG_TEXT_RE = /^[A-Za-z0-9_-]{86}$/;

/** How a node names itself in `hello` (its origin): printable, no spaces, at most 128 characters. */
export const NodeName = z.string().regex(NODE_NAME_RE);

/** A per-stream sequence number; 0 means "before the first op". */
export const Seq = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/**
 * The signed part of an op: the envelope checked strictly; `body` only as a JSON object and `kind`
 * only by shape, so a relay forwards kinds newer than itself. `key` names the Ed25519 public key that
 * signs the op (unpadded base64url of its 32 raw bytes).
 */
export const SignedOpSchema = z.strictObject({
  id: OpId,
  workspace: WorkspaceId,
  origin: NodeName,
  lamport: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  ts: z.iso.datetime({ offset: true }),
  kind: z.string().regex(KIND_RE),
  operation: ThreadId,
  thread: ThreadId.nullable(),
  session: SessionId.nullable(),
  body: z.record(z.string(), z.unknown()),
  key: z.string().regex(KEY_TEXT_RE),
});

/**
 * An op as it travels: the signed part plus `sig`, the unpadded base64url of a 64-byte Ed25519
 * signature. The relay checks only this shape; receivers verify the signature over the op's exact
 * text (crypto/opsig.ts: the text without its final `,"sig":"..."` member).
 */
export const WireOpSchema = SignedOpSchema.extend({ sig: z.string().regex(SIG_TEXT_RE) });

/** A validated wire op. */
export type WireOp = z.infer<typeof WireOpSchema>;

/** A UTC time as Date.prototype.toISOString writes it (how ops are stamped), checked again by a round trip. */
const ISO_UTC_MS_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** The members of a signed op (crypto/opsig.ts SIGNED_FIELDS; the protocol cannot import crypto). */
const SIGNED_KEYS = 11;

/**
 * True when `v` is an op as this code writes them and SignedOpSchema (with `sig`: WireOpSchema) would
 * accept it as it is: every op on the hot paths (a relay's pushes, a node's catch-up) is checked here
 * at a fraction of zod's cost. Stricter than the schemas (a time must be written with milliseconds in
 * UTC), never looser; false says nothing, and the caller asks the schema for the verdict and its message.
 */
export function isPlainOp(v: unknown, withSig: boolean): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  if (Object.keys(o).length !== SIGNED_KEYS + (withSig ? 1 : 0)) return false;
  const { id, workspace, origin, lamport, ts, kind, operation, thread, session, body, key } = o;
  if (typeof id !== 'string' || !OP_ID_RE.test(id)) return false;
  if (typeof workspace !== 'string' || !WORKSPACE_ID_RE.test(workspace)) return false;
  if (typeof origin !== 'string' || !NODE_NAME_RE.test(origin)) return false;
  if (typeof lamport !== 'number' || !Number.isSafeInteger(lamport) || lamport < 1) return false;
  if (typeof ts !== 'string' || !ISO_UTC_MS_RE.test(ts) || !sameInstantText(ts)) return false;
  if (typeof kind !== 'string' || !KIND_RE.test(kind)) return false;
  if (typeof operation !== 'string' || !THREAD_ID_RE.test(operation)) return false;
  if (thread !== null && (typeof thread !== 'string' || !THREAD_ID_RE.test(thread))) return false;
  if (session !== null && (typeof session !== 'string' || !SESSION_ID_RE.test(session))) return false;
  if (typeof body !== 'object' || body === null || Array.isArray(body) || Object.getPrototypeOf(body) !== Object.prototype) return false;
  if (typeof key !== 'string' || !KEY_TEXT_RE.test(key)) return false;
  if (!withSig) return true;
  const sig = o['sig'];
  return typeof sig === 'string' && SIG_TEXT_RE.test(sig);
}

/** The text names a real instant and is that instant's own ISO text (so no 31 February, no hour 24). */
function sameInstantText(ts: string): boolean {
  const t = Date.parse(ts);
  return Number.isFinite(t) && new Date(t).toISOString() === ts;
}

/** What a relay enforces, published in `/v1/info` and in `welcome`. Sizes are UTF-8 bytes. */
export const LimitsSchema = z.object({
  /** Largest frame either side may send. */
  max_frame_bytes: z.number().int().positive(),
  /** Most ops in one `push`. */
  max_ops_per_push: z.number().int().positive(),
  /** Largest single op (its JSON text). */
  max_op_bytes: z.number().int().positive(),
  /** Most ops in one `ops` frame of the backlog (frames also stay under `max_frame_bytes`). */
  page_size: z.number().int().positive(),
  /** Bytes a consumer may leave unread in its send buffer before the relay stops sending to it. */
  send_buffer_bytes: z.number().int().positive(),
  /** How long a consumer may stay over `send_buffer_bytes` before it is closed as SLOW_CONSUMER. */
  slow_consumer_ms: z.number().int().positive(),
  /** The relay pings this often. */
  ping_interval_ms: z.number().int().positive(),
  /** A connection silent this long after a ping is closed as PING_TIMEOUT. */
  ping_timeout_ms: z.number().int().positive(),
});
/** A relay's limits. */
export type Limits = z.infer<typeof LimitsSchema>;

/** The limits a relay runs with unless told otherwise. */
export const DEFAULT_LIMITS: Limits = {
  max_frame_bytes: 1024 * 1024,
  max_ops_per_push: 500,
  max_op_bytes: 256 * 1024 + 16 * 1024,
  page_size: 500,
  send_buffer_bytes: 8 * 1024 * 1024,
  slow_consumer_ms: 10_000,
  ping_interval_ms: 20_000,
  ping_timeout_ms: 20_000,
};

/**
 * The codes an `error` frame carries. Every one closes the connection with its ws close code;
 * `retry` says whether reconnecting (from `resume_from` when given) can help without a fix.
 * A code without a row does not compile.
 */
export const SYNC_ERROR_TABLE = {
  BAD_FRAME: { close: 4000, retry: false, summary: 'the frame is not JSON, not text, or not a valid frame' },
  FRAME_TOO_LARGE: { close: 4001, retry: false, summary: 'the frame is larger than max_frame_bytes' },
  TOO_MANY_OPS: { close: 4002, retry: false, summary: 'the push holds more than max_ops_per_push ops' },
  OP_TOO_LARGE: { close: 4003, retry: false, summary: 'an op is larger than max_op_bytes' },
  NOT_HELLO: { close: 4004, retry: false, summary: 'the first frame must be hello' },
  PROTOCOL_VERSION: { close: 4005, retry: false, summary: 'the relay does not speak this protocol version' },
  BAD_CURSOR: { close: 4006, retry: true, summary: 'since is past the stream head; resume from resume_from' },
  UNAUTHORIZED: { close: 4010, retry: false, summary: 'the stream token is not valid' },
  UNKNOWN_STREAM: { close: 4011, retry: false, summary: 'no stream by that name' },
  SLOW_CONSUMER: { close: 4020, retry: true, summary: 'the consumer did not read fast enough; resume from resume_from' },
  PING_TIMEOUT: { close: 4021, retry: true, summary: 'no frame arrived within ping_timeout_ms of a ping' },
  HELLO_TIMEOUT: { close: 4022, retry: true, summary: 'no hello arrived within the time a connection is given to say it' },
  TOO_MANY_PENDING: { close: 4029, retry: true, summary: 'too many connections from one address have not said hello yet (HTTP 429 at the upgrade)' },
  INTERNAL: { close: 4500, retry: true, summary: 'the relay failed; try again' },
} as const satisfies Record<string, { close: number; retry: boolean; summary: string }>;

/** A sync error code. */
export type SyncErrorCode = keyof typeof SYNC_ERROR_TABLE;
/** Every sync error code. */
export const SYNC_ERROR_CODES = Object.keys(SYNC_ERROR_TABLE) as [SyncErrorCode, ...SyncErrorCode[]];

/** The ws close code for an error code (4000-4999). */
export function syncCloseCode(code: SyncErrorCode): number {
  return SYNC_ERROR_TABLE[code].close;
}

/** The error code behind a ws close code, or null for a close code that is not ours. */
export function syncErrorOfClose(close: number): SyncErrorCode | null {
  return SYNC_ERROR_CODES.find((c) => SYNC_ERROR_TABLE[c].close === close) ?? null;
}

// ---- node -> relay

/**
 * The first frame a node sends: which stream, with which token, and the last seq it already holds.
 * `join` (relays with the `history` feature; older ones ignore it and page from `since`): when the stream
 * holds at least this many ops past `since`, the node takes the live feed from the head on (`welcome`
 * says where: `from`) and fetches what came before with `fetch` frames instead of the backlog.
 */
export const HelloSchema = z.object({
  type: z.literal('hello'),
  protocol: z.number().int(),
  stream: z.string().max(64),
  token: z.string().max(512),
  node: NodeName,
  since: Seq,
  join: Seq.optional(),
});
/** Most workspaces one `fetch` may name. */
export const MAX_FETCH_WORKSPACES = 256;
/**
 * A request for history (relays with the `history` feature): the ops with `after` < seq <= `upto`, only
 * those authored by `workspaces` when given, none authored by `exclude` when given. The relay answers
 * with `history` frames echoing `id`, the last one `done`; requests are answered in the order they came,
 * each beside the live feed.
 */
export const FetchSchema = z.object({
  type: z.literal('fetch'),
  id: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  after: Seq,
  upto: Seq,
  workspaces: z.array(WorkspaceId).max(MAX_FETCH_WORKSPACES).optional(),
  exclude: z.array(WorkspaceId).max(MAX_FETCH_WORKSPACES).optional(),
});
/** Ops to append; `id` is the node's own batch number, echoed in the `ack`. */
export const PushSchema = z.object({
  type: z.literal('push'),
  id: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  ops: z.array(WireOpSchema),
});
/** True when `v` is a push that PushSchema would accept, every op plain (see {@link isPlainOp}); false says nothing. */
export function isPlainPush(v: unknown): v is z.infer<typeof PushSchema> {
  if (typeof v !== 'object' || v === null) return false;
  const { type, id, ops } = v as { type?: unknown; id?: unknown; ops?: unknown };
  if (type !== 'push' || typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0 || !Array.isArray(ops)) return false;
  for (let i = 0; i < ops.length; i++) if (!isPlainOp(ops[i], true)) return false;
  return true;
}

/** A liveness probe; the other side answers `pong` with the same `t`. */
export const PingSchema = z.object({ type: z.literal('ping'), t: z.number() });
/** The answer to a `ping`. */
export const PongSchema = z.object({ type: z.literal('pong'), t: z.number() });

/** Every frame a node may send. */
export const FromNodeSchema = z.discriminatedUnion('type', [HelloSchema, PushSchema, FetchSchema, PingSchema, PongSchema]);
/** A frame from a node. */
export type FromNode = z.infer<typeof FromNodeSchema>;

// ---- relay -> node

/** The relay's answer to `hello`: the stream's head at that moment and the limits in force. */
export const WelcomeSchema = z.object({
  type: z.literal('welcome'),
  protocol: z.number().int(),
  stream: z.string(),
  head: Seq,
  limits: LimitsSchema,
  /** What this relay can do beyond the protocol version ({@link SYNC_FEATURES}); absent on older relays. */
  features: z.array(z.string()).optional(),
  /** With `join`: the seq the live feed starts after (the head at hello); the node fetches 1..from as history. */
  from: Seq.optional(),
});
/**
 * One op's fate in a push: the seq it has (a duplicate keeps the one it was first given). An op no store
 * could keep (protocol/storable.ts) is `refused` with its reason and seq 0: it was not stored and never
 * will be, so pushing it again cannot help. Older nodes, which do not know `refused`, drop the member and
 * count the op as acknowledged, which is what it is.
 */
export const AckResultSchema = z.object({ op: z.string(), seq: Seq, duplicate: z.boolean(), refused: z.enum(STORABLE_REASONS).optional() });
/** Sent only after the push is durably committed. */
export const AckSchema = z.object({
  type: z.literal('ack'),
  id: z.number().int().min(0),
  results: z.array(AckResultSchema),
  head: Seq,
});
/** Ops in seq order: backlog pages, then live ops. Each op is forwarded as the exact text it was pushed as. */
export const OpsSchema = z.object({
  type: z.literal('ops'),
  ops: z.array(z.object({ seq: Seq, op: WireOpSchema })),
});
/**
 * How a node reads an `ops` frame: the frame strictly, each op only as a JSON value. Each op is then
 * checked (shape, signature) on its own, so one bad op costs itself, never its page or the connection.
 */
export const OpsPageSchema = z.object({
  type: z.literal('ops'),
  ops: z.array(z.object({ seq: Seq, op: z.unknown() })),
});
/**
 * Part of the answer to `fetch` `id`: ops in seq order, each as the exact text it was pushed as, and
 * `through`, the seq up to which the request is answered (every matching op at or below it has been
 * sent); `done` on the last frame of the request (then `through` is its `upto`).
 */
export const HistorySchema = z.object({
  type: z.literal('history'),
  id: z.number().int().min(0),
  ops: z.array(z.object({ seq: Seq, op: WireOpSchema })),
  through: Seq,
  done: z.boolean(),
});
/** How a node reads a `history` frame: as {@link OpsPageSchema}, each op only as a JSON value. */
export const HistoryPageSchema = z.object({
  type: z.literal('history'),
  id: z.number().int().min(0),
  ops: z.array(z.object({ seq: Seq, op: z.unknown() })),
  through: Seq,
  done: z.boolean(),
});
/** Sent once, when the backlog up to the head at `hello` has been sent; live ops follow. */
export const CaughtUpSchema = z.object({ type: z.literal('caught_up'), head: Seq });
/** A coded refusal; the connection is closed with the code's close code right after. */
export const ErrorFrameSchema = z.object({
  type: z.literal('error'),
  code: z.enum(SYNC_ERROR_CODES),
  message: z.string(),
  /** Reconnect with `since` = this to continue without a gap. */
  resume_from: Seq.optional(),
});

/** Every frame a relay may send. */
export const FromRelaySchema = z.discriminatedUnion('type', [
  WelcomeSchema,
  AckSchema,
  OpsSchema,
  HistorySchema,
  CaughtUpSchema,
  ErrorFrameSchema,
  PingSchema,
  PongSchema,
]);
/** A frame from the relay. */
export type FromRelay = z.infer<typeof FromRelaySchema>;

// ---- HTTP

/** `GET /v1/info`. `version` is the relay's package version, `features` as in `welcome` (older relays sent neither). */
export const RelayInfoSchema = z.object({ protocol: z.number().int(), sync_path: z.string(), limits: LimitsSchema, version: z.string().optional(), features: z.array(z.string()).optional() });
/** `POST /v1/streams` body. */
export const CreateStreamRequestSchema = z.object({ name: StreamName });
/** `POST /v1/streams` answer, and `POST /v1/streams/:name/rotate-token`'s: the stream token is shown this once. */
export const CreateStreamResponseSchema = z.object({ name: StreamName, token: z.string() });
/** One stream in `GET /v1/streams`: `connections` are the ones open on the relay instance that answered. */
export const StreamInfoSchema = z.object({ name: StreamName, head: Seq, created_at: z.string(), connections: z.number().int().min(0) });
/** `GET /v1/streams` (operator). */
export const ListStreamsResponseSchema = z.object({ streams: z.array(StreamInfoSchema) });
/** `DELETE /v1/streams/:name` (operator): the stream and its ops are gone; its connections were closed with UNKNOWN_STREAM. */
export const DeleteStreamResponseSchema = z.object({ name: StreamName, deleted_ops: Seq });

/** The sync socket URL for a relay base URL given as http(s):// or ws(s)://. */
export function syncUrl(base: string): string {
  const url = new URL(base);
  if (url.protocol === 'http:') url.protocol = 'ws:';
  else if (url.protocol === 'https:') url.protocol = 'wss:';
  else if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new TypeError(`syncUrl: not an http or ws URL: ${base}`);
  const path = url.pathname.replace(/\/+$/, '');
  url.pathname = path.endsWith(SYNC_PATH) ? path : path + SYNC_PATH;
  url.search = '';
  url.hash = '';
  return url.toString();
}

// ---- the relay's certificate

/**
 * A TLS certificate's pin as `nxs relay serve` prints it and `nxs sync bind --relay-fingerprint` takes it:
 * `sha256:` and the SHA-256 of the certificate's DER bytes in lowercase hex. Colons and upper case (as
 * openssl prints it) are accepted and normalised.
 */
export const CertFingerprintSchema = z
  .string()
  .transform((s) => s.trim().toLowerCase().replace(/^sha256:/, '').replace(/:/g, ''))
  .pipe(z.string().regex(/^[0-9a-f]{64}$/, 'a certificate fingerprint is sha256: and 64 hex digits'))
  .transform((hex) => `sha256:${hex}`);

/** The pin of a certificate from Node's `fingerprint256` (colon-separated upper-case hex). */
export function pinOf(fingerprint256: string): string {
  return `sha256:${fingerprint256.replace(/:/g, '').toLowerCase()}`;
}

// ---- exact op texts
// Ops are signed over their exact bytes, so nobody re-serialises one: these find an op's own text
// inside a frame. Both expect text that JSON.parse has already accepted.

/** Index just past the JSON value starting at `i` (no leading whitespace) in valid JSON `text`. */
function skipValue(text: string, i: number): number {
  let depth = 0;
  let j = i;
  do {
    const ch = text.charCodeAt(j);
    if (ch === QUOTE) j = skipString(text, j);
    else if (ch === OPEN_BRACE || ch === OPEN_BRACKET) {
      depth++;
      j++;
    } else if (ch === CLOSE_BRACE || ch === CLOSE_BRACKET) {
      depth--;
      j++;
    } else if (depth === 0) {
      while (j < text.length && !endsScalar(text.charCodeAt(j))) j++; // a number, true, false or null
    } else {
      j++;
    }
  } while (depth > 0 && j < text.length);
  return j;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** Index just past the string whose opening quote is at `i`: the next quote preceded by an even run of backslashes. */
function skipString(text: string, i: number): number {
  let from = i + 1;
  for (;;) {
    const q = text.indexOf('"', from);
    if (q < 0) return text.length;
    let b = q - 1;
    while (text.charCodeAt(b) === BACKSLASH) b--; // stops at the opening quote at the latest
    if ((q - 1 - b) % 2 === 0) return q + 1;
    from = q + 1;
  }
}

/** Whitespace, a comma or a closing bracket: what ends a number or a literal. */
function endsScalar(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x2c || c === CLOSE_BRACE || c === CLOSE_BRACKET;
}

function skipWs(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return i;
    i++;
  }
}

/**
 * The exact text of member `key` of the JSON object in `text` (the last one, as JSON.parse keeps),
 * or undefined when `text` is not an object or has no such member.
 */
export function rawMember(text: string, key: string): string | undefined {
  let i = skipWs(text, 0);
  if (text.charCodeAt(i) !== OPEN_BRACE) return undefined;
  let found: string | undefined;
  i = skipWs(text, i + 1);
  while (text.charCodeAt(i) === QUOTE) {
    const keyEnd = skipValue(text, i);
    const quoted = text.slice(i, keyEnd);
    const name = quoted.includes('\\') ? (JSON.parse(quoted) as string) : quoted.slice(1, -1);
    const start = skipWs(text, skipWs(text, keyEnd) + 1); // past the colon
    const end = skipValue(text, start);
    if (name === key) found = text.slice(start, end);
    i = skipWs(text, end);
    if (text.charCodeAt(i) === 0x2c) i = skipWs(text, i + 1);
  }
  return found;
}

/** The name of the member whose quoted key starts at `i` and ends at `keyEnd`. */
function memberName(text: string, i: number, keyEnd: number): string {
  const quoted = text.slice(i, keyEnd);
  return quoted.includes('\\') ? (JSON.parse(quoted) as string) : quoted.slice(1, -1);
}

/**
 * For the JSON object in `text`: the exact text of member `member` of each element of its array member
 * `key` (undefined for an element that is no object or has no such member), or undefined when `text` is
 * not an object or its `key` is missing or no array. The same as
 * `rawElements(rawMember(text, key) ?? '')?.map((el) => rawMember(el, member))`, in one pass over the
 * text instead of three: how a node finds the op texts of a page of 500.
 */
export function rawMemberOfElements(text: string, key: string, member: string): Array<string | undefined> | undefined {
  let i = skipWs(text, 0);
  if (text.charCodeAt(i) !== OPEN_BRACE) return undefined;
  let found: Array<string | undefined> | undefined;
  i = skipWs(text, i + 1);
  while (text.charCodeAt(i) === QUOTE) {
    const keyEnd = skipValue(text, i);
    const name = memberName(text, i, keyEnd);
    let at = skipWs(text, skipWs(text, keyEnd) + 1); // past the colon
    if (name !== key) at = skipValue(text, at);
    else if (text.charCodeAt(at) !== OPEN_BRACKET) {
      found = undefined;
      at = skipValue(text, at);
    } else {
      // The array, element by element; of each element that is an object, its members one by one.
      found = [];
      at = skipWs(text, at + 1);
      while (at < text.length && text.charCodeAt(at) !== CLOSE_BRACKET) {
        let value: string | undefined;
        if (text.charCodeAt(at) !== OPEN_BRACE) at = skipValue(text, at);
        else {
          at = skipWs(text, at + 1);
          while (text.charCodeAt(at) === QUOTE) {
            const end = skipValue(text, at);
            const inner = memberName(text, at, end);
            const start = skipWs(text, skipWs(text, end) + 1);
            at = skipValue(text, start);
            if (inner === member) value = text.slice(start, at);
            at = skipWs(text, at);
            if (text.charCodeAt(at) === 0x2c) at = skipWs(text, at + 1);
          }
          at++; // the element's closing brace
        }
        found.push(value);
        at = skipWs(text, at);
        if (text.charCodeAt(at) === 0x2c) at = skipWs(text, at + 1);
      }
      at++; // the closing bracket
    }
    i = skipWs(text, at);
    if (text.charCodeAt(i) === 0x2c) i = skipWs(text, i + 1);
  }
  return found;
}

/** The exact texts of the elements of the JSON array in `text`, or undefined when it is not an array. */
export function rawElements(text: string): string[] | undefined {
  let i = skipWs(text, 0);
  if (text.charCodeAt(i) !== OPEN_BRACKET) return undefined;
  const out: string[] = [];
  i = skipWs(text, i + 1);
  while (i < text.length && text.charCodeAt(i) !== CLOSE_BRACKET) {
    const end = skipValue(text, i);
    out.push(text.slice(i, end));
    i = skipWs(text, end);
    if (text.charCodeAt(i) === 0x2c) i = skipWs(text, i + 1);
  }
  return out;
}
