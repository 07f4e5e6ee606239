// The workspace identity key: Ed25519 generation, id derivation, signing and hashing. No files: the
// key folder on disk is the node's business (node-agent/capabilities/keys/files.ts).

import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  KeyObject,
  sign,
  verify,
} from 'node:crypto';
import { NexusError } from '../protocol/errors.js';
import type { WorkspaceId } from '../protocol/ids.js';

/** The public half of a workspace key as a JWK: exactly these three members. */
export type PublicJwk = { kty: 'OKP'; crv: 'Ed25519'; x: string };

/** A workspace's identity: its id, its public JWK, and both halves as key objects. */
export type WorkspaceKey = {
  id: WorkspaceId;
  publicJwk: PublicJwk;
  privateKey: KeyObject;
  publicKey: KeyObject;
};


const BASE32_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const WORKSPACE_ID_LENGTH = 26;
/** 32 bytes in unpadded base64url is 43 characters. */
const X_RE = /^[A-Za-z0-9_-]{43}$/;

/** Lowercase RFC 4648 base32 without padding. */
function base32Lower(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += BASE32_ALPHABET[(buffer >>> bits) & 31];
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out += BASE32_ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}

function refuse(message: string, details?: Record<string, unknown>): never {
  throw new NexusError('USAGE', message, details);
}

/**
 * Checks that `jwk` is exactly an Ed25519 public JWK: an object with only
 * `kty: 'OKP'`, `crv: 'Ed25519'` and `x`, the canonical unpadded base64url of
 * 32 bytes. A JWK carrying `d` (a private key) is refused outright, and its
 * value is never echoed. Throws NexusError('USAGE') on any deviation.
 */
export function parsePublicJwk(jwk: unknown): PublicJwk {
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) {
    refuse('a public JWK must be a JSON object');
  }
  const rec = jwk as Record<string, unknown>;
  if (Object.hasOwn(rec, 'd')) {
    refuse('the JWK carries a private key component (d); only public keys are accepted');
  }
  const extra = Object.keys(rec).filter((k) => k !== 'kty' && k !== 'crv' && k !== 'x');
  if (extra.length > 0) {
    refuse('the public JWK has members other than kty, crv and x', { extra });
  }
  if (rec['kty'] !== 'OKP') refuse('the public JWK must have kty "OKP"', { kty: rec['kty'] });
  if (rec['crv'] !== 'Ed25519') refuse('the public JWK must have crv "Ed25519"', { crv: rec['crv'] });
  const x = rec['x'];
  if (typeof x !== 'string' || !X_RE.test(x)) {
    refuse('the public JWK x must be the unpadded base64url of exactly 32 bytes');
  }
  const raw = Buffer.from(x, 'base64url');
  if (raw.length !== 32 || raw.toString('base64url') !== x) {
    refuse('the public JWK x is not a canonical base64url encoding of 32 bytes');
  }
  return { kty: 'OKP', crv: 'Ed25519', x };
}

/**
 * Derives a workspace id from a public JWK: the lowercase, unpadded base32 of
 * sha256 over the raw 32-byte public key, cut to its first 26 characters.
 * Validates the JWK with `parsePublicJwk` first (NexusError('USAGE') if bad).
 */
export function workspaceIdFromPublicJwk(jwk: unknown): WorkspaceId {
  const { x } = parsePublicJwk(jwk);
  return workspaceIdOfRawKey(Buffer.from(x, 'base64url'));
}

/** The workspace id of a raw 32-byte Ed25519 public key: base32 of its sha256, first 26 characters. */
export function workspaceIdOfRawKey(raw: Uint8Array): WorkspaceId {
  const digest = createHash('sha256').update(raw).digest();
  return base32Lower(digest).slice(0, WORKSPACE_ID_LENGTH) as WorkspaceId;
}

/** The public JWK of an Ed25519 key object (either half). */
function publicJwkOf(key: KeyObject): PublicJwk {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  const { x } = pub.export({ format: 'jwk' });
  return parsePublicJwk({ kty: 'OKP', crv: 'Ed25519', x });
}

/** Builds the full WorkspaceKey from an Ed25519 private key. */
export function keyFromPrivate(privateKey: KeyObject): WorkspaceKey {
  const publicKey = createPublicKey(privateKey);
  const publicJwk = publicJwkOf(publicKey);
  return { id: workspaceIdFromPublicJwk(publicJwk), publicJwk, privateKey, publicKey };
}

/** Generates a fresh Ed25519 workspace key pair and derives its id. */
export function generateWorkspaceKey(): WorkspaceKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  return keyFromPrivate(privateKey);
}

export function signBytes(key: Pick<WorkspaceKey, 'privateKey'>, bytes: Uint8Array): Buffer {
  return sign(null, bytes, key.privateKey);
}

/**
 * Verifies a raw Ed25519 signature over `bytes` against a public JWK or an
 * Ed25519 key object. Returns false (never throws) for a wrong, truncated or
 * malformed signature. Throws NexusError('USAGE') if the key itself is not a
 * valid Ed25519 public JWK or Ed25519 key object.
 */
export function verifyBytes(publicKey: PublicJwk | KeyObject, bytes: Uint8Array, sig: Uint8Array): boolean {
  let keyObject: KeyObject;
  if (publicKey instanceof KeyObject) {
    if (publicKey.asymmetricKeyType !== 'ed25519') refuse('verification needs an Ed25519 key');
    keyObject = publicKey;
  } else {
    const jwk = parsePublicJwk(publicKey);
    keyObject = createPublicKey({ key: jwk, format: 'jwk' });
  }
  if (!(bytes instanceof Uint8Array) || !(sig instanceof Uint8Array) || sig.length !== 64) return false;
  try {
    return verify(null, bytes, keyObject, sig);
  } catch {
    return false;
  }
}

/** Lowercase hex sha256 of `data` (strings are hashed as UTF-8). */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
