// A stamp vouches for one commission: its issuer, thread, role and asker. Stamps are readable in the op
// log, so a valid stamp lifted from one commission and put on another `thread.opened` (another thread,
// another role, another asker, or signed by a key nobody trusts) must be refused with STAMP_FORGED
// through the real ingest path (ops verified, stored, folded, then reacted to), start nothing, and
// leave the stamp's own commission admissible. In-process workspaces, real stores, real signatures.
import { sql } from 'drizzle-orm';
import { randomUlid } from '../protocol/ids.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signOp, type OpSigner } from '../crypto/index.js';
import { newThreadId } from '../protocol/ids.js';
import type { Op } from '../protocol/ops.js';
import { ownTexts, takeIn } from './helpers/deliver.js';
import { Forger } from './helpers/forge.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

const EXTERNAL = 'addressable: { external: true }';

type Opened = { id: string; workspace: string; thread: string; body: { parent: null; subject: string; opener: { handle: string; session: null }; target: { kind: 'remote'; workspace: string; role: string; handle: string }; stamp: string } };

let a: TestWorkspace;
let b: TestWorkspace;
let aSigner: OpSigner;
const m = new Forger();
let lamport = 5_000;

/** A sends a commission to `role` in B as `actor`; its `thread.opened` is returned, not delivered. */
async function commission(role: string, actor = 'alice'): Promise<Opened> {
  const sent = await a.nxc(['send', `${b.id}/${role}`, '--subject', `for ${role}`, '--json', 'please'], { env: { NXC_ACTOR: actor } });
  expect(sent.code, sent.stderr).toBe(0);
  const texts = await ownTexts(a);
  const opened = texts.map((t) => JSON.parse(t) as Opened & { kind: string }).find((o) => o.kind === 'thread.opened' && o.thread === sent.json.thread);
  expect(opened?.body.stamp).toBeTruthy();
  return opened!;
}

/** The text of A's own op for `thread` (the genuine commission). */
async function genuine(thread: string): Promise<string[]> {
  return (await ownTexts(a)).filter((t) => (JSON.parse(t) as { thread: string }).thread === thread);
}

/** A `thread.opened` signed by `signer` for `workspace`, with `body` as given. */
function openedBy(signer: OpSigner, workspace: string, thread: string, body: Opened['body']): string {
  const op = { id: randomUlid(), workspace, origin: `test-${workspace.slice(0, 6)}`, lamport: ++lamport, ts: new Date().toISOString(), kind: 'thread.opened', operation: thread, thread, session: null, body, key: signer.key } as unknown as Op;
  return signOp(op, signer).raw;
}

/** The stamp's id (its `jti`), read from its payload. */
function jtiOf(stamp: string): string {
  return (JSON.parse(Buffer.from(stamp.split('.')[1]!, 'base64url').toString('utf8')) as { jti: string }).jti;
}

async function stampUsed(jti: string): Promise<boolean> {
  return b.withStore(async (s) => ((await s.db.execute(sql`select 1 from stamps_seen where jti = ${jti}`)) as unknown as { rows: unknown[] }).rows.length > 0);
}

/** What B holds for `thread`: the codes of its refusals, and the sessions made for it. */
async function outcome(thread: string): Promise<{ refused: string[]; sessions: number }> {
  return b.withStore(async (s) => {
    const rows = (await s.db.execute(sql`select kind, body from ops where thread = ${thread} and workspace = ${b.id}`)) as unknown as { rows: Array<{ kind: string; body: unknown }> };
    const body = (x: unknown) => (typeof x === 'string' ? JSON.parse(x) : x) as { code?: string };
    return {
      refused: rows.rows.filter((r) => r.kind === 'commission.rejected').map((r) => body(r.body).code ?? ''),
      sessions: rows.rows.filter((r) => r.kind === 'session.created').length,
    };
  });
}

