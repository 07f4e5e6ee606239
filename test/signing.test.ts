// Ops signed over their exact bytes: signing in appendOps, verification before folding (ingestChecked on
// real PGlite stores), tampering of every kind refused with its reason, and key rotation followed by peers
// (in order, and held pending until the rotation op arrives). The same through a real relay between real
// nodes is test/e2e/signing-nodes.test.ts.
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { asc, eq } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { undoMigrationsAfter } from './helpers/migrations.js';
import { checkOps, checkOpsSync, openOp, opSigner, signOp, workspaceOfKey, type OpSigner } from '../crypto/index.js';
import { canonicalBase64url } from '../crypto/opsig.js';
import { commitNextKey, NEXT_KEY_FILE, readWorkspaceKey, writeNextKey } from '../node-agent/adapters/keys/index.js';
import { WORKSPACE_OPERATION, type Op } from '../protocol/ops.js';
import { newOpId, newThreadId } from '../protocol/ids.js';
import { hostFor, realDeps, type Host } from '../node-agent/host/index.js';
import { appendOps, ingestChecked, pendingCount, signLegacyOps, wireTextOf, type IngestReport } from '../node-agent/kernel/index.js';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { withParts } from '../node-agent/capabilities/threads/index.js';
import { createStore, openStore, pgliteUnder, tables, type Store } from '../node-agent/adapters/store/index.js';
import { copyRow } from '../infra/index.js';
import { initWorkspace, type Workspace } from '../node-agent/adapters/workspace/index.js';
import { Forger } from './helpers/forge.js';
import { freshPooled, openPooled, parkPooled, storeStamp } from './helpers/store-pool.js';

const HOME = inject('nexusHome');
let base: string;
const stores: Store[] = [];
let counter = 0;

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'nexus-signing-'));
});
afterAll(async () => {
  for (const s of stores) await parkPooled(s).catch(() => undefined);
  rmSync(base, { recursive: true, force: true });
});

/** A fresh, migrated, empty store: a receiving node. */
async function freshStore(): Promise<Store> {
  const dir = join(base, `store-${counter++}`);
  const store = await freshPooled(dir, HOME);
  stores.push(store);
  return store;
}

type Local = { workspace: Workspace; store: Store; host: Host };

/** A workspace made the way `nxs init` makes it (keys on disk), its store open and the real engine on it. */
async function localWorkspace(): Promise<Local> {
  const root = join(base, `ws-${counter++}`);
  mkdirSync(root);
  const { workspace } = await initWorkspace(root, { name: 'signer', home: HOME });
  const store = await openPooled(workspace.paths.store, { pristine: storeStamp(workspace.paths.store) });
  stores.push(store);
  return { workspace, store, host: hostFor(realDeps(workspace, store.db, { origin: `origin-${counter}` })) };
}

/** Posts to a person (no session is started): a thread.opened and a message.posted op. */
async function post(l: Local, subject: string, text: string): Promise<string> {
  const r = await l.host.engine.send({ to: '@bob', subject, text, caller: { actor: 'alice', session: null, hop: null } });
  return r.thread;
}

/** The exact wire texts a store holds, in the order it wrote or took them in. */
async function rawTexts(store: Store): Promise<string[]> {
  const rows = await store.db.select().from(tables.ops).orderBy(asc(tables.ops.localSeq));
  return rows.map((r) => wireTextOf(r)!);
}

/** What a receiving node does with texts off the wire: check them (thread pool), then take them in, in one transaction. */
async function deliver(store: Store, texts: string[]): Promise<IngestReport> {
  const checked = await checkOps(texts);
  return store.db.transaction((tx) => ingestChecked(tx, checked, { projections: PROJECTIONS }));
}

async function opIds(store: Store): Promise<Set<string>> {
  return new Set((await store.db.select({ id: tables.ops.id }).from(tables.ops)).map((r) => r.id));
}

async function operations(store: Store): Promise<Map<string, unknown>> {
  const rows = await store.db.select().from(tables.operations);
  return new Map((await withParts(store.db, rows)).map((s) => [s.id, s]));
}

function newSigner(): OpSigner {
  return opSigner(generateKeyPairSync('ed25519').privateKey);
}

const SIG_AT_END = 96; // ,"sig":"<86>"}

