// Commission stamps (crypto/stamp.ts) and their admission against trust entries and the seen stamp
// ids kept in the workspace's store (node-agent/trust): a table of forgeries built by hand, each refused with its code, and
// properties over random mutations of valid stamps.
import { createHmac, sign, type KeyObject } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { and, eq, sql } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { generateWorkspaceKey, signStamp, STAMP_CODES, STAMP_DEPTH_CAP, STAMP_TYP, verifyStamp, type PublicJwk, type StampRequest, type StampVerdict, type VerifyStampOptions, type WorkspaceKey } from '../crypto/index.js';
import { writeWorkspaceKey } from '../node-agent/adapters/keys/index.js';
import { NexusError } from '../protocol/errors.js';
import { newThreadId } from '../protocol/ids.js';
import { DEPTH_CAP } from '../node-agent/capabilities/threads/depth.js';
import { workspacePaths, type WorkspacePaths } from '../node-agent/paths.js';
import {
  addTrust,
  admitStamp,
  chainFrom,
  claimStamp,
  findTrust,
  listTrust,
  removeTrust,
  resolveAlias,
  stampSeen,
  trustResolver,
} from '../node-agent/capabilities/trust/index.js';
import { createStore, openStore, tables, type Store } from '../node-agent/adapters/store/index.js';
import { deliver } from './helpers/deliver.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

// ---- the cast: A asks (trusted), B receives, C is another trusted workspace, D is trusted by nobody

const A = generateWorkspaceKey();
const B = generateWorkspaceKey();
const C = generateWorkspaceKey();
const D = generateWorkspaceKey();
const TRUST = new Map<string, PublicJwk>([
  [A.id, A.publicJwk],
  [C.id, C.publicJwk],
]);
const NOW = new Date();
const NOW_S = Math.floor(NOW.getTime() / 1000);
const THREAD = newThreadId();

function request(over: Partial<StampRequest> = {}, key: WorkspaceKey = A): StampRequest {
  return { sub: `${key.id.slice(0, 4)}/planner`, role: 'planner', aud: B.id, target_role: 'coder', thread: THREAD, depth: 3, ...over };
}

let jtiCounter = 0;
/** A complete, valid claims object for hand-built tokens. */
function claims(over: Record<string, unknown> = {}, key: WorkspaceKey = A): Record<string, unknown> {
  return {
    iss: key.id,
    sub: `${key.id.slice(0, 4)}/planner`,
    role: 'planner',
    aud: B.id,
    target_role: 'coder',
    thread: THREAD,
    depth: 3,
    iat: NOW_S,
    exp: NOW_S + 3600,
    jti: `01HAND${String(++jtiCounter).padStart(20, '0')}`,
    ...over,
  };
}

const b64 = (v: unknown): string => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const HEADER = { alg: 'EdDSA', typ: STAMP_TYP };

type Signer = KeyObject | { hmac: Buffer } | 'none';
/** A compact JWS built by hand: any header, any payload, signed however the case needs. */
function craft(header: unknown, payload: unknown, signer: Signer, rawPayload = false): string {
  const h = b64(header);
  const p = rawPayload ? String(payload) : b64(payload);
  const input = Buffer.from(`${h}.${p}`);
  let sig = '';
  if (signer === 'none') sig = '';
  else if ('hmac' in signer) sig = createHmac('sha256', signer.hmac).update(input).digest('base64url');
  else sig = sign(null, input, signer).toString('base64url');
  return `${h}.${p}.${sig}`;
}

function opts(over: Partial<VerifyStampOptions> = {}): VerifyStampOptions {
  return { trust: (iss) => TRUST.get(iss) ?? null, audience: B.id, now: NOW, seen: () => false, ...over };
}

function segments(token: string): [string, string, string] {
  return token.split('.') as [string, string, string];
}

// ---- a receiving workspace on disk (only its key and .nxs/), for trust entries

const dirs: string[] = [];
function receiver(key: WorkspaceKey = B): WorkspacePaths {
  const root = mkdtempSync(join(tmpdir(), 'nexus-stamps-'));
  dirs.push(root);
  const paths = workspacePaths(root);
  writeWorkspaceKey(paths.keys, key);
  return paths;
}

// ---- a store where admitted ids are claimed (the receivers share it: every stamp has its own jti)