beforeAll(async () => {
  [a, b] = await Promise.all([makeWorkspace({ git: false }), makeWorkspace({ git: false })]);
  const t = await b.nxs(['sync', 'trust', 'add', '--workspace', a.id, '--key', `${a.root}/.nxs/keys/workspace.pub.jwk`, '--json']);
  expect(t.code, t.stdout + t.stderr).toBe(0);
  // Two roles anyone trusted may address, so nothing but the stamp's ties stands between a forgery and a run.
  b.persona('coder', { mode: 'reply', extra: EXTERNAL });
  b.persona('reviewer', { mode: 'reply', extra: EXTERNAL });
  aSigner = await a.inproc!.serve(async (host) => host.deps.keys.signer);
});

afterAll(async () => {
  await Promise.all([a, b].map((w) => w?.cleanup()));
});

describe('a valid stamp from a trusted workspace on a commission it was not made for', () => {
  it.each([
    [
      'another thread',
      (o: Opened) => {
        const thread = newThreadId();
        return { thread, text: openedBy(aSigner, a.id, thread, o.body) };
      },
    ],
    [
      'another role',
      (o: Opened) => ({ thread: o.thread, text: openedBy(aSigner, a.id, o.thread, { ...o.body, target: { ...o.body.target, role: 'reviewer', handle: `${b.short}/reviewer` } }) }),
    ],
    ['another asker', (o: Opened) => ({ thread: o.thread, text: openedBy(aSigner, a.id, o.thread, { ...o.body, opener: { handle: 'mallory', session: null } }) })],
    ['the same commission signed by a key nobody trusts', (o: Opened) => ({ thread: o.thread, text: openedBy(m.signer, m.workspace, o.thread, o.body) })],
  ] as const)('%s: refused with STAMP_FORGED through ingest, starts nothing, and leaves the stamp unused', async (_what, forge) => {
    const real = await commission('coder');
    const jti = jtiOf(real.body.stamp);
    const forged = forge(real);
    const taken = await takeIn(b, [forged.text]);
    expect(taken.report.fresh).toHaveLength(1);
    expect(taken).toMatchObject({ started: 0, rejected: 1 });
    expect(await outcome(forged.thread)).toEqual({ refused: ['STAMP_FORGED'], sessions: 0 });
    await b.waitIdle();
    expect(b.agentLog().filter((e) => e.cmd === 'start')).toEqual([]);
    expect(await stampUsed(jti)).toBe(false);
  });

  it('the stamp refused on another thread still admits the commission it was made for, once', async () => {
    const real = await commission('coder');
    const elsewhere = newThreadId();
    expect(await takeIn(b, [openedBy(aSigner, a.id, elsewhere, real.body)])).toMatchObject({ started: 0, rejected: 1 });
    const taken = await takeIn(b, await genuine(real.thread));
    expect(taken.rejected).toBe(0);
    expect((await outcome(real.thread)).sessions).toBe(1);
    expect(await stampUsed(jtiOf(real.body.stamp))).toBe(true);
    await b.waitIdle();
    // Put on yet another thread now, it is still refused (the tie, then the spent id).
    expect(await takeIn(b, [openedBy(aSigner, a.id, newThreadId(), real.body)])).toMatchObject({ started: 0, rejected: 1 });
  });

  it('a commission refused before its stamp is used (no such role) leaves the stamp unused, and it cannot be carried to a role that exists', async () => {
    const refused = await commission('nobody');
    expect(await takeIn(b, await genuine(refused.thread))).toMatchObject({ started: 0, rejected: 1 });
    expect(await outcome(refused.thread)).toEqual({ refused: ['UNKNOWN_PERSONA'], sessions: 0 });
    const jti = jtiOf(refused.body.stamp);
    expect(await stampUsed(jti)).toBe(false);
    // Read from the log and put on a commission to a role that is declared: the role it names is not this one.
    const thread = newThreadId();
    const replay = openedBy(aSigner, a.id, thread, { ...refused.body, target: { ...refused.body.target, role: 'coder', handle: `${b.short}/coder` } });
    expect(await takeIn(b, [replay])).toMatchObject({ started: 0, rejected: 1 });
    expect(await outcome(thread)).toEqual({ refused: ['STAMP_FORGED'], sessions: 0 });
    await b.waitIdle();
    expect(b.agentLog().filter((e) => e.cmd === 'start')).toHaveLength(1); // only the genuine commission of the case before
  });
});
