// Commission stamps: a compact JWS (EdDSA) by which one workspace vouches for a commission it sends to
// another: who asks, in which role, from which thread, at which depth. The receiver checks it against
// its own trust entries; the key always comes from there, never from the token.

import { KeyObject } from 'node:crypto';
import type * as Jose from 'jose';
import { ulid } from 'ulidx';
import { NexusError, type ErrorCode } from '../protocol/errors.js';
import { Handle, ThreadId, WorkspaceId } from '../protocol/ids.js';
import { RoleSchema } from '../protocol/persona.js';
import { parsePublicJwk, workspaceIdFromPublicJwk, type PublicJwk, type WorkspaceKey } from './keys.js';

/**
 * jose, loaded on first use: every command that finds its workspace reaches this file through the crypto
 * door, and jose's ~50 modules would otherwise be read at the start of each one, though only commands
 * that sign or check a stamp need it.
 */
let jose: Promise<typeof Jose> | null = null;
const loadJose = () => (jose ??= import('jose'));

/** The `typ` header of every stamp, compared exactly (no `application/` prefix, no case folding). */
export const STAMP_TYP = 'nexus-stamp+jws';
/** The one signature algorithm a stamp may carry. */
export const STAMP_ALG = 'EdDSA';
/** How long a stamp is valid by default: long enough for an offline node to come back. */
export const STAMP_DEFAULT_TTL_SEC = 7 * 24 * 3600;
/** The longest lifetime (exp - iat) a stamp may have; it also bounds how long a seen jti is kept. */
export const STAMP_MAX_TTL_SEC = 30 * 24 * 3600;
/** Default clock skew accepted on `exp` and `iat`. */
export const STAMP_DEFAULT_CLOCK_TOLERANCE_SEC = 60;
/** A token longer than this is refused before any decoding (a real stamp is about 600 characters). */
export const STAMP_MAX_CHARS = 4096;
/**
 * The spawn-chain cap the stamp's depth is checked against. Equal to DEPTH_CAP in
 * node-agent/depth (crypto/ may not import node-agent/; a test asserts the two agree).
 */
export const STAMP_DEPTH_CAP = 32;

/** What a stamp says, exactly these members. */
export type StampClaims = {
  /** The asking workspace's id. */
  iss: WorkspaceId;
  /** The asking handle: a session (`ab23/planner`) or a person (`alice`). */
  sub: string;
  /** The asking session's role, or null when a person asks. */
  role: string | null;
  /** The target workspace's id. */
  aud: WorkspaceId;
  /** The persona commissioned in the target workspace. */
  target_role: string;
  /** The asking thread. */
  thread: string;
  /** The asker's depth, 0..32. */
  depth: number;
  /**
   * The turns the asking operation had used when the stamp was signed: the receiver's operation budget
   * counts on from there. Optional, so stamps of nodes that predate it still verify (read as 0).
   */
  turns?: number;
  /**
   * What the asking operation had spent when the stamp was signed (tokens, and cost in US dollars): the
   * receiver's token and cost budgets count on from there. Optional, like `turns`.
   */
  usage?: { tokens: number; cost: number };
  /** Issued at, seconds since the epoch. */
  iat: number;
  /** Expires at, seconds since the epoch. */
  exp: number;
  /** The stamp's unique id (a ULID when made here), for replay detection. */
  jti: string;
};

/** What the asker fills in; `iss` is the signing key's id, times and `jti` are made by `signStamp`. */
export type StampRequest = Pick<StampClaims, 'sub' | 'role' | 'target_role' | 'thread' | 'depth' | 'turns' | 'usage'> & { aud: string };

export type SignStampOptions = {
  /** The signing time (default: now). */
  now?: Date;
  /** Lifetime in seconds (default 7 days, at most STAMP_MAX_TTL_SEC). */
  ttlSec?: number;
  /** The stamp id (default: a fresh ULID). */
  jti?: string;
};

/** The most keys (genesis included) one trust entry may offer; a longer list fails closed as UNTRUSTED. */
export const STAMP_MAX_KEYS = 16;

/** The stable refusal codes of `verifyStamp`. */
export const STAMP_CODES = [
  'STAMP_MALFORMED',
  'STAMP_UNTRUSTED',
  'STAMP_FORGED',
  'STAMP_WRONG_AUDIENCE',
  'STAMP_EXPIRED',
  'STAMP_NOT_YET_VALID',
  'STAMP_REPLAYED',
  'DEPTH_EXCEEDED',
] as const satisfies readonly ErrorCode[];
export type StampCode = (typeof STAMP_CODES)[number];

