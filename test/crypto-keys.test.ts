// Tests the workspace identity key (crypto/) and the branded id schemas and generators (protocol/ids.ts).

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { generateWorkspaceKey, sha256Hex, signBytes, verifyBytes, workspaceIdFromPublicJwk } from '../crypto/index.js';
import { readWorkspaceKey, writeWorkspaceKey } from '../node-agent/adapters/keys/index.js';
import { NexusError } from '../protocol/errors.js';
import {
  Handle,
  MessageId,
  newMessageId,
  newOpId,
  newSessionId,
  newThreadId,
  OpId,
  SessionId,
  ThreadId,
  WorkspaceId,
  workspaceShort,
} from '../protocol/ids.js';

const tempDirs: string[] = [];

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nexus-keys-'));
  tempDirs.push(dir);
  return dir;
}

afterEach(() => {
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs `fn` and returns the NexusError code it threw; fails if it did not throw one. */
function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(NexusError);
    return (err as NexusError).code;
  }
  throw new Error('expected a NexusError, but nothing was thrown');
}

function flipBit(bytes: Uint8Array, index: number): Buffer {
  const copy = Buffer.from(bytes);
  copy[index] = (copy[index] ?? 0) ^ 0x01;
  return copy;
}

const isPosix = process.platform !== 'win32';

describe('workspace id', () => {
  it('is deterministic from the public key and 26 base32 chars', () => {
    const key = generateWorkspaceKey();
    expect(key.id).toMatch(/^[a-z2-7]{26}$/);
    expect(workspaceIdFromPublicJwk(key.publicJwk)).toBe(key.id);
    expect(workspaceIdFromPublicJwk({ ...key.publicJwk })).toBe(key.id);
    expect(WorkspaceId.safeParse(key.id).success).toBe(true);
    expect(workspaceShort(key.id)).toBe(key.id.slice(0, 4));
  });

  it('matches a known vector (all-zero public key)', () => {
    // sha256(32 zero bytes) = 66687aad...; RFC 4648 base32 of it, lowercased, first 26 chars (checked with Python).
    const x = Buffer.alloc(32).toString('base64url');
    expect(workspaceIdFromPublicJwk({ kty: 'OKP', crv: 'Ed25519', x })).toBe('mzuhvlpymk6xo3epygfy5h4oea');
  });

  it('differs between two keys', () => {
    const a = generateWorkspaceKey();
    const b = generateWorkspaceKey();
    expect(a.id).not.toBe(b.id);
    expect(a.publicJwk.x).not.toBe(b.publicJwk.x);
  });

  const good = generateWorkspaceKey().publicJwk;
  const x31 = Buffer.alloc(31, 7).toString('base64url');
  const x33 = Buffer.alloc(33, 7).toString('base64url');
  // 43 base64url chars carry 258 bits; a last char with low bits set is a non-canonical encoding.
  const nonCanonical = `${Buffer.alloc(32).toString('base64url').slice(0, 42)}B`;
  const badJwks: Array<[string, unknown]> = [
    ['x of 31 bytes', { ...good, x: x31 }],
    ['x of 33 bytes', { ...good, x: x33 }],
    ['x with padding', { ...good, x: `${good.x}=` }],
    ['x in plain base64 alphabet', { ...good, x: `+/${good.x.slice(2)}` }],
    ['x non-canonical', { ...good, x: nonCanonical }],
    ['x missing', { kty: 'OKP', crv: 'Ed25519' }],
    ['x not a string', { ...good, x: 42 }],
    ['kty EC', { ...good, kty: 'EC' }],
    ['kty missing', { crv: 'Ed25519', x: good.x }],
    ['crv X25519', { ...good, crv: 'X25519' }],
    ['crv Ed448', { ...good, crv: 'Ed448' }],
    ['carries d', { ...good, d: Buffer.alloc(32, 1).toString('base64url') }],
    ['carries d = undefined', { ...good, d: undefined }],
    ['extra member', { ...good, kid: 'x' }],
    ['null', null],
    ['a string', JSON.stringify(good)],
    ['an array', [good]],
  ];
  it.each(badJwks)('refuses a JWK with %s (USAGE)', (_label, jwk) => {
    expect(codeOf(() => workspaceIdFromPublicJwk(jwk))).toBe('USAGE');
  });

  it('does not echo the private component of a refused JWK', () => {
    const d = Buffer.alloc(32, 9).toString('base64url');
    try {
      workspaceIdFromPublicJwk({ ...good, d });
      expect.unreachable();
    } catch (err) {
      expect(JSON.stringify((err as NexusError).toJSON())).not.toContain(d);
    }
  });
});