let store: Store;
const storeDir = mkdtempSync(join(tmpdir(), 'nexus-stamps-store-'));
dirs.push(storeDir);
beforeAll(async () => {
  await createStore(join(storeDir, 'store'), inject('nexusHome'));
  store = await openStore(join(storeDir, 'store'));
});
afterAll(async () => {
  await store?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

// ---- the forgery table

type Case = { name: string; code: string; make: () => Promise<{ token: unknown; over?: Partial<VerifyStampOptions> }> };

const FORGERIES: Case[] = [
  { name: 'alg: none, empty signature', code: 'STAMP_FORGED', make: async () => ({ token: craft({ alg: 'none', typ: STAMP_TYP }, claims(), 'none') }) },
  { name: 'alg: none, no typ', code: 'STAMP_FORGED', make: async () => ({ token: craft({ alg: 'none' }, claims(), 'none') }) },
  {
    name: "HS256 keyed with the trusted public key's raw bytes",
    code: 'STAMP_FORGED',
    make: async () => ({ token: craft({ alg: 'HS256', typ: STAMP_TYP }, claims(), { hmac: Buffer.from(A.publicJwk.x, 'base64url') }) }),
  },
  {
    name: "HS256 keyed with the trusted public JWK's JSON",
    code: 'STAMP_FORGED',
    make: async () => ({ token: craft({ alg: 'HS256', typ: STAMP_TYP }, claims(), { hmac: Buffer.from(JSON.stringify(A.publicJwk)) }) }),
  },
  {
    name: "an embedded jwk header (the attacker's key) claiming a trusted iss",
    code: 'STAMP_FORGED',
    make: async () => ({ token: craft({ ...HEADER, jwk: D.publicJwk }, claims(), D.privateKey) }),
  },
  {
    name: 'an embedded jwk header even with the right key and signature',
    code: 'STAMP_FORGED',
    make: async () => ({ token: craft({ ...HEADER, jwk: A.publicJwk }, claims(), A.privateKey) }),
  },
  { name: 'a jku header', code: 'STAMP_FORGED', make: async () => ({ token: craft({ ...HEADER, jku: 'https://evil.example/jwks.json' }, claims(), D.privateKey) }) },
  { name: 'an x5u header', code: 'STAMP_FORGED', make: async () => ({ token: craft({ ...HEADER, x5u: 'https://evil.example/cert.pem' }, claims(), D.privateKey) }) },
  { name: 'an x5c header', code: 'STAMP_FORGED', make: async () => ({ token: craft({ ...HEADER, x5c: ['MIIB'] }, claims(), A.privateKey) }) },
  { name: 'a kid naming another trusted key', code: 'STAMP_FORGED', make: async () => ({ token: craft({ ...HEADER, kid: C.id }, claims(), C.privateKey) }) },
  { name: 'a kid at all (naming the right key)', code: 'STAMP_FORGED', make: async () => ({ token: craft({ ...HEADER, kid: A.id }, claims(), A.privateKey) }) },
  {
    name: 'an unknown crit',
    code: 'STAMP_FORGED',
    make: async () => ({ token: craft({ ...HEADER, crit: ['nexus-policy'], 'nexus-policy': 'lenient' }, claims(), A.privateKey) }),
  },
  {
    name: 'b64: false (unencoded payload)',
    code: 'STAMP_FORGED',
    make: async () => ({ token: craft({ ...HEADER, b64: false, crit: ['b64'] }, JSON.stringify(claims()), A.privateKey, true) }),
  },
  { name: 'an extra header member', code: 'STAMP_FORGED', make: async () => ({ token: craft({ ...HEADER, cty: 'JWT' }, claims(), A.privateKey) }) },
  {
    name: 'tampered payload (depth 3 -> 0, re-encoded, old signature)',
    code: 'STAMP_FORGED',
    make: async () => {
      const [h, p, s] = segments(await signStamp(A, request()));
      const c = JSON.parse(Buffer.from(p, 'base64url').toString());
      return { token: `${h}.${b64({ ...c, depth: 0 })}.${s}` };
    },
  },
  {
    name: 'tampered payload (target_role changed)',
    code: 'STAMP_FORGED',
    make: async () => {
      const [h, p, s] = segments(await signStamp(A, request()));
      const c = JSON.parse(Buffer.from(p, 'base64url').toString());
      return { token: `${h}.${b64({ ...c, target_role: 'deployer' })}.${s}` };
    },
  },
  {
    name: 'tampered signature (one byte flipped)',
    code: 'STAMP_FORGED',
    make: async () => {
      const [h, p, s] = segments(await signStamp(A, request()));
      const sig = Buffer.from(s, 'base64url');
      sig[10] = sig[10]! ^ 0x40;
      return { token: `${h}.${p}.${sig.toString('base64url')}` };
    },
  },
  {
    name: 'signature with non-canonical trailing bits (same bytes, different text)',
    code: 'STAMP_FORGED',
    make: async () => {
      const [h, p, s] = segments(await signStamp(A, request()));
      // 64 bytes are 86 characters; the last one carries 4 unused bits. Set one of them.
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const last = alphabet.indexOf(s.at(-1)!);
      return { token: `${h}.${p}.${s.slice(0, -1)}${alphabet[last ^ 1]}` };
    },
  },
  { name: 'truncated signature', code: 'STAMP_FORGED', make: async () => ({ token: (await signStamp(A, request())).slice(0, -4) }) },
  { name: 'wrong audience (addressed to C)', code: 'STAMP_WRONG_AUDIENCE', make: async () => ({ token: await signStamp(A, request({ aud: C.id })) }) },
  { name: 'wrong typ (JWT)', code: 'STAMP_FORGED', make: async () => ({ token: craft({ alg: 'EdDSA', typ: 'JWT' }, claims(), A.privateKey) }) },
  {
    name: 'wrong typ (application/ prefix, which jose alone would accept)',
    code: 'STAMP_FORGED',
    make: async () => ({ token: craft({ alg: 'EdDSA', typ: `application/${STAMP_TYP}` }, claims(), A.privateKey) }),
  },
  { name: 'no typ', code: 'STAMP_FORGED', make: async () => ({ token: craft({ alg: 'EdDSA' }, claims(), A.privateKey) }) },
  {
    name: 'expired (signed 8 days ago, 7-day lifetime)',
    code: 'STAMP_EXPIRED',
    make: async () => ({ token: await signStamp(A, request(), { now: new Date(NOW.getTime() - 8 * 86400_000) }) }),
  },
  {
    name: 'expired beyond the tolerance (exp 61 s ago)',
    code: 'STAMP_EXPIRED',
    make: async () => ({ token: craft(HEADER, claims({ iat: NOW_S - 3600, exp: NOW_S - 61 }), A.privateKey) }),
  },
  {
    name: 'issued in the future beyond tolerance (+120 s)',
    code: 'STAMP_NOT_YET_VALID',
    make: async () => ({ token: await signStamp(A, request(), { now: new Date(NOW.getTime() + 120_000) }) }),
  },
  {
    name: 'issued in the future with a custom tolerance of 0 (+5 s)',
    code: 'STAMP_NOT_YET_VALID',
    make: async () => ({ token: await signStamp(A, request(), { now: new Date(NOW.getTime() + 5_000) }), over: { clockToleranceSec: 0 } }),
  },
  {
    name: 'missing exp',
    code: 'STAMP_MALFORMED',
    make: async () => {
      const { exp: _exp, ...c } = claims();
      return { token: craft(HEADER, c, A.privateKey) };
    },
  },
  {
    name: 'missing jti',
    code: 'STAMP_MALFORMED',
    make: async () => {
      const { jti: _jti, ...c } = claims();
      return { token: craft(HEADER, c, A.privateKey) };
    },
  },
  { name: 'aud as an array holding the receiver', code: 'STAMP_MALFORMED', make: async () => ({ token: craft(HEADER, claims({ aud: [B.id] }), A.privateKey) }) },
  { name: 'an unknown claim (nbf)', code: 'STAMP_MALFORMED', make: async () => ({ token: craft(HEADER, claims({ nbf: NOW_S }), A.privateKey) }) },
  { name: 'sub not the handle of role in iss', code: 'STAMP_MALFORMED', make: async () => ({ token: craft(HEADER, claims({ sub: 'zzzz/planner' }), A.privateKey) }) },
  {
    name: 'a lifetime over 30 days',
    code: 'STAMP_MALFORMED',
    make: async () => ({ token: craft(HEADER, claims({ exp: NOW_S + 31 * 86400 }), A.privateKey) }),
  },
  { name: 'a key not in the trust entries (D signs as itself)', code: 'STAMP_UNTRUSTED', make: async () => ({ token: await signStamp(D, request({}, D)) }) },
  {
    name: "a trust entry holding another workspace's key",
    code: 'STAMP_UNTRUSTED',
    make: async () => ({ token: await signStamp(A, request()), over: { trust: (iss) => (iss === A.id ? C.publicJwk : null) } }),
  },
  {
    name: 'a trust lookup that throws',
    code: 'STAMP_UNTRUSTED',
    make: async () => ({
      token: await signStamp(A, request()),
      over: {
        trust: () => {
          throw new Error('disk on fire');
        },
      },
    }),
  },
  {
    name: 'an entry removed (trusted, admitted, then removed)',
    code: 'STAMP_UNTRUSTED',
    make: async () => {
      const paths = receiver();
      addTrust(paths, { workspace: A.id, key: A.publicJwk, name: 'asker' });
      const first = await admitStamp(store.db, paths, await signStamp(A, request()), { now: NOW });
      expect(first.ok).toBe(true);
      removeTrust(paths, 'asker');
      return { token: await signStamp(A, request()), over: { trust: trustResolver(paths) } };
    },
  },
  {
    name: 'a replay: the same stamp twice (its id is in the store)',
    code: 'STAMP_REPLAYED',
    make: async () => {
      const paths = receiver();
      addTrust(paths, { workspace: A.id, key: A.publicJwk, name: null });
      const token = await signStamp(A, request());
      const first = await admitStamp(store.db, paths, token, { now: NOW });
      if (!first.ok) throw new Error(first.message);
      const seen = await stampSeen(store.db, first.claims.jti);
      return { token, over: { trust: trustResolver(paths), seen: () => seen } };
    },
  },
  {
    name: 'a seen check that throws',
    code: 'STAMP_REPLAYED',
    make: async () => ({
      token: await signStamp(A, request()),
      over: {
        seen: () => {
          throw new Error('unreadable');
        },
      },
    }),
  },
  { name: 'depth 32 stamped (33 > 32)', code: 'DEPTH_EXCEEDED', make: async () => ({ token: await signStamp(A, request({ depth: 32 })) }) },
  { name: 'depth 1e9 stamped', code: 'DEPTH_EXCEEDED', make: async () => ({ token: craft(HEADER, claims({ depth: 1e9 }), A.privateKey) }) },
  { name: 'non-integer depth (3.5)', code: 'STAMP_MALFORMED', make: async () => ({ token: craft(HEADER, claims({ depth: 3.5 }), A.privateKey) }) },
  { name: 'depth as a string', code: 'STAMP_MALFORMED', make: async () => ({ token: craft(HEADER, claims({ depth: '3' }), A.privateKey) }) },
  { name: 'depth beyond safe integers', code: 'STAMP_MALFORMED', make: async () => ({ token: craft(HEADER, claims({ depth: 2 ** 60 }), A.privateKey) }) },
  { name: 'negative depth', code: 'STAMP_MALFORMED', make: async () => ({ token: craft(HEADER, claims({ depth: -1 }), A.privateKey) }) },
  {
    name: "signed by another trusted workspace's key (C) claiming A's iss",
    code: 'STAMP_FORGED',
    make: async () => ({ token: craft(HEADER, claims(), C.privateKey) }),
  },
  { name: 'not a string (null)', code: 'STAMP_MALFORMED', make: async () => ({ token: null }) },
  { name: 'not a string (an object)', code: 'STAMP_MALFORMED', make: async () => ({ token: { protected: 'x' } }) },
  { name: 'not a compact JWS (two parts)', code: 'STAMP_MALFORMED', make: async () => ({ token: 'abc.def' }) },
  { name: 'not a compact JWS (four parts)', code: 'STAMP_MALFORMED', make: async () => ({ token: `${await signStamp(A, request())}.x` }) },
  { name: 'padded base64', code: 'STAMP_MALFORMED', make: async () => ({ token: `${b64(HEADER)}==.${b64(claims())}.AAAA` }) },
  { name: 'header not JSON', code: 'STAMP_MALFORMED', make: async () => ({ token: `${b64('not json')}.${b64(claims())}.AAAA` }) },
  { name: 'payload not JSON', code: 'STAMP_MALFORMED', make: async () => ({ token: craft(HEADER, 'bm90IGpzb24', A.privateKey, true) }) },
  { name: 'payload a JSON array', code: 'STAMP_MALFORMED', make: async () => ({ token: craft(HEADER, [claims()], A.privateKey) }) },
  { name: 'far too long', code: 'STAMP_MALFORMED', make: async () => ({ token: craft(HEADER, claims({ jti: 'x'.repeat(5000) }), A.privateKey) }) },
];

describe('a commission stamp', () => {
  it.each(FORGERIES)('refuses $name with $code, without throwing', async ({ code, make }) => {
    const { token, over } = await make();
    const verdict = await verifyStamp(token, opts(over));
    expect(verdict.ok, JSON.stringify(verdict)).toBe(false);
    if (!verdict.ok) {
      expect(verdict.code, verdict.message).toBe(code);
      expect(verdict.message).not.toMatch(/could not be checked/); // a reasoned refusal, not the catch-all
    }
  });

  it('admits a valid stamp from a trusted workspace, with its claims and the next depth', async () => {
    const token = await signStamp(A, request(), { now: NOW });
    const [h] = segments(token);
    expect(JSON.parse(Buffer.from(h, 'base64url').toString())).toEqual({ alg: 'EdDSA', typ: STAMP_TYP });
    const verdict = await verifyStamp(token, opts());
    expect(verdict).toMatchObject({ ok: true, sessionDepth: 4 });
    if (!verdict.ok) throw new Error('refused');
    expect(verdict.claims).toEqual({
      iss: A.id,
      sub: `${A.id.slice(0, 4)}/planner`,
      role: 'planner',
      aud: B.id,
      target_role: 'coder',
      thread: THREAD,
      depth: 3,
      iat: NOW_S,
      exp: NOW_S + 7 * 86400,
      jti: expect.stringMatching(/^[0-9A-HJKMNP-TV-Z]{26}$/),
    });
  });

  it.each([
    ['depth 31 (opens hop 32)', request({ depth: 31 }), {}, 32],
    ['depth 0 from a person', request({ sub: 'alice', role: null, depth: 0 }), {}, 1],
    ['from the other trusted workspace', request({}, C), {}, 4],
    ['issued 30 s in the future (within the tolerance)', request(), { now: new Date(NOW.getTime() + 30_000) }, 4],
    ['expired 30 s ago (within the tolerance)', request(), { now: new Date(NOW.getTime() - 3600_000 - 30_000), ttlSec: 3600 }, 4],
  ] as const)('admits %s', async (_name, req, signOpts, sessionDepth) => {
    const key = req.sub.startsWith(C.id.slice(0, 4)) ? C : A;
    const verdict = await verifyStamp(await signStamp(key, req, signOpts), opts());
    expect(verdict, JSON.stringify(verdict)).toMatchObject({ ok: true, sessionDepth, claims: { depth: req.depth, iss: key.id } });
  });

  it('gives every stamp its own jti', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const v = await verifyStamp(await signStamp(A, request()), opts());
      if (v.ok) ids.add(v.claims.jti);
    }
    expect(ids.size).toBe(50);
  });

  it('is signed only with valid claims: signStamp refuses them with USAGE', async () => {
    for (const bad of [request({ depth: 33 }), request({ depth: -1 }), request({ depth: 1.5 }), request({ aud: 'nope' }), request({ thread: 'x' }), request({ sub: 'alice' })]) {
      await expect(signStamp(A, bad)).rejects.toSatisfy((e: unknown) => e instanceof NexusError && e.code === 'USAGE');
    }
    await expect(signStamp(A, request(), { ttlSec: 31 * 86400 })).rejects.toBeInstanceOf(NexusError);
    await expect(signStamp(A, request(), { ttlSec: 0 })).rejects.toBeInstanceOf(NexusError);
  });

  it('carries the asking operation\'s turns when given, and verifies without them (a stamp of an older node)', async () => {
    const carried = await verifyStamp(await signStamp(A, request({ turns: 137 })), opts());
    expect(carried).toMatchObject({ ok: true, claims: { turns: 137 } });
    const without = await verifyStamp(craft(HEADER, claims(), A.privateKey), opts());
    expect(without.ok, JSON.stringify(without)).toBe(true);
    if (without.ok) expect(without.claims.turns).toBeUndefined();
  });

  it.each([-1, 1.5, '3', null])('refuses turns %j as STAMP_MALFORMED, and signStamp refuses it with USAGE', async (turns) => {
    const verdict = await verifyStamp(craft(HEADER, claims({ turns }), A.privateKey), opts());
    expect(verdict).toMatchObject({ ok: false, code: 'STAMP_MALFORMED' });
    await expect(signStamp(A, request({ turns: turns as number }))).rejects.toSatisfy((e: unknown) => e instanceof NexusError && e.code === 'USAGE');
  });

  it('checks depth against the same cap as the depth guard', () => {
    expect(STAMP_DEPTH_CAP).toBe(DEPTH_CAP);
  });
});