export type StampVerdict =
  | {
      ok: true;
      claims: StampClaims;
      /** The depth the commissioned session starts at: the stamped depth + 1 (at most the cap). */
      sessionDepth: number;
    }
  | { ok: false; code: StampCode; message: string };

export type VerifyStampOptions = {
  /**
   * The receiver's trust entries: the public key it holds for `iss`, or null when it does not
   * trust `iss`. A list is the genesis key first (it must derive `iss`), then the keys the receiver
   * has verified as certified by `iss`'s rotation chain; any of them may verify the stamp (at most
   * STAMP_MAX_KEYS are tried). An empty list counts as "not trusted"; so does a lookup that throws.
   */
  trust: (iss: WorkspaceId) => readonly PublicJwk[] | PublicJwk | null;
  /** The receiving workspace's id: the stamp's `aud` must be exactly this. */
  audience: string;
  /** The verification time (default: now). */
  now?: Date;
  /** Accepted clock skew in seconds on `exp` and `iat` (default 60). */
  clockToleranceSec?: number;
  /** Whether this jti was already admitted. A check that throws counts as "seen". */
  seen: (jti: string) => boolean;
};

const HEADER_MEMBERS = new Set(['alg', 'typ']);
const CLAIM_MEMBERS = ['iss', 'sub', 'role', 'aud', 'target_role', 'thread', 'depth', 'iat', 'exp', 'jti'] as const;
/** Claims a stamp may carry beyond the required ones. */
const OPTIONAL_CLAIMS = ['turns', 'usage'] as const;
const CLAIM_SET = new Set<string>([...CLAIM_MEMBERS, ...OPTIONAL_CLAIMS]);
const SEGMENT_RE = /^[A-Za-z0-9_-]*$/;
const JTI_RE = /^[A-Za-z0-9._:-]{1,128}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

class Refusal {
  constructor(
    readonly code: StampCode,
    readonly message: string,
  ) {}
}

function refuse(code: StampCode, message: string): never {
  throw new Refusal(code, message);
}

/** Strict base64url: the alphabet only, no padding, and the canonical encoding of its bytes. */
function decodeSegment(segment: string, what: string, code: StampCode): Buffer {
  if (segment.length === 0 || !SEGMENT_RE.test(segment) || segment.length % 4 === 1) refuse(code, `the ${what} is not base64url`);
  const bytes = Buffer.from(segment, 'base64url');
  if (bytes.toString('base64url') !== segment) refuse(code, `the ${what} is not canonical base64url`);
  return bytes;
}

function decodeJsonObject(segment: string, what: string): Record<string, unknown> {
  const bytes = decodeSegment(segment, what, 'STAMP_MALFORMED');
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(bytes));
  } catch {
    refuse('STAMP_MALFORMED', `the ${what} is not UTF-8 JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) refuse('STAMP_MALFORMED', `the ${what} is not a JSON object`);
  return value as Record<string, unknown>;
}

/** Refuses any protected header other than exactly `{alg: 'EdDSA', typ: 'nexus-stamp+jws'}`. */
function checkHeader(header: Record<string, unknown>): void {
  for (const name of ['jwk', 'jku', 'x5u', 'x5c', 'x5t', 'x5t#S256', 'kid', 'crit', 'b64']) {
    if (Object.hasOwn(header, name)) refuse('STAMP_FORGED', `the header carries "${name}"; a stamp's key comes from the trust entries only`);
  }
  if (header['alg'] !== STAMP_ALG) refuse('STAMP_FORGED', `the header alg must be ${STAMP_ALG}`);
  if (header['typ'] !== STAMP_TYP) refuse('STAMP_FORGED', `the header typ must be ${STAMP_TYP}`);
  const extra = Object.keys(header).filter((k) => !HEADER_MEMBERS.has(k));
  if (extra.length > 0) refuse('STAMP_FORGED', `the header has members other than alg and typ: ${extra.slice(0, 5).join(', ')}`);
}