describe('key files', () => {
  it.skipIf(!isPosix)('writes the private key 0600 in a 0700 folder and the JWK 0644', () => {
    const dir = path.join(tempDir(), 'keys');
    writeWorkspaceKey(dir, generateWorkspaceKey());
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(dir, 'workspace.key')).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(dir, 'workspace.pub.jwk')).mode & 0o777).toBe(0o644);
  });

  it('writes a PKCS8 PEM and a bare public JWK', () => {
    const dir = path.join(tempDir(), 'keys');
    const key = generateWorkspaceKey();
    writeWorkspaceKey(dir, key);
    expect(fs.readFileSync(path.join(dir, 'workspace.key'), 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'workspace.pub.jwk'), 'utf8'))).toEqual(key.publicJwk);
  });

  it('refuses to overwrite an existing key', () => {
    const dir = path.join(tempDir(), 'keys');
    const first = generateWorkspaceKey();
    writeWorkspaceKey(dir, first);
    const before = fs.readFileSync(path.join(dir, 'workspace.key'), 'utf8');
    expect(codeOf(() => writeWorkspaceKey(dir, generateWorkspaceKey()))).toBe('STORE_FAILED');
    expect(codeOf(() => writeWorkspaceKey(dir, first))).toBe('STORE_FAILED');
    expect(fs.readFileSync(path.join(dir, 'workspace.key'), 'utf8')).toBe(before);
    expect(readWorkspaceKey(dir).id).toBe(first.id);
  });

  it('refuses to write when only the public file is already there', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'workspace.pub.jwk'), '{}');
    expect(codeOf(() => writeWorkspaceKey(dir, generateWorkspaceKey()))).toBe('STORE_FAILED');
    expect(fs.existsSync(path.join(dir, 'workspace.key'))).toBe(false);
  });

  it('refuses a key whose id does not match its private key (USAGE)', () => {
    const a = generateWorkspaceKey();
    const b = generateWorkspaceKey();
    const dir = path.join(tempDir(), 'keys');
    expect(codeOf(() => writeWorkspaceKey(dir, { ...a, id: b.id }))).toBe('USAGE');
    expect(codeOf(() => writeWorkspaceKey(dir, { ...a, publicJwk: b.publicJwk }))).toBe('USAGE');
    expect(fs.existsSync(path.join(dir, 'workspace.key'))).toBe(false);
  });

  it('reads back the same key', () => {
    const dir = path.join(tempDir(), 'keys');
    const key = generateWorkspaceKey();
    writeWorkspaceKey(dir, key);
    const back = readWorkspaceKey(dir);
    expect(back.id).toBe(key.id);
    expect(back.publicJwk).toEqual(key.publicJwk);
    const msg = new TextEncoder().encode('round trip');
    expect(verifyBytes(key.publicJwk, msg, signBytes(back, msg))).toBe(true);
    expect(verifyBytes(back.publicKey, msg, signBytes(key, msg))).toBe(true);
  });

  it('detects a JWK that does not match the private key', () => {
    const dir = path.join(tempDir(), 'keys');
    writeWorkspaceKey(dir, generateWorkspaceKey());
    const other = generateWorkspaceKey();
    fs.writeFileSync(path.join(dir, 'workspace.pub.jwk'), JSON.stringify(other.publicJwk));
    expect(codeOf(() => readWorkspaceKey(dir))).toBe('STORE_FAILED');
  });

  it('fails with STORE_FAILED on missing or malformed files', () => {
    const missing = path.join(tempDir(), 'nothing-here');
    expect(codeOf(() => readWorkspaceKey(missing))).toBe('STORE_FAILED');

    const dir = path.join(tempDir(), 'keys');
    writeWorkspaceKey(dir, generateWorkspaceKey());
    const pubFile = path.join(dir, 'workspace.pub.jwk');
    const good = fs.readFileSync(pubFile, 'utf8');
    fs.writeFileSync(pubFile, 'not json');
    expect(codeOf(() => readWorkspaceKey(dir))).toBe('STORE_FAILED');
    fs.writeFileSync(pubFile, good);
    fs.writeFileSync(path.join(dir, 'workspace.key'), '-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n');
    expect(codeOf(() => readWorkspaceKey(dir))).toBe('STORE_FAILED');
    fs.rmSync(pubFile);
    expect(codeOf(() => readWorkspaceKey(dir))).toBe('STORE_FAILED');
  });
});

describe('sign and verify', () => {
  const key = generateWorkspaceKey();
  const bytes = new TextEncoder().encode('the op log entry');
  const sig = signBytes(key, bytes);

  it('round trips with the JWK and with the key object', () => {
    expect(sig).toHaveLength(64);
    expect(verifyBytes(key.publicJwk, bytes, sig)).toBe(true);
    expect(verifyBytes(key.publicKey, bytes, sig)).toBe(true);
  });

  it('fails for a flipped bit in the bytes, without throwing', () => {
    for (const i of [0, bytes.length - 1]) {
      expect(verifyBytes(key.publicJwk, flipBit(bytes, i), sig)).toBe(false);
    }
  });

  it('fails for a flipped bit in the signature, without throwing', () => {
    for (const i of [0, 31, 32, 63]) {
      expect(verifyBytes(key.publicJwk, bytes, flipBit(sig, i))).toBe(false);
    }
  });

  it('fails for malformed signatures, without throwing', () => {
    const malformed: unknown[] = [new Uint8Array(0), sig.subarray(0, 63), Buffer.concat([sig, Buffer.of(0)]), 'sig', null];
    for (const s of malformed) {
      expect(verifyBytes(key.publicKey, bytes, s as Uint8Array)).toBe(false);
    }
  });

  it('fails under another key', () => {
    expect(verifyBytes(generateWorkspaceKey().publicJwk, bytes, sig)).toBe(false);
  });

  it('hashes strings as UTF-8 and bytes as given', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe(sha256Hex(new TextEncoder().encode('abc')));
  });
});

