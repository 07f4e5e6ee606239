// `npm run bench:verify`: what signed ops cost a receiver.
//   1. Signing and verification of the same signed texts: raw node:crypto Ed25519 (a KeyObject
//      imported once) against jose (compact JWS, EdDSA, the same text as payload), per core (one op at
//      a time) and on the thread pool (a page of ops at once).
//   2. The whole receiver check (find the signature, parse, schema, canonical form, verify) per core
//      and as sync runs it (checkOps: opening here, signatures on a worker thread).
//   3. Catch-up of a backlog into a fresh node store (PGlite), page by page as the sync client takes
//      it in: without verification (JSON.parse + ingestOps) and with it (checkOps + ingestChecked,
//      the next pages verified while the current one is stored).
// Knobs (environment): BENCH_VERIFY_OPS (default 20,000), BENCH_BACKLOG (default 20,000), BENCH_PAGE (500).
import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompactSign, compactVerify, importJWK } from 'jose';
import { checkOps, checkOpsSync, openOp, opSigner, publicKeyObject, signOp, workspaceOfKey, type OpSigner } from '../crypto/index.js';
import { newMessageId, newOpId, newThreadId } from '../protocol/ids.js';
import type { Op } from '../protocol/ops.js';
import { ingestChecked, ingestOps, type Exec, type IncomingOp } from '../node-agent/kernel/index.js';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { createStore, openStore, storeTemplate, type Store } from '../node-agent/adapters/store/index.js';
import { writePosition } from '../node-agent/host/sync/state.js';

function num(name: string, dflt: number): number {
  const raw = process.env[name];
  const v = raw === undefined || raw === '' ? dflt : Number(raw.replace(/_/g, ''));
  if (!Number.isFinite(v) || v <= 0) throw new TypeError(`${name} must be a positive number`);
  return Math.round(v);
}

const N = num('BENCH_VERIFY_OPS', 20_000);
const BACKLOG = num('BENCH_BACKLOG', 20_000);
const PAGE = num('BENCH_PAGE', 500);
const out = (s: string) => process.stdout.write(s + '\n');
const fmt = (x: number) => Math.round(x).toLocaleString('en-US').padStart(9);
/** Wall-clock rate, and the rate per CPU-second this process used (all its threads): the per-core figure, robust to a busy machine. */
const rate = (n: number, t: Timed) => `${fmt((n / t.ms) * 1000)} ops/s  ${fmt((n / t.cpuMs) * 1000)} ops/cpu-s`;
type Timed = { ms: number; cpuMs: number };

/** A backlog as another workspace would have written it: operations of one thread, opened then talked in. */
function signedBacklog(signer: OpSigner, n: number): string[] {
  const workspace = workspaceOfKey(signer.key)!;
  const texts: string[] = [];
  let lamport = 0;
  const perThread = 100;
  for (let t = 0; texts.length < n; t++) {
    const thread = newThreadId();
    const base = { workspace, origin: 'bench-origin', operation: thread, thread, session: null, ts: new Date().toISOString(), key: signer.key };
    const opener = { handle: 'carol', session: null };
    texts.push(signOp({ ...base, id: newOpId(), lamport: ++lamport, kind: 'thread.opened', body: { parent: null, subject: `backlog ${t}`, opener, target: { kind: 'person', handle: 'dave' } } } as Op, signer).raw);
    for (let m = 1; m < perThread && texts.length < n; m++) {
      const body = { message: newMessageId(), author: opener, text: `backlog message ${t}.${m}: ${'lorem ipsum '.repeat(12)}`, effect: m === 1 ? 'commission' : 'none', substituted: false, refs: { working_copy: null } };
      texts.push(signOp({ ...base, id: newOpId(), lamport: ++lamport, kind: 'message.posted', body } as Op, signer).raw);
    }
  }
  return texts;
}