// ---- after `nxs key rotate`: A signs with a key its rotation chain certified, its id stays the genesis key's

const A2 = generateWorkspaceKey();
const A3 = generateWorkspaceKey();
/** A after rotations: same id (the genesis key's), another private key. */
const rotated = (next: WorkspaceKey): WorkspaceKey => ({ ...A, privateKey: next.privateKey });

describe('a stamp signed by a rotated key', () => {
  it('verifies when the receiver offers the chain key after the trusted genesis key', async () => {
    const token = await signStamp(rotated(A2), request(), { now: NOW });
    const verdict = await verifyStamp(token, opts({ trust: (iss) => (iss === A.id ? [A.publicJwk, A2.publicJwk] : null) }));
    expect(verdict).toMatchObject({ ok: true, sessionDepth: 4, claims: { iss: A.id } });
    // The genesis key still verifies what it signs, with the chain offered too.
    expect(await verifyStamp(await signStamp(A, request(), { now: NOW }), opts({ trust: () => [A.publicJwk, A2.publicJwk] }))).toMatchObject({ ok: true });
  });

  it('is FORGED when the chain key is not offered, or another key is', async () => {
    const token = await signStamp(rotated(A2), request(), { now: NOW });
    expect(await verifyStamp(token, opts())).toMatchObject({ ok: false, code: 'STAMP_FORGED' });
    expect(await verifyStamp(token, opts({ trust: () => [A.publicJwk] }))).toMatchObject({ ok: false, code: 'STAMP_FORGED' });
    expect(await verifyStamp(token, opts({ trust: () => [A.publicJwk, A3.publicJwk, C.publicJwk] }))).toMatchObject({ ok: false, code: 'STAMP_FORGED' });
  });

  it('gains nothing from extra keys when iss is untrusted or its genesis key does not derive iss', async () => {
    const token = await signStamp(rotated(A2), request(), { now: NOW });
    // No genesis key for iss: the extra key alone is no trust entry.
    expect(await verifyStamp(token, opts({ trust: () => null }))).toMatchObject({ ok: false, code: 'STAMP_UNTRUSTED' });
    expect(await verifyStamp(token, opts({ trust: () => [] }))).toMatchObject({ ok: false, code: 'STAMP_UNTRUSTED' });
    // The signing key first (it does not derive A's id), or another workspace's genesis key first.
    expect(await verifyStamp(token, opts({ trust: () => [A2.publicJwk] }))).toMatchObject({ ok: false, code: 'STAMP_UNTRUSTED' });
    expect(await verifyStamp(token, opts({ trust: () => [C.publicJwk, A2.publicJwk] }))).toMatchObject({ ok: false, code: 'STAMP_UNTRUSTED' });
    // D signs with a key offered as a "chain key" of untrusted D: still untrusted.
    const fromD = await signStamp({ ...D, privateKey: A2.privateKey }, request({}, D), { now: NOW });
    expect(await verifyStamp(fromD, opts({ trust: (iss) => (iss === D.id ? null : [A.publicJwk, A2.publicJwk]) }))).toMatchObject({ ok: false, code: 'STAMP_UNTRUSTED' });
    // A key offered for A does not vouch for C's stamp signed with it.
    const asC = await signStamp({ ...C, privateKey: A2.privateKey }, request({}, C), { now: NOW });
    expect(await verifyStamp(asC, opts({ trust: (iss) => (iss === A.id ? [A.publicJwk, A2.publicJwk] : (TRUST.get(iss) ?? null)) }))).toMatchObject({
      ok: false,
      code: 'STAMP_FORGED',
    });
  });

  it('keeps final refusals final: an expired stamp from a chain key is EXPIRED, not FORGED', async () => {
    const token = await signStamp(rotated(A2), request(), { now: new Date(NOW.getTime() - 7200_000), ttlSec: 600 });
    expect(await verifyStamp(token, opts({ trust: () => [A.publicJwk, A2.publicJwk] }))).toMatchObject({ ok: false, code: 'STAMP_EXPIRED' });
  });

  it('offers, on admission, only chain keys reachable from the trusted genesis key, and nothing once trust is removed', async () => {
    const paths = receiver();
    addTrust(paths, { workspace: A.id, key: A.publicJwk, name: 'asker' });
    const link = (key: WorkspaceKey, by: WorkspaceKey) => ({ key: key.publicJwk.x, signedBy: by.publicJwk.x });
    const chain = [link(A2, A), link(A3, A2)];
    const byA3 = async () => signStamp(rotated(A3), request(), { now: NOW });
    expect(chainFrom(A.publicJwk.x, chain)).toEqual([A2.publicJwk.x, A3.publicJwk.x]);
    expect(chainFrom(A.publicJwk.x, [link(A3, A2)])).toEqual([]);
    // A3 certified by A2, itself certified by the genesis key: admitted.
    expect(await admitStamp(store.db, paths, await byA3(), { now: NOW, certified: (iss) => (iss === A.id ? chain : []) })).toMatchObject({ ok: true });
    // No chain, or a link that does not start at the genesis key: forged.
    expect(await admitStamp(store.db, paths, await byA3(), { now: NOW })).toMatchObject({ ok: false, code: 'STAMP_FORGED' });
    expect(await admitStamp(store.db, paths, await byA3(), { now: NOW, certified: () => [link(A3, A2)] })).toMatchObject({ ok: false, code: 'STAMP_FORGED' });
    expect(await admitStamp(store.db, paths, await byA3(), { now: NOW, certified: () => [link(A3, D)] })).toMatchObject({ ok: false, code: 'STAMP_FORGED' });
    // Trust removed: everything from A is refused at once, the chain notwithstanding.
    removeTrust(paths, A.id);
    expect(await admitStamp(store.db, paths, await byA3(), { now: NOW, certified: () => chain })).toMatchObject({ ok: false, code: 'STAMP_UNTRUSTED' });
    expect(await admitStamp(store.db, paths, await signStamp(A, request(), { now: NOW }), { now: NOW, certified: () => chain })).toMatchObject({
      ok: false,
      code: 'STAMP_UNTRUSTED',
    });
  });
});