// ---------------------------------------------------------------------------------------------

describe('signed ops between two stores', () => {
  let a: Local;
  let texts: string[];
  beforeAll(async () => {
    a = await localWorkspace();
    await post(a, 'plan', 'the plan is A');
    await post(a, 'unicode', 'émoji 🎉 and "quotes" and \\ and \u2028');
    texts = await rawTexts(a.store);
  });

  it('appendOps signs every op with the workspace key over its exact text, and keeps that text', async () => {
    expect(texts).toHaveLength(4);
    for (const raw of texts) {
      const opened = openOp(raw);
      expect(opened.ok, raw).toBe(true);
      if (!opened.ok) continue;
      expect(opened.op.workspace).toBe(a.workspace.id);
      expect(workspaceOfKey(opened.op.key)).toBe(a.workspace.id); // the genesis key
      expect(raw.endsWith(`,"sig":"${opened.sig}"}`)).toBe(true);
      expect(Object.keys(JSON.parse(raw) as object)).toEqual(['id', 'workspace', 'origin', 'lamport', 'ts', 'kind', 'operation', 'thread', 'session', 'body', 'key', 'sig']);
    }
    expect((await checkOps(texts)).every((c) => c.ok)).toBe(true);
  });

  it('a receiver verifies, stores the exact bytes and folds to the same state', async () => {
    const b = await freshStore();
    const report = await deliver(b, texts);
    expect(report).toMatchObject({ rejected: {}, held: 0, released: 0 });
    expect(report.fresh).toHaveLength(4);
    expect(await rawTexts(b)).toEqual(texts);
    expect(await operations(b)).toEqual(await operations(a.store));
    // Again: duplicates change nothing.
    expect((await deliver(b, texts)).fresh).toEqual([]);
  });

  it('stores each op once: the body is kept as the text it was signed as, and the wire text comes back from the row byte for byte', async () => {
    const b = await freshStore();
    const m = new Forger();
    const t = newThreadId();
    // Member orders jsonb would rewrite (it sorts by length, then bytes), numbers, escapes, nesting.
    const odd = [
      m.text({ kind: 'x.custom', operation: t, thread: null, session: null, body: { zeta: 1, alpha: { b: [1.5, -0, 1e21, 'é'], a: null }, mm: '\u2028 "q" \\' } }),
      m.text({ kind: 'x.custom', operation: t, thread: null, session: null, body: { long_member_name: true, s: { '': 0, ' ': [] } } }),
    ];
    const all = [...texts, ...odd];
    expect((await deliver(b, all)).fresh).toHaveLength(all.length);
    expect(await rawTexts(b)).toEqual(all);
    const columns = await b.pg.query<{ column_name: string; data_type: string }>("select column_name, data_type from information_schema.columns where table_name = 'ops'");
    const types = Object.fromEntries(columns.rows.map((r) => [r.column_name, r.data_type]));
    expect(types['body']).toBe('json');
    expect(types).not.toHaveProperty('raw');
  });

  it('ingest writes by COPY: every character survives its text format, and the client under drizzle is found in and out of a transaction', async () => {
    const b = await freshStore();
    const awkward = ['tab\there', 'new\nline', 'cr\rhere', 'back\\slash', '\\N', '\\.', 'é 🎉 \u2028', '', "quote ' and \" both"];
    await b.pg.exec('create table copy_check (n integer, t text)');
    const rows = awkward.map((t, n) => copyRow([n, t])).join('') + copyRow([awkward.length, null]);
    await b.db.transaction(async (tx) => {
      await pgliteUnder(tx).query("copy copy_check (n, t) from '/dev/blob'", [], { blob: new Blob([rows]) });
    });
    const back = await pgliteUnder(b.db).query<{ n: number; t: string | null }>('select n, t from copy_check order by n');
    expect(back.rows.map((r) => r.t)).toEqual([...awkward, null]);
    expect(() => copyRow(['a\u0000b'])).toThrow(TypeError);
    expect(() => pgliteUnder({})).toThrow(TypeError);
  });

  it('a store from before ops were stored once is upgraded on open: every wire text comes back as it was', async () => {
    const dir = join(base, `older-${counter++}`);
    await createStore(dir, HOME);
    const m = new Forger();
    const t = newThreadId();
    const odd = m.text({ kind: 'x.custom', operation: t, thread: null, session: null, body: { zeta: [2.5, { y: 1, x: 2 }], a: 'é' } });
    const all = [...texts, odd];
    const legacy = { id: newOpId(), workspace: m.workspace, origin: 'old', lamport: 1, ts: new Date().toISOString(), kind: 'x.custom', operation: t, thread: null, session: null, body: { b: 1, a: 2 }, sig: null, key: null };
    let older = await openStore(dir);
    try {
      await deliver(older, all);
      await older.db.insert(tables.ops).values(legacy);
      await undoMigrationsAfter(older.pg, '0009_op_stored_once');
      // Back to the shape before migration 0009: the body in jsonb, the wire text in its own column.
      await older.pg.exec('alter table ops add column raw text');
      for (const text of all) await older.pg.query('update ops set raw = $1 where id = $2', [text, (JSON.parse(text) as { id: string }).id]);
      await older.pg.exec(`
        alter table ops alter column body type jsonb using body::jsonb;
        drop index ops_session_idx;
        create index ops_session_idx on ops (session);
        delete from drizzle.__drizzle_migrations where created_at = (select max(created_at) from drizzle.__drizzle_migrations);`);
      // jsonb has reordered the body: only the stored text still knows what was signed.
      const reordered = await older.pg.query<{ body: string }>('select body::text as body from ops where raw = $1', [odd]);
      expect(odd).not.toContain(reordered.rows[0]!.body.replace(/ /g, ''));
    } finally {
      await older.close();
    }
    older = await openStore(dir);
    try {
      const rows = await older.db.select().from(tables.ops).orderBy(asc(tables.ops.localSeq));
      expect(rows.filter((r) => r.sig !== null).map((r) => wireTextOf(r))).toEqual(all);
      expect((await checkOps(all)).every((c) => c.ok)).toBe(true);
      const old = rows.find((r) => r.id === legacy.id)!;
      expect(wireTextOf(old)).toBeNull();
      expect(old.body).toEqual(legacy.body);
    } finally {
      await older.close();
    }
  });

  it('an op of ours written before signing is signed on its way out: its text verifies and is what the row gives back', async () => {
    const b = await freshStore();
    const m = new Forger();
    const t = newThreadId();
    const legacy = { id: newOpId(), workspace: m.workspace, origin: 'old', lamport: 1, ts: new Date().toISOString(), kind: 'x.custom', operation: t, thread: null, session: null, body: { zeta: 1, alpha: [2] }, sig: null, key: null };
    await b.db.insert(tables.ops).values(legacy);
    const texts = await b.db.transaction((tx) => signLegacyOps(tx, m.workspace, m.signer, [legacy.id]));
    const text = texts.get(legacy.id)!;
    expect((await checkOps([text]))[0]).toMatchObject({ ok: true, op: { id: legacy.id, key: m.signer.key, body: legacy.body } });
    const [row] = await b.db.select().from(tables.ops).where(eq(tables.ops.id, legacy.id));
    expect(wireTextOf(row!)).toBe(text);
    // Signed once: asked again, it is left as it is.
    expect((await signLegacyOps(b.db, m.workspace, m.signer, [legacy.id])).size).toBe(0);
  });

  it('refuses every kind of tampering with its reason, folds none of it, and still takes the genuine op later', async () => {
    const b = await freshStore();
    const stranger = newSigner();
    const other = await localWorkspace();
    const otherKey = other.host.deps.keys.signer.key;
    const [opened, message] = texts.map(openOp).filter((o) => o.ok && o.op.kind === 'message.posted') as Array<Extract<ReturnType<typeof openOp>, { ok: true }>>;
    const w = opened!.raw;
    const sig = opened!.sig;
    const ALPHA = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const flipChar = (s: string, i: number) => s.slice(0, i) + ALPHA[(ALPHA.indexOf(s[i]!) + 1) % 64] + s.slice(i + 1);
    // The last of 86 characters carries 2 bits of the signature and 4 bits of padding: flipping the lowest bit keeps the bytes.
    const samebytes = sig.slice(0, 85) + ALPHA[ALPHA.indexOf(sig[85]!) ^ 1];
    expect(Buffer.from(samebytes, 'base64url')).toEqual(Buffer.from(sig, 'base64url'));
    const resigned = (signer: OpSigner, change: Partial<Op> = {}) => signOp({ ...opened!.op, ...change, key: signer.key } as Op, signer).raw;

    const cases: Array<[string, string, 'malformed' | 'bad_signature' | 'unknown_key']> = [
      ['the body changed', w.replace('the plan is A', 'the plan is B'), 'bad_signature'],
      ['a lamport changed', w.replace(`"lamport":${opened!.op.lamport},`, `"lamport":${opened!.op.lamport + 1},`), 'bad_signature'],
      ['a signature character flipped', w.slice(0, -SIG_AT_END) + `,"sig":"${flipChar(sig, 10)}"}`, 'bad_signature'],
      ['the signature of another op', w.slice(0, -SIG_AT_END) + `,"sig":"${message!.sig}"}`, 'bad_signature'],
      ['the key swapped for another workspace\'s', w.replace(`"key":"${opened!.op.key}"`, `"key":"${otherKey}"`), 'bad_signature'],
      ['the signature moved to the front', `{"sig":"${sig}",${w.slice(1, -SIG_AT_END)}}`, 'malformed'],
      ['the signature moved into the middle', w.slice(0, -SIG_AT_END).replace(',"kind":', `,"sig":"${sig}","kind":`) + '}', 'malformed'],
      ['the signature removed', `${w.slice(0, -SIG_AT_END)}}`, 'malformed'],
      ['a second signature member', w.slice(0, -1) + `,"sig":"${sig}"}`, 'malformed'],
      ['a non-canonical encoding of the same signature', w.slice(0, -SIG_AT_END) + `,"sig":"${samebytes}"}`, 'malformed'],
      ['whitespace added', w.replace(',"kind":', ', "kind":'), 'malformed'],
      ['members reordered', w.replace(/^\{"id":("[^"]+"),"workspace":("[^"]+"),/, '{"workspace":$2,"id":$1,'), 'malformed'],
      ['an extra member', w.replace(',"key":', ',"extra":1,"key":'), 'malformed'],
      ['the key removed', w.replace(`,"key":"${opened!.op.key}"`, ''), 'malformed'],
      ['not JSON', w.slice(0, 40), 'malformed'],
      ['re-signed by a key that is not the workspace\'s', resigned(stranger, { body: { ...opened!.op.body, text: 'forged' } } as Partial<Op>), 'unknown_key'],
      ['re-signed unchanged by another workspace\'s own key', resigned(other.host.deps.keys.signer), 'unknown_key'],
    ];
    for (const [what, text, reason] of cases) {
      expect(text, what).not.toBe(w);
      const report = await deliver(b, [text]);
      expect(report.fresh, what).toEqual([]);
      if (reason === 'unknown_key') expect(report.refusals.map((r) => r.reason), what).toEqual(['unknown_key']);
      else expect(report.rejected, what).toEqual({ [reason]: 1 });
      expect(await opIds(b), what).not.toContain(opened!.op.id);
    }
    expect(await operations(b)).toEqual(new Map());
    // Both re-signed copies carry the same id: held once.
    expect(await pendingCount(b.db)).toBe(1);

    // The genuine ops are taken in after all that; the held forgery is never released (only a rotation
    // op signed by a key of the workspace could certify the stranger's key).
    const report = await deliver(b, texts);
    expect(report.fresh).toHaveLength(4);
    expect(await operations(b)).toEqual(await operations(a.store));
    const stored = await b.db.select().from(tables.ops).where(eq(tables.ops.id, opened!.op.id));
    expect(wireTextOf(stored[0]!)).toBe(w);
  });

  it('verifying a page on worker threads answers exactly as verifying it in this thread', async () => {
    const signer = newSigner();
    const workspace = workspaceOfKey(signer.key)!;
    const page: string[] = [];
    for (let i = 0; i < 300; i++) {
      const thread = `t-01J${String(i).padStart(23, '0')}`;
      const raw = signOp({ id: `01J${String(i).padStart(23, '0')}`, workspace, origin: 'o', lamport: i + 1, ts: '2026-01-01T00:00:00.000Z', kind: 'message.posted', operation: thread, thread, session: null, body: { text: `op ${i}` }, key: signer.key } as unknown as Op, signer).raw;
      // Every fifth op tampered, in turn: its body, its signature, its key, its form.
      const t = i % 20;
      page.push(
        t === 5 ? raw.replace(`op ${i}`, `op ${i}!`) : t === 10 ? raw.slice(0, -20) + (raw.at(-20) === 'A' ? 'B' : 'A') + raw.slice(-19) : t === 15 ? raw.replace(signer.key, newSigner().key) : t === 19 ? raw.replace(',"body"', ' ,"body"') : raw,
      );
    }
    const inThread = checkOpsSync(page);
    const onWorkers = await checkOps(page);
    expect(onWorkers).toEqual(inThread);
    expect(onWorkers.filter((c) => c.ok)).toHaveLength(240);
    expect(onWorkers.filter((c) => !c.ok && c.reason === 'bad_signature')).toHaveLength(45);
    expect(onWorkers.filter((c) => !c.ok && c.reason === 'malformed')).toHaveLength(15);
  });

  it('checks storability itself for a verified result it was handed but openOp did not make', async () => {
    const b = await freshStore();
    const opened = openOp(texts[1]!);
    if (!opened.ok) throw new Error('unreadable');
    // The same op, rebuilt by hand with a NUL in its body: ingestChecked must not take openOp's word for it.
    const forged = { ok: true as const, op: { ...opened.op, body: { ...opened.op.body, text: 'a\u0000b' } } as Op, raw: opened.raw, sig: opened.sig };
    const report = await b.db.transaction((tx) => ingestChecked(tx, [forged], { projections: PROJECTIONS }));
    expect(report.rejected).toEqual({ nul: 1 });
    expect(report.fresh).toEqual([]);
    expect(await opIds(b)).toEqual(new Set());
  });

  it('refuses a verified op whose body does not fit its kind, and a rotation that is not workspace-scoped', async () => {
    const b = await freshStore();
    const signer = a.host.deps.keys.signer;
    const op = openOp(texts[1]!);
    if (!op.ok) throw new Error('unreadable');
    const badBody = signOp({ ...op.op, body: { text: 42 } } as unknown as Op, signer).raw;
    const scoped = signOp({ ...op.op, kind: 'workspace.key_rotated', body: { new_key: newSigner().key } } as unknown as Op, signer).raw;
    const newer = signOp({ ...op.op, id: '01J00000000000000000000000', kind: 'lease.granted', body: { anything: true } } as unknown as Op, signer).raw;
    const report = await deliver(b, [badBody, scoped, newer]);
    expect(report.rejected).toEqual({ bad_body: 2 });
    // A kind newer than this node is kept (inert), as before signing.
    expect(report.fresh.map((o) => o.kind)).toEqual(['lease.granted']);
  });
});

// ---------------------------------------------------------------------------------------------

describe('key rotation', () => {
  it('rotates crash-safely on disk: the old key archived 0600, the id unchanged, the change a signed op', async () => {
    const l = await localWorkspace();
    const dir = l.workspace.paths.keys;
    const before = l.host.deps.keys.signer.key;
    await post(l, 'before', 'signed by the genesis key');
    const r = await l.host.run('keys.rotate', {});
    expect(r).toMatchObject({ workspace: l.workspace.id, previous_key: before, resumed: false, archived_as: 'workspace.key.0' });
    expect(r.key).not.toBe(before);
    expect(statSync(join(dir, 'workspace.key.0')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'workspace.key')).mode & 0o777).toBe(0o600);
    expect(existsSync(join(dir, NEXT_KEY_FILE))).toBe(false);
    const onDisk = readWorkspaceKey(dir);
    expect(onDisk.id).toBe(l.workspace.id);
    expect(onDisk.publicJwk.x).toBe(r.key);

    const show = await l.host.run('keys.show', {});
    expect(show).toMatchObject({ workspace: l.workspace.id, key: r.key, generation: 1, archived_keys: 1, rotation_in_progress: false });
    expect(show.public_jwk.x).toBe(before);
    expect(show.history.map((h) => h.key)).toEqual([before, r.key]);
    expect(show.history[1]).toMatchObject({ op: r.op, signed_by: before });

    await post(l, 'after', 'signed by the new key');
    const texts = await rawTexts(l.store);
    const keys = texts.map((t) => (openOp(t) as { op: Op }).op);
    expect(keys.map((o) => o.kind)).toEqual(['thread.opened', 'message.posted', 'workspace.key_rotated', 'thread.opened', 'message.posted']);
    expect(keys.map((o) => o.key)).toEqual([before, before, before, r.key, r.key]);
    expect(keys[2]).toMatchObject({ operation: WORKSPACE_OPERATION, thread: null, session: null, body: { new_key: r.key } });
    // Rotations fold into no operation.
    expect([...(await operations(l.store)).keys()]).not.toContain(WORKSPACE_OPERATION);
  });

  it('a peer that sees the rotation first verifies the new key; one that sees it late holds the ops, then folds them', async () => {
    const l = await localWorkspace();
    await post(l, 'one', 'genesis');
    await l.host.run('keys.rotate', {});
    await post(l, 'two', 'second key');
    await l.host.run('keys.rotate', {});
    await post(l, 'three', 'third key');
    const texts = await rawTexts(l.store);
    const kinds = texts.map((t) => (openOp(t) as { op: Op }).op.kind);
    const rotations = kinds.flatMap((k, i) => (k === 'workspace.key_rotated' ? [i] : []));
    expect(rotations).toHaveLength(2);

    const inOrder = await freshStore();
    const r1 = await deliver(inOrder, texts);
    expect(r1).toMatchObject({ rejected: {}, held: 0 });
    expect(r1.fresh).toHaveLength(texts.length);
    expect(await operations(inOrder)).toEqual(await operations(l.store));

    // Late: everything but the rotation ops, then the second rotation (signed by a key still unknown), then the first.
    const late = await freshStore();
    const rest = texts.filter((_, i) => !rotations.includes(i));
    const held = await deliver(late, rest);
    expect(held.held).toBe(4); // two ops signed by the second key, two by the third
    expect(held.fresh).toHaveLength(2);
    expect(await pendingCount(late.db)).toBe(4);
    expect((await operations(late)).size).toBe(1);
    const second = await deliver(late, [texts[rotations[1]!]!]);
    expect(second).toMatchObject({ held: 1, released: 0, fresh: [] });
    const first = await deliver(late, [texts[rotations[0]!]!]);
    expect(first.released).toBe(5); // the second rotation and the four ops, in a cascade
    expect(first.fresh).toHaveLength(6);
    expect(await pendingCount(late.db)).toBe(0);
    expect(await operations(late)).toEqual(await operations(l.store));
    expect(new Set(await rawTexts(late))).toEqual(new Set(texts));
  });

  it('finishes or redoes a rotation interrupted at any point, and never loses the key that signs', async () => {
    // Crashed after writing the new key, before its op: the orphan is dropped and a new rotation made.
    const a = await localWorkspace();
    const orphan = generateKeyPairSync('ed25519').privateKey;
    writeNextKey(a.workspace.paths.keys, orphan);
    const ra = await a.host.run('keys.rotate', {});
    expect(ra.resumed).toBe(false);
    expect(ra.key).not.toBe(opSigner(orphan).key);
    expect(readWorkspaceKey(a.workspace.paths.keys).publicJwk.x).toBe(ra.key);

    // Crashed after the op committed, before the switch: the old key still signs (and still verifies);
    // the next rotate only finishes the switch.
    const b = await localWorkspace();
    const old = b.host.deps.keys.signer;
    const next = generateKeyPairSync('ed25519').privateKey;
    const nextKey = opSigner(next).key;
    writeNextKey(b.workspace.paths.keys, next);
    await b.store.db.transaction((tx) =>
      appendOps(tx, { workspace: b.workspace.id, origin: 'crash', now: () => new Date(), signer: old, projections: PROJECTIONS }, [
        { operation: WORKSPACE_OPERATION, thread: null, session: null, kind: 'workspace.key_rotated', body: { new_key: nextKey } },
      ]),
    );
    await post(b, 'meanwhile', 'still signed by the old key');
    expect((await b.host.run('keys.show', {})).rotation_in_progress).toBe(true);
    // Half a switch: the current key already linked to its archive name, the rename not done.
    linkSync(join(b.workspace.paths.keys, 'workspace.key'), join(b.workspace.paths.keys, 'workspace.key.0'));
    const rb = await b.host.run('keys.rotate', {});
    expect(rb).toMatchObject({ resumed: true, key: nextKey, previous_key: old.key, archived_as: 'workspace.key.0' });
    expect(existsSync(join(b.workspace.paths.keys, 'workspace.key.1'))).toBe(false);
    expect(b.host.deps.keys.signer.key).toBe(nextKey);
    await post(b, 'after', 'signed by the new key');

    const peer = await freshStore();
    const report = await deliver(peer, await rawTexts(b.store));
    expect(report).toMatchObject({ rejected: {}, held: 0 });
    expect(await operations(peer)).toEqual(await operations(b.store));

    // Committing a rotation that is not there is refused, not guessed at.
    expect(() => commitNextKey(b.workspace.paths.keys)).toThrow(/no rotation in progress/);
  });
});

