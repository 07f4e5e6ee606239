// Branded identifiers (workspace, thread, message, session, op, handle): their zod schemas and generators.

import { monotonicFactory, ulid } from 'ulidx';
import { z } from 'zod';

/** 26 lowercase RFC 4648 base32 characters (alphabet a-z2-7), no padding. */
export const WORKSPACE_ID_RE = /^[a-z2-7]{26}$/;

/**
 * One ULID body: 26 uppercase Crockford base32 characters (no I, L, O, U).
 * The first character is at most 7, since a 48-bit timestamp fills 50 bits.
 */
const ULID_BODY = '[0-7][0-9A-HJKMNP-TV-Z]{25}';

/** A person handle, e.g. `alice` or `bob.smith`. */
const PERSON_HANDLE_BODY = '[a-z][a-z0-9._-]{0,39}';

/** A session handle: a workspace short (4 base32 characters), a slash, a role, e.g. `ab23/coder`. */
const SESSION_HANDLE_BODY = '[a-z2-7]{4}/[a-z][a-z0-9_-]{0,39}';

/**
 * A workspace id: the first 26 characters of the lowercase, unpadded base32
 * of sha256 over the workspace's raw Ed25519 public key. See `crypto/`.
 */
export const WorkspaceId = z.string().regex(WORKSPACE_ID_RE).brand<'WorkspaceId'>();
/** A validated workspace id. */
export type WorkspaceId = z.infer<typeof WorkspaceId>;

/** The patterns of op, thread and session ids, for checks that run without zod (protocol/sync.ts). */
export const OP_ID_RE = new RegExp(`^${ULID_BODY}$`);
export const THREAD_ID_RE = new RegExp(`^t-${ULID_BODY}$`);
export const SESSION_ID_RE = new RegExp(`^s-${ULID_BODY}$`);

/** A thread id: `t-` followed by a ULID. */
export const ThreadId = z.string().regex(THREAD_ID_RE).brand<'ThreadId'>();
/** A validated thread id. */
export type ThreadId = z.infer<typeof ThreadId>;

/** A message id: `m-` followed by a ULID. */
export const MessageId = z.string().regex(new RegExp(`^m-${ULID_BODY}$`)).brand<'MessageId'>();
/** A validated message id. */
export type MessageId = z.infer<typeof MessageId>;

/** A session id: `s-` followed by a ULID. */
export const SessionId = z.string().regex(SESSION_ID_RE).brand<'SessionId'>();
/** A validated session id. */
export type SessionId = z.infer<typeof SessionId>;

/** An op-log id: a bare ULID, no prefix. */
export const OpId = z.string().regex(OP_ID_RE).brand<'OpId'>();
/** A validated op id. */
export type OpId = z.infer<typeof OpId>;

/** A person as named beyond their own workspace: `alice@ab23` (the short of the workspace they act in). */
const QUALIFIED_PERSON_BODY = `${PERSON_HANDLE_BODY}@[a-z2-7]{4}`;

/**
 * A handle: a person (`^[a-z][a-z0-9._-]{0,39}$`), a person of a named workspace (`alice@ab23`,
 * used wherever a person's words cross to another workspace), or a session (`<workspace
 * short>/<role>`, role `^[a-z][a-z0-9_-]{0,39}$`). They never overlap: only a session holds a slash,
 * only a qualified person an `@`.
 */
export const Handle = z
  .string()
  .regex(new RegExp(`^(?:${PERSON_HANDLE_BODY}|${QUALIFIED_PERSON_BODY}|${SESSION_HANDLE_BODY})$`))
  .brand<'Handle'>();

/** `handle` as another workspace reads it: a bare person gets `@<short>`; sessions and qualified people already say where they are. */
export function qualifyHandle(handle: string, short: string): string {
  return handle.includes('/') || handle.includes('@') ? handle : `${handle}@${short}`;
}
/** A validated handle. */
export type Handle = z.infer<typeof Handle>;

/**
 * The person a caller is taken for when NXC_ACTOR names nobody: the login name (`$USER`) when it makes a person's
 * handle, else `human`. The CLI and the dashboard's "Reply as" start from the same one.
 */
export function defaultPerson(env: Readonly<Record<string, string | undefined>>): string {
  const user = (env['USER'] ?? '').toLowerCase();
  return Handle.safeParse(user).success && !user.includes('/') && !user.includes('@') ? user : 'human';
}

/** The first four characters of a workspace id, as used in session handles (`ab23/coder`). */
export function workspaceShort(id: WorkspaceId): string {
  return id.slice(0, 4);
}

/**
 * ulidx draws each of an id's 16 random characters with its own getRandomValues call (and looks for a
 * generator on every `ulid()`): one op costs 16 calls into the crypto source. The same draws (a byte over
 * 255 per character) come here from one filled buffer, refilled when used up.
 */
const pool = new Uint8Array(4096);
let taken = pool.length;
function pooledRandom(): number {
  if (taken === pool.length) {
    globalThis.crypto.getRandomValues(pool);
    taken = 0;
  }
  return pool[taken++]! / 0xff;
}

/** A fresh ULID, not ordered against others made in the same millisecond (ulidx's `ulid()`, pooled). */
export function randomUlid(): string {
  return ulid(undefined, pooledRandom);
}

/** One monotonic generator for the whole process: ids made later always sort later. */
const nextUlid = monotonicFactory(pooledRandom);

/** A fresh thread id; sorts after every id this process made before it. */
export function newThreadId(): ThreadId {
  return `t-${nextUlid()}` as ThreadId;
}

/** A fresh message id; sorts after every id this process made before it. */
export function newMessageId(): MessageId {
  return `m-${nextUlid()}` as MessageId;
}

/** A fresh session id; sorts after every id this process made before it. */
export function newSessionId(): SessionId {
  return `s-${nextUlid()}` as SessionId;
}

/** A fresh op id; sorts after every id this process made before it. */
export function newOpId(): OpId {
  return nextUlid() as OpId;
}