describe('admitting stamps in a workspace', () => {
  let paths: WorkspacePaths;
  beforeAll(() => {
    paths = receiver();
    addTrust(paths, { workspace: A.id, key: A.publicJwk, name: 'asker' });
  });

  it('admits once, records the jti with its expiry in the store (no file), and refuses it again, after a reopen too', async () => {
    const token = await signStamp(A, request(), { now: NOW, ttlSec: 600 });
    const first = await admitStamp(store.db, paths, token, { now: NOW });
    if (!first.ok) throw new Error(first.message);
    const rows = (await store.db.execute(sql`select forget_after from stamps_seen where jti = ${first.claims.jti}`)) as unknown as { rows: Array<{ forget_after: string | number }> };
    expect(Number(rows.rows[0]!.forget_after)).toBe(NOW_S + 600 + 60);
    expect(existsSync(join(paths.nxs, 'stamps-seen.json'))).toBe(false);
    expect(await admitStamp(store.db, paths, token, { now: NOW })).toMatchObject({ ok: false, code: 'STAMP_REPLAYED' });
    await store.close();
    store = await openStore(join(storeDir, 'store'));
    expect(await admitStamp(store.db, paths, token, { now: NOW })).toMatchObject({ ok: false, code: 'STAMP_REPLAYED' });
  });

  it('an id claimed in a transaction that rolls back is not used up', async () => {
    const token = await signStamp(A, request(), { now: NOW });
    await expect(
      store.db.transaction(async (tx) => {
        expect((await admitStamp(tx, paths, token, { now: NOW })).ok).toBe(true);
        throw new Error('the admitting transaction failed');
      }),
    ).rejects.toThrow(/admitting transaction failed/);
    expect((await admitStamp(store.db, paths, token, { now: NOW })).ok).toBe(true);
  });

  it('admits one of two concurrent verifications of the same stamp', async () => {
    const token = await signStamp(A, request(), { now: NOW });
    const verdicts: StampVerdict[] = await Promise.all(Array.from({ length: 8 }, () => admitStamp(store.db, paths, token, { now: NOW })));
    expect(verdicts.filter((v) => v.ok)).toHaveLength(1);
    expect(verdicts.filter((v) => !v.ok && v.code === 'STAMP_REPLAYED')).toHaveLength(7);
  });

  it('resolves an alias or a trusted id to the workspace id, and nothing else', () => {
    expect(resolveAlias(paths, 'asker')).toBe(A.id);
    expect(resolveAlias(paths, A.id)).toBe(A.id);
    expect(resolveAlias(paths, C.id)).toBeNull();
    expect(resolveAlias(paths, 'nobody')).toBeNull();
    expect(findTrust(paths, 'asker')).toMatchObject({ workspace: A.id, key: A.publicJwk, name: 'asker' });
  });

  it('refuses a key that is not the id\'s (TRUST_KEY_MISMATCH) and trusting itself (USAGE), in the module too', () => {
    const codeOf = (fn: () => unknown): string => {
      try {
        fn();
      } catch (err) {
        return (err as NexusError).code;
      }
      return 'none';
    };
    expect(codeOf(() => addTrust(paths, { workspace: C.id, key: D.publicJwk }))).toBe('TRUST_KEY_MISMATCH');
    expect(codeOf(() => addTrust(paths, { workspace: B.id, key: B.publicJwk }))).toBe('USAGE');
    expect(codeOf(() => removeTrust(paths, 'nobody'))).toBe('UNKNOWN_TRUST');
    expect(listTrust(paths).map((e) => e.workspace)).toEqual([A.id]);
  });

  it('refuses a stamp addressed elsewhere and one from a workspace it does not trust', async () => {
    expect(await admitStamp(store.db, paths, await signStamp(A, request({ aud: C.id })), { now: NOW })).toMatchObject({ code: 'STAMP_WRONG_AUDIENCE' });
    expect(await admitStamp(store.db, paths, await signStamp(C, request({}, C)), { now: NOW })).toMatchObject({ code: 'STAMP_UNTRUSTED' });
  });

  it('forgets ids whose stamps have expired when it next claims one', async () => {
    expect(await claimStamp(store.db, 'old', NOW_S + 10, NOW_S)).toBe(true);
    expect(await claimStamp(store.db, 'young', NOW_S + 10_000, NOW_S)).toBe(true);
    expect(await claimStamp(store.db, 'old', NOW_S + 10, NOW_S)).toBe(false);
    // Past old's time, well before young's.
    expect(await claimStamp(store.db, 'new', NOW_S + 20_000, NOW_S + 120)).toBe(true);
    expect(await stampSeen(store.db, 'old')).toBe(false);
    expect(await stampSeen(store.db, 'young')).toBe(true);
  });

  it('fails closed on a damaged trust file', async () => {
    const other = receiver();
    addTrust(other, { workspace: A.id, key: A.publicJwk, name: null });
    writeFileSync(join(other.nxs, 'trust.json'), '[]');
    expect(await admitStamp(store.db, other, await signStamp(A, request()), { now: NOW })).toMatchObject({ ok: false, code: 'STAMP_UNTRUSTED' });
    expect(() => listTrust(other)).toThrow(NexusError);
  });
});