// ---------------------------------------------------------------------------------------------

describe('mutated signed texts (fast-check)', () => {
  let texts: string[];
  let receiver: Store;
  beforeAll(async () => {
    const l = await localWorkspace();
    await post(l, 'subject', 'a message with "quotes", ünïcödé and 🎉');
    await l.host.run('keys.rotate', {});
    await post(l, 'again', 'after a rotation');
    texts = await rawTexts(l.store);
    receiver = await freshStore();
  });

  /** Nothing mutated is ever accepted; taking it in neither throws nor stores anything. */
  async function neverAccepted(mutated: string[]): Promise<void> {
    const checked = await checkOps(mutated);
    for (const c of checked) expect(c.ok).toBe(false);
    const report = await receiver.db.transaction((tx) => ingestChecked(tx, checked, { projections: PROJECTIONS }));
    expect(report.fresh).toEqual([]);
    expect(report.held).toBe(0);
  }

  it('any body that is taken in comes back out of the store as the exact wire text that was verified', async () => {
    const m = new Forger();
    const t = newThreadId();
    await fc.assert(
      fc.asyncProperty(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 6 }), async (body) => {
        const text = m.text({ kind: 'x.custom', operation: t, thread: null, session: null, body });
        const checked = await checkOps([text]);
        // Bodies no store can keep (a NUL, a lone surrogate) are refused before the store; the rest must round-trip.
        fc.pre(checked[0]!.ok);
        await receiver.db.transaction((tx) => ingestChecked(tx, checked, { projections: PROJECTIONS }));
        const row = await receiver.db.select().from(tables.ops).where(eq(tables.ops.id, (JSON.parse(text) as { id: string }).id));
        expect(wireTextOf(row[0]!)).toBe(text);
      }),
      { numRuns: 200 },
    );
  });

  it('random byte flips are never accepted', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.array(fc.record({ at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }), { minLength: 1, maxLength: 3 }), async (pick, flips) => {
        const bytes = Buffer.from(texts[pick % texts.length]!, 'utf8');
        for (const f of flips) bytes[f.at % bytes.length]! ^= 1 << f.bit;
        const mutated = bytes.toString('utf8');
        fc.pre(mutated !== texts[pick % texts.length]);
        await neverAccepted([mutated]);
      }),
      { numRuns: 300 },
    );
  });

  it('JSON-level mutations (values, members, order, spacing, the signature) are never accepted', async () => {
    const FIELDS = ['id', 'workspace', 'origin', 'lamport', 'ts', 'kind', 'operation', 'thread', 'session', 'body', 'key', 'sig'];
    const mutation = fc.oneof(
      fc.record({ t: fc.constant('set' as const), field: fc.constantFrom(...FIELDS), value: fc.jsonValue() }),
      fc.record({ t: fc.constant('delete' as const), field: fc.constantFrom(...FIELDS) }),
      fc.record({ t: fc.constant('add' as const), field: fc.string({ maxLength: 6 }), value: fc.jsonValue() }),
      fc.record({ t: fc.constant('swap' as const), i: fc.nat(11), j: fc.nat(11) }),
      fc.record({ t: fc.constant('space' as const), indent: fc.constantFrom(0, 1, 2, '\t') }),
      fc.record({ t: fc.constant('bodyset' as const), field: fc.constantFrom('text', 'message', 'effect', 'subject', 'new_key', 'x'), value: fc.jsonValue() }),
    );
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.array(mutation, { minLength: 1, maxLength: 3 }), async (pick, muts) => {
        const original = texts[pick % texts.length]!;
        let entries = Object.entries(JSON.parse(original) as Record<string, unknown>);
        let indent: number | string = 0;
        for (const m of muts) {
          if (m.t === 'set') entries = entries.map(([k, v]) => [k, k === m.field ? m.value : v]);
          else if (m.t === 'delete') entries = entries.filter(([k]) => k !== m.field);
          else if (m.t === 'add') entries = [...entries, [m.field, m.value]];
          else if (m.t === 'swap' && m.i < entries.length && m.j < entries.length) {
            const e = [...entries];
            [e[m.i], e[m.j]] = [e[m.j]!, e[m.i]!];
            entries = e;
          } else if (m.t === 'space') indent = m.indent;
          else if (m.t === 'bodyset') entries = entries.map(([k, v]) => [k, k === 'body' ? { ...(v as object), [m.field]: m.value } : v]);
        }
        const mutated = JSON.stringify(Object.fromEntries(entries), null, indent);
        fc.pre(mutated !== original);
        await neverAccepted([mutated]);
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary text and JSON never get in and never throw out of the receiver', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fc.string(), fc.json(), fc.string({ unit: 'binary' })), { maxLength: 5 }), async (garbage) => {
        await neverAccepted(garbage);
      }),
      { numRuns: 200 },
    );
  });
});