function isTime(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/**
 * Checks the shape of every claim. Returns a message, or null when the claims are well-formed.
 * A depth above the cap is well-formed here: it is refused as DEPTH_EXCEEDED once the signature holds.
 */
function claimsProblem(c: Record<string, unknown>): string | null {
  for (const name of CLAIM_MEMBERS) if (!Object.hasOwn(c, name)) return `the claim "${name}" is missing`;
  const extra = Object.keys(c).filter((k) => !CLAIM_SET.has(k));
  if (extra.length > 0) return `unknown claims: ${extra.slice(0, 5).join(', ')}`;
  if (!WorkspaceId.safeParse(c['iss']).success) return '"iss" is not a workspace id';
  if (!WorkspaceId.safeParse(c['aud']).success) return '"aud" is not a workspace id';
  if (!Handle.safeParse(c['sub']).success) return '"sub" is not a handle';
  const role = c['role'];
  const sub = c['sub'] as string;
  if (role === null) {
    if (sub.includes('/')) return '"sub" is a session handle but "role" is null';
    // A person named beyond their workspace is named with the issuer's short: nobody else's.
    if (sub.includes('@') && sub.slice(sub.indexOf('@') + 1) !== (c['iss'] as string).slice(0, 4)) return '"sub" names a person of another workspace than "iss"';
  } else {
    if (!RoleSchema.safeParse(role).success) return '"role" is neither null nor a role name';
    if (sub !== `${(c['iss'] as string).slice(0, 4)}/${role as string}`) return '"sub" is not the session handle of "role" in "iss"';
  }
  if (!RoleSchema.safeParse(c['target_role']).success) return '"target_role" is not a role name';
  if (!ThreadId.safeParse(c['thread']).success) return '"thread" is not a thread id';
  const depth = c['depth'];
  if (typeof depth !== 'number' || !Number.isSafeInteger(depth) || depth < 0) return '"depth" is not a non-negative integer';
  const turns = c['turns'];
  if (Object.hasOwn(c, 'turns') && (typeof turns !== 'number' || !Number.isSafeInteger(turns) || turns < 0)) return '"turns" is not a non-negative integer';
  if (Object.hasOwn(c, 'usage') && usageProblem(c['usage'])) return '"usage" is not {tokens, cost} of a non-negative integer and amount';
  if (!isTime(c['iat'])) return '"iat" is not a time in whole seconds';
  if (!isTime(c['exp'])) return '"exp" is not a time in whole seconds';
  const life = (c['exp'] as number) - (c['iat'] as number);
  if (life <= 0) return '"exp" is not after "iat"';
  if (life > STAMP_MAX_TTL_SEC) return `the stamp lives longer than ${STAMP_MAX_TTL_SEC} s`;
  if (typeof c['jti'] !== 'string' || !JTI_RE.test(c['jti'])) return '"jti" is not an id of 1..128 characters [A-Za-z0-9._:-]';
  return null;
}

/** True when a `usage` claim is not exactly `{tokens, cost}` with a non-negative integer and a non-negative finite amount. */
function usageProblem(u: unknown): boolean {
  if (typeof u !== 'object' || u === null || Array.isArray(u)) return true;
  const keys = Object.keys(u);
  if (keys.length !== 2 || !keys.includes('tokens') || !keys.includes('cost')) return true;
  const { tokens, cost } = u as { tokens: unknown; cost: unknown };
  return !(typeof tokens === 'number' && Number.isSafeInteger(tokens) && tokens >= 0 && typeof cost === 'number' && Number.isFinite(cost) && cost >= 0);
}

/**
 * Signs a commission stamp with the asking workspace's key: a compact JWS with the protected
 * header `{alg: 'EdDSA', typ: 'nexus-stamp+jws'}` and the claims of `StampClaims` (`iss` is the
 * key's id). Throws NexusError('USAGE') when a claim is not valid or the depth is outside 0..32.
 */
export async function signStamp(key: WorkspaceKey, request: StampRequest, opts: SignStampOptions = {}): Promise<string> {
  const now = opts.now ?? new Date();
  const ttl = opts.ttlSec ?? STAMP_DEFAULT_TTL_SEC;
  if (!Number.isSafeInteger(ttl) || ttl <= 0 || ttl > STAMP_MAX_TTL_SEC) {
    throw new NexusError('USAGE', `a stamp's lifetime must be 1..${STAMP_MAX_TTL_SEC} seconds`, { ttlSec: ttl });
  }
  const iat = Math.floor(now.getTime() / 1000);
  const claims: StampClaims = {
    iss: key.id,
    sub: request.sub,
    role: request.role,
    aud: request.aud as WorkspaceId,
    target_role: request.target_role,
    thread: request.thread,
    depth: request.depth,
    ...(request.turns === undefined ? {} : { turns: request.turns }),
    ...(request.usage === undefined ? {} : { usage: { tokens: request.usage.tokens, cost: request.usage.cost } }),
    iat,
    exp: iat + ttl,
    jti: opts.jti ?? ulid(now.getTime()),
  };
  const problem = claimsProblem(claims);
  if (problem !== null) throw new NexusError('USAGE', `the stamp is not valid: ${problem}`);
  if (claims.depth > STAMP_DEPTH_CAP) throw new NexusError('USAGE', `a stamp's depth is 0..${STAMP_DEPTH_CAP}`, { depth: claims.depth });
  if (!(key.privateKey instanceof KeyObject) || key.privateKey.asymmetricKeyType !== 'ed25519') {
    throw new NexusError('USAGE', 'a stamp is signed with the workspace Ed25519 private key');
  }
  const { CompactSign } = await loadJose();
  return new CompactSign(encoder.encode(JSON.stringify(claims)))
    .setProtectedHeader({ alg: STAMP_ALG, typ: STAMP_TYP })
    .sign(key.privateKey);
}

/** Imported verification keys by their `x`: importing costs more than verifying. */
type VerifyKey = Awaited<ReturnType<typeof Jose.importJWK>>;
const keyCache = new Map<string, Promise<VerifyKey>>();
const KEY_CACHE_MAX = 1024;

function verificationKey(jwk: PublicJwk): Promise<VerifyKey> {
  let key = keyCache.get(jwk.x);
  if (key === undefined) {
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear();
    key = loadJose().then((j) => j.importJWK({ kty: jwk.kty, crv: jwk.crv, x: jwk.x }, STAMP_ALG));
    keyCache.set(jwk.x, key);
    key.catch(() => keyCache.delete(jwk.x));
  }
  return key;
}

/** Trusted workspace ids by JWK `x`, so the id is not re-derived (a sha256) on every verification. */
const idCache = new Map<string, WorkspaceId>();

function idOfKey(jwk: PublicJwk): WorkspaceId {
  let id = idCache.get(jwk.x);
  if (id === undefined) {
    if (idCache.size >= KEY_CACHE_MAX) idCache.clear();
    id = workspaceIdFromPublicJwk(jwk);
    idCache.set(jwk.x, id);
  }
  return id;
}

/** Maps what jose throws to a stamp code; anything unrecognised fails closed as FORGED. */
function fromJose(err: unknown, joseErrors: typeof Jose.errors): Refusal {
  if (err instanceof joseErrors.JWTExpired) return new Refusal('STAMP_EXPIRED', 'the stamp has expired');
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === 'aud') return new Refusal('STAMP_WRONG_AUDIENCE', 'the stamp is addressed to another workspace');
    if (err.claim === 'iat') return new Refusal('STAMP_NOT_YET_VALID', 'the stamp is issued in the future');
    if (err.reason === 'missing') return new Refusal('STAMP_MALFORMED', `the claim "${err.claim}" is missing`);
    return new Refusal('STAMP_FORGED', `the claim or header "${err.claim}" does not hold`);
  }
  if (err instanceof joseErrors.JWTInvalid || err instanceof joseErrors.JWSInvalid) return new Refusal('STAMP_MALFORMED', 'the stamp is not a valid JWS');
  return new Refusal('STAMP_FORGED', 'the signature does not verify with the trusted key');
}