// ---- properties: nothing but the exact signed bytes is admitted, and nothing throws

describe('stamps under random mutation', () => {
  let valid: string;
  let payload: Record<string, unknown>;
  beforeAll(async () => {
    valid = await signStamp(A, request(), { now: NOW });
    payload = JSON.parse(Buffer.from(segments(valid)[1], 'base64url').toString());
  });

  const never = async (token: unknown): Promise<void> => {
    const verdict = await verifyStamp(token, opts());
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) {
      expect(STAMP_CODES).toContain(verdict.code);
      expect(verdict.message).not.toMatch(/could not be checked/);
    }
  };

  it('the unmutated stamp is admitted (the properties below are not vacuous)', async () => {
    expect((await verifyStamp(valid, opts())).ok).toBe(true);
  });

  it('admits no stamp with bytes flipped, inserted or cut', async () => {
    const edit = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ kind: fc.constant('xor' as const), at: fc.nat(), byte: fc.integer({ min: 1, max: 255 }) }),
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ kind: fc.constant('cut' as const), at: fc.nat(), byte: fc.integer({ min: 1, max: 8 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(edit, { minLength: 1, maxLength: 4 }), async (edits) => {
        let bytes = Buffer.from(valid, 'latin1');
        for (const e of edits) {
          const at = e.at % (bytes.length + 1);
          if (e.kind === 'set' && at < bytes.length) bytes[at] = e.byte;
          if (e.kind === 'xor' && at < bytes.length) bytes[at] = bytes[at]! ^ e.byte;
          if (e.kind === 'insert') bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from([e.byte]), bytes.subarray(at)]);
          if (e.kind === 'cut') bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + e.byte)]);
        }
        const token = bytes.toString('latin1');
        fc.pre(token !== valid);
        await never(token);
      }),
      { numRuns: 1000 },
    );
  });

  const claimName = fc.oneof(fc.constantFrom('iss', 'sub', 'role', 'aud', 'target_role', 'thread', 'depth', 'turns', 'iat', 'exp', 'jti'), fc.string({ maxLength: 8 }));
  const jsonEdit = fc.oneof(
    fc.record({ kind: fc.constant('set' as const), key: claimName, value: fc.jsonValue({ maxDepth: 2 }) }),
    fc.record({ kind: fc.constant('set' as const), key: fc.constant('depth'), value: fc.oneof(fc.integer(), fc.double(), fc.constant(null)) }),
    fc.record({ kind: fc.constant('delete' as const), key: claimName, value: fc.constant(null) }),
  );
  function mutate(obj: Record<string, unknown>, edits: { kind: 'set' | 'delete'; key: string; value: unknown }[]): Record<string, unknown> {
    const out: Record<string, unknown> = { ...obj };
    for (const e of edits) {
      if (e.kind === 'delete') delete out[e.key];
      else Object.defineProperty(out, e.key, { value: e.value, enumerable: true, writable: true, configurable: true });
    }
    return out;
  }

  it('admits no stamp whose payload JSON was changed under the old signature', async () => {
    const [h, p, s] = segments(valid);
    await fc.assert(
      fc.asyncProperty(fc.array(jsonEdit, { minLength: 1, maxLength: 3 }), async (edits) => {
        const mutated = b64(mutate(payload, edits));
        fc.pre(mutated !== p);
        await never(`${h}.${mutated}.${s}`);
      }),
      { numRuns: 500 },
    );
  });

  it('admits no stamp whose header JSON was changed, whoever re-signs it', async () => {
    const [h, p, s] = segments(valid);
    const headerEdit = fc.oneof(
      fc.record({
        kind: fc.constant('set' as const),
        key: fc.oneof(fc.constantFrom('alg', 'typ', 'kid', 'jwk', 'jku', 'x5u', 'crit', 'b64', 'cty'), fc.string({ maxLength: 6 })),
        value: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom('none', 'HS256', 'Ed25519', 'ES256', 'JWT', false)),
      }),
      fc.record({ kind: fc.constant('delete' as const), key: fc.constantFrom('alg', 'typ'), value: fc.constant(null) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(headerEdit, { minLength: 1, maxLength: 3 }), fc.constantFrom('old', 'A', 'D'), async (edits, signer) => {
        const header = mutate(HEADER, edits);
        const hh = b64(header);
        fc.pre(hh !== h);
        const token = signer === 'old' ? `${hh}.${p}.${s}` : craft(header, payload, signer === 'A' ? A.privateKey : D.privateKey);
        await never(token);
      }),
      { numRuns: 500 },
    );
  });

  it('never throws on arbitrary input, and admits only well-formed claims even when the trusted key signs anything', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string(),
          fc.jsonValue(),
          fc.tuple(fc.jsonValue(), fc.jsonValue(), fc.string()).map(([x, y, z]) => `${b64(x)}.${b64(y)}.${z}`),
          fc.array(jsonEdit, { maxLength: 3 }).map((edits) => craft(HEADER, mutate(claims(), edits), A.privateKey)),
        ),
        async (token) => {
          const verdict = await verifyStamp(token, opts());
          if (!verdict.ok) {
            expect(STAMP_CODES).toContain(verdict.code);
            expect(verdict.message).not.toMatch(/could not be checked/);
            return;
          }
          const c = verdict.claims;
          expect(c.iss).toBe(A.id);
          expect(c.aud).toBe(B.id);
          expect(Number.isSafeInteger(c.depth) && c.depth >= 0 && c.depth < STAMP_DEPTH_CAP).toBe(true);
          expect(verdict.sessionDepth).toBe(c.depth + 1);
          // `turns` is the one optional claim: absent, or a non-negative integer.
          expect(Object.keys(c).filter((k) => k !== 'turns').sort()).toEqual(['aud', 'depth', 'exp', 'iat', 'iss', 'jti', 'role', 'sub', 'target_role', 'thread']);
          if ('turns' in c) expect(Number.isSafeInteger(c.turns) && c.turns! >= 0).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('seen stamp ids live in the store, claimed in the admitting transaction', () => {
  let a: TestWorkspace;
  let b: TestWorkspace;
  beforeAll(async () => {
    [a, b] = await Promise.all([makeWorkspace({ git: false }), makeWorkspace({ git: false })]);
    b.persona('reviewer', { mode: 'reply', extra: 'addressable: { external: true }' });
    const trusted = await b.nxs(['sync', 'trust', 'add', '--workspace', a.id, '--key', join(a.root, '.nxs', 'keys', 'workspace.pub.jwk'), '--json']);
    expect(trusted.code, trusted.stdout + trusted.stderr).toBe(0);
  });
  afterAll(async () => {
    await Promise.all([a?.waitIdle().catch(() => undefined), b?.waitIdle().catch(() => undefined)]);
    await Promise.all([a?.cleanup(), b?.cleanup()]);
  });

  /** The jti of the stamp on the commission that opened `thread` in A. */
  async function jtiOf(thread: string): Promise<string> {
    const rows = await a.withStore((s) => s.db.select({ body: tables.ops.body }).from(tables.ops).where(and(eq(tables.ops.thread, thread), eq(tables.ops.kind, 'thread.opened'))));
    const stamp = (rows[0]!.body as { stamp: string }).stamp;
    return JSON.parse(Buffer.from(stamp.split('.')[1]!, 'base64url').toString('utf8')).jti;
  }

  const seenIn = (w: TestWorkspace) =>
    w.withStore(async (s) => ((await s.db.execute(sql`select jti from stamps_seen`)) as unknown as { rows: Array<{ jti: string }> }).rows.map((r) => r.jti));

  it('an admitted commission leaves its jti in the store and no file beside it', async () => {
    const sent = await a.nxc(['send', `${b.id}/reviewer`, '--subject', 'r', '--json', 'please']);
    expect((await deliver(a, b)).started).toBe(1);
    expect(await seenIn(b)).toContain(await jtiOf(sent.json.thread));
    expect(existsSync(join(b.root, '.nxs', 'stamps-seen.json'))).toBe(false);
  });

  it('a stamp whose jti the store already holds (admitted by the other host of this store) is refused STAMP_REPLAYED, and nothing runs', async () => {
    const sent = await a.nxc(['send', `${b.id}/reviewer`, '--subject', 'r2', '--json', 'again']);
    const jti = await jtiOf(sent.json.thread);
    await b.withStore((s) => s.db.execute(sql`insert into stamps_seen (jti, forget_after) values (${jti}, ${NOW_S + 7 * 86_400})`));
    const before = b.sessionDirs().length;
    const taken = await deliver(a, b);
    expect(taken).toMatchObject({ started: 0, rejected: 1 });
    expect(b.sessionDirs()).toHaveLength(before);
    await deliver(b, a);
    const row = (await a.status(true)).operations.flatMap((o: any) => o.threads).find((r: any) => r.thread === sent.json.thread);
    expect(row).toMatchObject({ rejected_code: 'STAMP_REPLAYED', escalated: true });
  });
});