describe('id schemas', () => {
  const ws = generateWorkspaceKey().id;
  const ulid = newOpId();
  type Row = [name: string, schema: { safeParse(v: unknown): { success: boolean } }, value: unknown, ok: boolean];
  const rows: Row[] = [
    ['WorkspaceId', WorkspaceId, ws, true],
    ['WorkspaceId', WorkspaceId, ws.toUpperCase(), false],
    ['WorkspaceId', WorkspaceId, ws.slice(0, 25), false],
    ['WorkspaceId', WorkspaceId, `${ws}a`, false],
    ['WorkspaceId', WorkspaceId, `${ws.slice(0, 25)}1`, false],
    ['WorkspaceId', WorkspaceId, `${ws.slice(0, 25)}8`, false],
    ['WorkspaceId', WorkspaceId, `${ws.slice(0, 24)}==`, false],
    ['WorkspaceId', WorkspaceId, ` ${ws.slice(1)}`, false],
    ['WorkspaceId', WorkspaceId, 42, false],

    ['ThreadId', ThreadId, newThreadId(), true],
    ['ThreadId', ThreadId, `t-${ulid}`, true],
    ['ThreadId', ThreadId, `t-${ulid.toLowerCase()}`, false],
    ['ThreadId', ThreadId, `m-${ulid}`, false],
    ['ThreadId', ThreadId, ulid, false],
    ['ThreadId', ThreadId, `t-${ulid.slice(0, 25)}`, false],
    ['ThreadId', ThreadId, `t-${ulid}0`, false],
    ['ThreadId', ThreadId, `t-${ulid.slice(0, 25)}U`, false],
    ['ThreadId', ThreadId, `t-${ulid.slice(0, 25)}I`, false],
    ['ThreadId', ThreadId, `t-8${ulid.slice(1)}`, false],
    ['ThreadId', ThreadId, `T-${ulid}`, false],

    ['MessageId', MessageId, newMessageId(), true],
    ['MessageId', MessageId, newThreadId(), false],
    ['MessageId', MessageId, `m-${ulid.slice(0, 25)}L`, false],

    ['SessionId', SessionId, newSessionId(), true],
    ['SessionId', SessionId, newMessageId(), false],
    ['SessionId', SessionId, `s_${ulid}`, false],

    ['OpId', OpId, newOpId(), true],
    ['OpId', OpId, newThreadId(), false],
    ['OpId', OpId, ulid.toLowerCase(), false],
    ['OpId', OpId, `${ulid.slice(0, 25)}O`, false],

    ['Handle', Handle, 'alice', true],
    ['Handle', Handle, 'a', true],
    ['Handle', Handle, 'bob.smith-2_x', true],
    ['Handle', Handle, `a${'b'.repeat(39)}`, true],
    ['Handle', Handle, `a${'b'.repeat(40)}`, false],
    ['Handle', Handle, 'Alice', false],
    ['Handle', Handle, '1alice', false],
    ['Handle', Handle, '', false],
    ['Handle', Handle, 'alice smith', false],
    ['Handle', Handle, `${workspaceShort(ws)}/coder`, true],
    ['Handle', Handle, 'ab23/coder', true],
    ['Handle', Handle, 'ab23/code_review-2', true],
    ['Handle', Handle, `ab23/c${'d'.repeat(39)}`, true],
    ['Handle', Handle, `ab23/c${'d'.repeat(40)}`, false],
    ['Handle', Handle, 'ab12/coder', false], // '1' is not a base32 character, so no workspace short holds it
    ['Handle', Handle, 'AB23/coder', false],
    ['Handle', Handle, 'ab2/coder', false],
    ['Handle', Handle, 'ab234/coder', false],
    ['Handle', Handle, 'ab23/Coder', false],
    ['Handle', Handle, 'ab23/2coder', false],
    ['Handle', Handle, 'ab23/co.der', false],
    ['Handle', Handle, 'ab23/', false],
    ['Handle', Handle, 'ab23/coder/x', false],
  ];
  it.each(rows)('%s %j -> %s', (_name, schema, value, ok) => {
    expect(schema.safeParse(value).success).toBe(ok);
  });
});

describe('ULID ids', () => {
  it('are monotonic: 1000 ids sort in creation order', () => {
    for (const make of [newOpId, newThreadId, newMessageId, newSessionId] as Array<() => string>) {
      const ids = Array.from({ length: 1000 }, () => make());
      expect([...ids].sort()).toEqual(ids);
      expect(new Set(ids).size).toBe(ids.length);
    }
  });

  it('stay monotonic across kinds', () => {
    const ops: string[] = [];
    for (let i = 0; i < 1000; i += 1) {
      ops.push(newOpId());
      ops.push(newThreadId().slice(2));
    }
    expect([...ops].sort()).toEqual(ops);
  });
});