async function check(token: unknown, opts: VerifyStampOptions): Promise<StampVerdict> {
  if (typeof token !== 'string') refuse('STAMP_MALFORMED', 'a stamp is a string');
  if (token.length > STAMP_MAX_CHARS) refuse('STAMP_MALFORMED', `a stamp is at most ${STAMP_MAX_CHARS} characters`);
  const parts = token.split('.');
  if (parts.length !== 3) refuse('STAMP_MALFORMED', 'a stamp is a compact JWS: three base64url parts joined by dots');
  const [h, p, s] = parts as [string, string, string];

  // 1. The protected header, decoded by hand: anything but {alg: EdDSA, typ} is refused before any verification.
  checkHeader(decodeJsonObject(h, 'header'));

  // 2. The claims' shape.
  const claims = decodeJsonObject(p, 'payload');
  const problem = claimsProblem(claims);
  if (problem !== null) refuse('STAMP_MALFORMED', problem);
  const iss = claims['iss'] as WorkspaceId;

  // 3. The signature segment: exactly 64 bytes, canonically encoded (no malleable trailing bits).
  if (decodeSegment(s, 'signature', 'STAMP_FORGED').length !== 64) refuse('STAMP_FORGED', 'the signature is not 64 bytes');

  // 4. The keys: from the receiver's trust entries only. The genesis key (first) must derive `iss`;
  // only then may the keys its rotation chain certified be tried as well.
  let trusted: PublicJwk[];
  try {
    const entry = opts.trust(iss);
    if (entry === null || entry === undefined) refuse('STAMP_UNTRUSTED', `workspace ${iss} is not trusted here`);
    const list: readonly unknown[] = Array.isArray(entry) ? entry : [entry];
    if (list.length === 0) refuse('STAMP_UNTRUSTED', `workspace ${iss} is not trusted here`);
    if (list.length > STAMP_MAX_KEYS) refuse('STAMP_UNTRUSTED', `the trust entry for ${iss} offers more than ${STAMP_MAX_KEYS} keys`);
    const genesis = parsePublicJwk(list[0]);
    if (idOfKey(genesis) !== iss) refuse('STAMP_UNTRUSTED', `the trust entry for ${iss} holds another workspace's key`);
    trusted = [genesis];
    for (const extra of list.slice(1)) {
      const jwk = parsePublicJwk(extra);
      if (!trusted.some((k) => k.x === jwk.x)) trusted.push(jwk);
    }
  } catch (err) {
    if (err instanceof Refusal) throw err;
    refuse('STAMP_UNTRUSTED', `the trust entry for ${iss} could not be read`);
  }

  // 5. Signature and registered claims, by jose, with every option pinned. A key whose signature
  // does not hold gives way to the next; any other refusal (expiry, audience...) is final.
  const now = opts.now ?? new Date();
  const tolerance = opts.clockToleranceSec ?? STAMP_DEFAULT_CLOCK_TOLERANCE_SEC;
  if (!Number.isFinite(tolerance) || tolerance < 0) refuse('STAMP_MALFORMED', 'the clock tolerance is not a non-negative number');
  let verifiedBy: PublicJwk | null = null;
  const { jwtVerify, errors: joseErrors } = await loadJose();
  for (const key of trusted) {
    try {
      await jwtVerify(token, await verificationKey(key), {
        algorithms: [STAMP_ALG],
        audience: opts.audience,
        issuer: iss,
        typ: STAMP_TYP,
        requiredClaims: [...CLAIM_MEMBERS],
        clockTolerance: tolerance,
        currentDate: now,
      });
      verifiedBy = key;
      break;
    } catch (err) {
      if (err instanceof joseErrors.JWSSignatureVerificationFailed) continue;
      throw fromJose(err, joseErrors);
    }
  }
  if (verifiedBy === null) {
    refuse('STAMP_FORGED', trusted.length === 1 ? 'the signature does not verify with the trusted key' : 'the signature does not verify with any trusted key');
  }
  const verified = claims as StampClaims;

  // 6. What jose does not check: iat in the future, replay, depth.
  if (verified.iat > Math.floor(now.getTime() / 1000) + tolerance) refuse('STAMP_NOT_YET_VALID', 'the stamp is issued in the future');
  let seen: boolean;
  try {
    seen = opts.seen(verified.jti) !== false;
  } catch {
    seen = true;
  }
  if (seen) refuse('STAMP_REPLAYED', `the stamp ${verified.jti} was already used`);
  if (verified.depth + 1 > STAMP_DEPTH_CAP) {
    refuse('DEPTH_EXCEEDED', `the stamped depth ${verified.depth} would open hop ${verified.depth + 1}, past the cap of ${STAMP_DEPTH_CAP}`);
  }
  return { ok: true, claims: { ...verified }, sessionDepth: verified.depth + 1 };
}

/**
 * Verifies a commission stamp for the workspace `audience`. The key is one `trust` holds for the
 * stamp's `iss` (its genesis key, or a key its rotation chain certified); nothing inside the token (kid, jwk, jku, x5u, ...) ever names a key. Never
 * throws: every outcome is a verdict, refusals with a stable code.
 */
export async function verifyStamp(token: unknown, opts: VerifyStampOptions): Promise<StampVerdict> {
  try {
    return await check(token, opts);
  } catch (err) {
    if (err instanceof Refusal) return { ok: false, code: err.code, message: err.message };
    // Not reachable by any token as far as the tests know; fail closed all the same.
    return { ok: false, code: 'STAMP_MALFORMED', message: `the stamp could not be checked (${err instanceof Error ? err.name : 'error'})` };
  }
}