describe('canonical base64url of keys and signatures', () => {
  /** The definition: decoded, the text is `bytes` bytes and encodes back to itself. */
  const byDecoding = (text: string, bytes: number) => {
    const raw = Buffer.from(text, 'base64url');
    return raw.length === bytes && raw.toString('base64url') === text;
  };
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

  it('is decided as decoding and encoding again decides it, whatever the text', () => {
    for (const bytes of [32, 64, 1, 2, 3, 0]) {
      const length = Math.ceil((bytes * 8) / 6);
      for (const last of alphabet) {
        const text = 'A'.repeat(Math.max(0, length - 1)) + (length > 0 ? last : '');
        expect(canonicalBase64url(text, bytes), `${bytes} bytes ending ${last}`).toBe(byDecoding(text, bytes));
      }
    }
    const texts = fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      fc.stringMatching(/^[A-Za-z0-9_-]{86}$/),
      fc.string({ maxLength: 90 }),
      fc.stringMatching(/^[A-Za-z0-9_+/=-]{40,90}$/),
    );
    fc.assert(
      fc.property(texts, fc.constantFrom(32, 64), (text, bytes) => {
        expect(canonicalBase64url(text, bytes)).toBe(byDecoding(text, bytes));
      }),
      { numRuns: 2000 },
    );
  });

  it('an op whose key or signature ends in bits that decoding drops is refused, though the signature verifies', () => {
    const signer = opSigner(generateKeyPairSync('ed25519').privateKey);
    const thread = newThreadId();
    const op = { id: newOpId(), workspace: workspaceOfKey(signer.key)!, origin: 'host-1', lamport: 1, ts: '2025-05-01T10:00:00.000Z', kind: 'x.custom', operation: thread, thread, session: null, body: {}, key: signer.key } as unknown as Op;
    const { raw, sig } = signOp(op, signer);
    expect(checkOpsSync([raw])[0]!.ok).toBe(true);
    // A signature's last character carries 2 bits of its 64 bytes and 4 that decoding drops: flip one of those.
    const last = alphabet.indexOf(sig.at(-1)!);
    const loose = sig.slice(0, -1) + alphabet[last ^ 1]!;
    expect(Buffer.from(loose, 'base64url')).toEqual(Buffer.from(sig, 'base64url'));
    const [bad] = checkOpsSync([raw.replace(sig, loose)]);
    expect(bad).toMatchObject({ ok: false, reason: 'malformed', why: 'the signature is not canonical base64url' });
    // A key's last character carries 4 bits of its 32 bytes and 2 that decoding drops.
    const keyLast = alphabet.indexOf(signer.key.at(-1)!);
    const looseKey = signer.key.slice(0, -1) + alphabet[keyLast ^ 1]!;
    const forged = signOp({ ...op, key: looseKey } as Op, { key: looseKey, privateKey: signer.privateKey }).raw;
    expect(checkOpsSync([forged])[0]).toMatchObject({ ok: false, reason: 'malformed', why: 'the key is not canonical base64url' });
  });
});