async function timed<T>(fn: () => Promise<T> | T): Promise<Timed & { value: T }> {
  const t = performance.now();
  const c = process.cpuUsage();
  const value = await fn();
  const used = process.cpuUsage(c);
  return { ms: performance.now() - t, cpuMs: (used.user + used.system) / 1000, value };
}

async function primitives(signer: OpSigner, texts: string[]): Promise<void> {
  const opened = texts.map((t) => {
    const o = openOp(t);
    if (!o.ok) throw new Error(`bench: an op does not open: ${o.why}`);
    return o;
  });
  const bytes = opened.map((o) => Buffer.from(o.signed, 'utf8'));
  const sigs = opened.map((o) => Buffer.from(o.sig, 'base64url'));
  const key = publicKeyObject(signer.key)!;
  const avg = Math.round(bytes.reduce((a, b) => a + b.length, 0) / bytes.length);
  out(`\n1. Ed25519 over the same ${N.toLocaleString('en-US')} signed texts (${avg} bytes on average)`);

  const s1 = await timed(() => bytes.map((b) => sign(null, b, signer.privateKey)));
  out(`   sign     node:crypto, one at a time          ${rate(N, s1)}`);
  const v1 = await timed(() => bytes.reduce((ok, b, i) => ok + (verify(null, b, key, sigs[i]!) ? 1 : 0), 0));
  if (v1.value !== N) throw new Error('bench: a signature did not verify');
  out(`   verify   node:crypto, one at a time (1 core) ${rate(N, v1)}`);
  const v2 = await timed(async () => {
    let ok = 0;
    for (let i = 0; i < N; i += PAGE) {
      const page = await Promise.all(
        bytes.slice(i, i + PAGE).map((b, j) => new Promise<boolean>((res) => verify(null, b, key, sigs[i + j]!, (err, good) => res(!err && good)))),
      );
      ok += page.filter(Boolean).length;
    }
    return ok;
  });
  if (v2.value !== N) throw new Error('bench: a signature did not verify');
  out(`   verify   node:crypto, thread pool, pages     ${rate(N, v2)}`);

  // jose: a compact JWS whose payload is the same signed text.
  const jwk = await importJWK({ kty: 'OKP', crv: 'Ed25519', x: signer.key }, 'EdDSA');
  const priv = signer.privateKey;
  const js = await timed(async () => {
    const jws: string[] = [];
    for (const b of bytes) jws.push(await new CompactSign(b).setProtectedHeader({ alg: 'EdDSA' }).sign(priv));
    return jws;
  });
  out(`   sign     jose CompactSign, one at a time     ${rate(N, js)}`);
  const jv1 = await timed(async () => {
    let ok = 0;
    for (const t of js.value) if ((await compactVerify(t, jwk)).payload.length > 0) ok++;
    return ok;
  });
  out(`   verify   jose compactVerify, one at a time   ${rate(N, jv1)}`);
  const jv2 = await timed(async () => {
    let ok = 0;
    for (let i = 0; i < N; i += PAGE) ok += (await Promise.all(js.value.slice(i, i + PAGE).map((t) => compactVerify(t, jwk)))).length;
    return ok;
  });
  out(`   verify   jose compactVerify, pages at once   ${rate(N, jv2)}`);

  out(`\n2. The receiver's whole check (signature last, parse, schema, canonical text, verify)`);
  const c1 = await timed(() => checkOpsSync(texts));
  if (c1.value.some((c) => !c.ok)) throw new Error('bench: checkOpsSync refused an op');
  out(`   checkOpsSync, one at a time (1 core)         ${rate(N, c1)}`);
  const open = await timed(() => texts.map(openOp));
  out(`     of which opening alone                     ${rate(N, open)}`);
  const c2 = await timed(async () => {
    let ok = 0;
    for (let i = 0; i < N; i += PAGE) ok += (await checkOps(texts.slice(i, i + PAGE))).filter((c) => c.ok).length;
    return ok;
  });
  if (c2.value !== N) throw new Error('bench: checkOps refused an op');
  out(`   checkOps, worker thread, pages (as sync does)${rate(N, c2)}`);
}

async function catchUp(home: string, base: string, texts: string[]): Promise<void> {
  out(`\n3. Catch-up of ${texts.length.toLocaleString('en-US')} ops into a fresh PGlite store, pages of ${PAGE}, cursor written in each page's transaction`);
  await storeTemplate(home);
  const pages: string[][] = [];
  for (let i = 0; i < texts.length; i += PAGE) pages.push(texts.slice(i, i + PAGE));

  const fresh = async (name: string): Promise<Store> => {
    const dir = join(base, name);
    await createStore(dir, home);
    return openStore(dir);
  };

  // Without verification: what the client did before signing (parse, then store and fold).
  let store = await fresh('plain');
  const plain = await timed(async () => {
    for (const [i, page] of pages.entries()) {
      const ops = page.map((t) => JSON.parse(t) as IncomingOp);
      await store.db.transaction(async (tx: Exec) => {
        await ingestOps(tx, ops, PROJECTIONS);
        await writePosition(tx, 'bench', { cursor: (i + 1) * PAGE, acked: 0, rejected: {} });
      });
    }
  });
  await store.close();
  out(`   without verification (parse + ingestOps)     ${rate(texts.length, plain)}`);

  // With verification, serially: verify a page, then store it.
  store = await fresh('serial');
  const serial = await timed(async () => {
    for (const [i, page] of pages.entries()) {
      const checked = await checkOps(page);
      await store.db.transaction(async (tx: Exec) => {
        const r = await ingestChecked(tx, checked, { projections: PROJECTIONS });
        if (Object.keys(r.rejected).length > 0 || r.held > 0) throw new Error('bench: an op was refused');
        await writePosition(tx, 'bench', { cursor: (i + 1) * PAGE, acked: 0, rejected: {} });
      });
    }
  });
  await store.close();
  out(`   with verification, page after page           ${rate(texts.length, serial)}`);

  // With verification as the client runs it: pages are checked as they arrive, while earlier ones are stored.
  store = await fresh('pipelined');
  const AHEAD = 4;
  const piped = await timed(async () => {
    const inFlight: Array<ReturnType<typeof checkOps>> = [];
    for (let i = 0; i < Math.min(AHEAD, pages.length); i++) inFlight.push(checkOps(pages[i]!));
    for (let i = 0; i < pages.length; i++) {
      const checked = await inFlight.shift()!;
      if (i + AHEAD < pages.length) inFlight.push(checkOps(pages[i + AHEAD]!));
      await store.db.transaction(async (tx: Exec) => {
        const r = await ingestChecked(tx, checked, { projections: PROJECTIONS });
        if (Object.keys(r.rejected).length > 0 || r.held > 0) throw new Error('bench: an op was refused');
        await writePosition(tx, 'bench', { cursor: (i + 1) * PAGE, acked: 0, rejected: {} });
      });
    }
  });
  await store.close();
  out(`   with verification, next pages checked ahead  ${rate(texts.length, piped)}   (${((piped.ms / plain.ms - 1) * 100).toFixed(0)}% over no verification)`);
}

async function main(): Promise<void> {
  const base = mkdtempSync(join(tmpdir(), 'nexus-bench-verify-'));
  try {
    const cpu = cpus()[0]?.model ?? 'unknown cpu';
    out(`bench:verify on ${availableParallelism()} core(s) (${cpu}), node ${process.version}, UV_THREADPOOL_SIZE=${process.env['UV_THREADPOOL_SIZE'] ?? '4 (default)'}`);
    const signer = opSigner(generateKeyPairSync('ed25519').privateKey);
    await primitives(signer, signedBacklog(signer, N));
    await catchUp(join(base, 'home'), base, signedBacklog(signer, BACKLOG));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

await main();
