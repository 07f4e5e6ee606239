// Ops no store can keep (a NUL, a lone surrogate, nesting far too deep, a Lamport clock out of range or
// far ahead of the receiver's): a node counts each by reason, never folds it, and moves its cursor past
// it, so the good op behind it arrives. And one a node can keep but that has no authority (an answer
// forged for a thread the signer is not addressed by): stored, inert, counted. Straight into the sync client's page path on a real store, and
// through a real relay between real nodes, pushed with a throwaway key and nothing but the stream token.
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOps } from '../crypto/index.js';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { tables } from '../node-agent/adapters/store/index.js';
import { appendOps, LAMPORT_AHEAD_LIMIT } from '../node-agent/kernel/index.js';
import { storePage } from '../node-agent/host/sync/page.js';
import { readPosition } from '../node-agent/host/sync/state.js';
import { newThreadId } from '../protocol/ids.js';
import { checkStorable, MAX_DEPTH, MAX_LAMPORT } from '../protocol/storable.js';
import { silentLog, startRelay, type Relay } from '../server/index.js';
import { Forger, rawPeer, type AckResult } from './helpers/forge.js';
import { createStream, relayFolders } from './helpers/relay.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';
import { useFreshStores } from './helpers/stores.js';
import { until } from './helpers/until.js';

const freshStore = useFreshStores('poison');

const m = new Forger();
const scope = () => {
  const t = newThreadId();
  return { operation: t, thread: t, session: null };
};
const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

/** Each poison op, by the reason a node gives for it. */
const POISON: Array<[string, string, () => string]> = [
  ['a NUL in a body string', 'nul', () => m.text({ kind: 'message.posted', ...scope(), body: { text: 'a\u0000b' } })],
  ['a NUL in a body key', 'nul', () => m.text({ kind: 'x.custom', ...scope(), body: { 'a\u0000b': 1 } })],
  ['a lone surrogate in a string', 'surrogate', () => m.text({ kind: 'x.custom', ...scope(), body: { text: 'a\ud800b' } })],
  ['a lone surrogate in a key', 'surrogate', () => m.text({ kind: 'x.custom', ...scope(), body: { ['\udc00']: 1 } })],
  ['nesting just past the limit', 'too_deep', () => m.textWithRawBody({ kind: 'x.custom', ...scope(), body: {} }, nested(MAX_DEPTH))],
  ['nesting 5,000 deep', 'too_deep', () => m.textWithRawBody({ kind: 'x.custom', ...scope(), body: {} }, nested(5_000))],
  ['lamport 2^53-1', 'lamport_range', () => m.text({ kind: 'x.custom', ...scope(), body: {}, lamport: Number.MAX_SAFE_INTEGER })],
  ['lamport just past MAX_LAMPORT', 'lamport_range', () => m.text({ kind: 'x.custom', ...scope(), body: {}, lamport: MAX_LAMPORT + 1 })],
];

describe('checkStorable', () => {
  it.each([
    ['plain text', { a: 'héllo 🎉', b: [1, { c: null }] }, true],
    ['a paired surrogate (an emoji)', { a: '\ud83c\udf89' }, true],
    ['nesting at the limit', JSON.parse(`{"a":${nested(MAX_DEPTH - 2)}}`), true],
    ['nesting past the limit', JSON.parse(`{"a":${nested(MAX_DEPTH)}}`), false],
    ['lamport at MAX_LAMPORT', { lamport: MAX_LAMPORT }, true],
    ['lamport 0', { lamport: 0 }, false],
  ])('%s: storable %s', (_what, value, ok) => {
    expect(checkStorable(value).ok).toBe(ok);
  });
});

describe("the sync client's page path on a real store", () => {
  it.each(POISON)('%s is counted as %s, never stored, and the cursor moves past it to the good op', async (_what, reason, poison) => {
    const store = await freshStore();
    const good = m.thread('after the poison');
    const page = [poison(), ...good.texts];
    const key = 'position test';
    const { next, report } = await storePage(store.db, key, await readPosition(store.db, key), 42, await checkOps(page), PROJECTIONS);
    expect(report.rejected).toEqual({ [reason]: 1 });
    expect(next.cursor).toBe(42);
    expect(next.rejected).toEqual({ [reason]: 1 });
    expect((await readPosition(store.db, key)).cursor).toBe(42);
    const [row] = await store.db.select({ n: count() }).from(tables.ops);
    expect(row!.n).toBe(2);
    const op = await store.db.select().from(tables.operations).where(eq(tables.operations.id, good.thread));
    expect(op).toHaveLength(1);
  });

  it("refuses an op further ahead of the store's clock than the bound, counting it, and keeps the clock where it was", async () => {
    const store = await freshStore();
    const ahead = m.text({ kind: 'x.custom', ...scope(), body: {}, lamport: LAMPORT_AHEAD_LIMIT + 10 });
    const near = m.text({ kind: 'x.custom', ...scope(), body: {}, lamport: LAMPORT_AHEAD_LIMIT - 10 });
    const { report } = await storePage(store.db, 'k', await readPosition(store.db, 'k'), 2, await checkOps([ahead, near]), PROJECTIONS);
    expect(report.rejected).toEqual({ lamport_ahead: 1 });
    expect(report.fresh.map((o) => o.lamport)).toEqual([LAMPORT_AHEAD_LIMIT - 10]);
    // Once the store has seen that clock, an op just past it is taken; one within the step of it but past
    // what the store's ops can justify is not (test/lamport-bound.test.ts has the whole bound).
    const next = m.text({ kind: 'x.custom', ...scope(), body: {}, lamport: LAMPORT_AHEAD_LIMIT - 9 });
    const second = await storePage(store.db, 'k', await readPosition(store.db, 'k'), 3, await checkOps([next]), PROJECTIONS);
    expect(second.report.rejected).toEqual({});
    const jump = m.text({ kind: 'x.custom', ...scope(), body: {}, lamport: LAMPORT_AHEAD_LIMIT + 10 });
    const third = await storePage(store.db, 'k', await readPosition(store.db, 'k'), 4, await checkOps([jump]), PROJECTIONS);
    expect(third.report.rejected).toEqual({ lamport_ahead: 1 });
  });

  it('never builds a local op past MAX_LAMPORT: the append is refused with CLOCK_EXHAUSTED and nothing is written', async () => {
    const store = await freshStore();
    // The highest clock a received op may carry, taken in.
    const top = m.text({ kind: 'x.custom', ...scope(), body: {}, lamport: MAX_LAMPORT });
    const opened = (await checkOps([top]))[0]!;
    if (!opened.ok) throw new Error('the op should verify');
    await store.db.insert(tables.ops).values({ id: opened.op.id, workspace: opened.op.workspace, origin: 'o', lamport: MAX_LAMPORT, ts: opened.op.ts, kind: 'x.custom', operation: opened.op.operation, thread: null, session: null, body: {}, key: opened.op.key, sig: opened.sig });
    const author = { workspace: m.workspace, origin: 'here', now: () => new Date(), signer: m.signer, projections: PROJECTIONS };
    const t = newThreadId();
    await expect(
      appendOps(store.db, author, [{ operation: t, thread: t, session: null, kind: 'thread.opened', body: { parent: null, subject: null, opener: { handle: 'alice', session: null }, target: { kind: 'person', handle: 'bob' } } }]),
    ).rejects.toMatchObject({ code: 'CLOCK_EXHAUSTED' });
    const [row] = await store.db.select({ n: count() }).from(tables.ops);
    expect(row!.n).toBe(1);
  });
});

describe('through a real relay between real nodes', () => {
  const OPERATOR = 'poison-test-operator-token-0123456789';
  const nodes: TestWorkspace[] = [];
  let folders: Awaited<ReturnType<typeof relayFolders>> | undefined;
  let relay: Relay;
  let token: string;

  beforeAll(async () => {
    folders = await relayFolders();
    relay = await startRelay({ dataDir: folders.fresh(), operatorToken: OPERATOR, log: silentLog });
    token = await createStream(relay.url, 'team', OPERATOR);
  });
  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.cleanup().catch(() => undefined)));
    await relay?.close().catch(() => undefined);
    folders?.cleanup();
  });

  async function boundNode(): Promise<TestWorkspace> {
    const w = await makeWorkspace({ git: false, cliInProcess: true });
    nodes.push(w);
    await w.startNode();
    const r = await w.nxs(['sync', 'bind', relay.url, '--stream', 'team', '--token', token, '--json']);
    if (r.code !== 0) throw new Error(`nxs sync bind failed: ${r.stdout}${r.stderr}`);
    return w;
  }

  it('every node takes the good op pushed after each poison op, and counts what it refused by reason', async () => {
    const early = await boundNode();
    // Each poison op in a push (and on a socket) of its own, so a relay that refuses a whole push for one
    // op, or closes the socket over it, still takes the rest.
    const results: AckResult[] = [];
    for (const [, , poison] of POISON) {
      const peer = await rawPeer(relay.url, 'team', token);
      try {
        results.push(...(await peer.push([poison()])));
      } catch {
        results.push({ op: '?', seq: 0, duplicate: false, refused: 'closed' });
      }
      peer.close();
    }
    const good = m.thread('after the poison');
    const peer2 = await rawPeer(relay.url, 'team', token);
    const acked = await peer2.push(good.texts);
    expect(acked.every((r) => r.seq > 0 && r.refused === undefined)).toBe(true);
    peer2.close();
    const head = acked.at(-1)!.seq;
    // What the relay stored, each node must refuse by reason; what it refused never reaches a node.
    const stored = results.filter((r) => r.seq > 0 && r.refused === undefined).length;
    const expected: Record<string, number> = {};
    POISON.forEach(([, reason], i) => {
      if (results[i]!.seq > 0 && results[i]!.refused === undefined) expected[reason] = (expected[reason] ?? 0) + 1;
    });
    const late = await boundNode();
    for (const w of [early, late]) {
      const s = await until(`${w.id} to take the good op`, async () => {
        const r = await w.nxs(['sync', 'status', '--json']);
        return r.json?.cursor >= head ? r.json : undefined;
      });
      expect(s.rejected, `${stored} poison op(s) stored by the relay`).toEqual(expected);
      const status = await w.status(true);
      expect(status.operations.map((o: { operation: string }) => o.operation)).toContain(good.thread);
      // Still live: a local op goes out and the cursor keeps moving.
      const sent = await w.nxc(['send', '@bob', '--subject', 'alive', 'still syncing', '--json']);
      expect(sent.code, sent.stderr).toBe(0);
    }
    await until('both nodes to hold both local ops', async () => {
      const cursors = await Promise.all([early, late].map(async (w) => (await w.nxs(['sync', 'status', '--json'])).json));
      return cursors.every((c) => c.cursor === head + 4 && c.outbox === 0) ? true : undefined;
    });
  });

  it('an answer forged by a stream member to a person’s thread is stored, inert, and counted by the node', async () => {
    const w = nodes[0] ?? (await boundNode());
    const sent = await w.nxc(['send', '@zoe', '--subject', 'question', 'are you there?', '--json']);
    expect(sent.code, sent.stderr).toBe(0);
    await until('the thread to reach the relay', async () => ((await w.nxs(['sync', 'status', '--json'])).json?.outbox === 0 ? true : undefined));
    const peer = await rawPeer(relay.url, 'team', token);
    const [acked] = await peer.push([m.message(sent.json.operation, sent.json.thread, 'mallory answers for zoe', 'answer', { handle: 'zoe', session: null }, 10_000_000)]);
    peer.close();
    expect(acked!.seq).toBeGreaterThan(0);
    const s = await until('the node to take the forged answer', async () => {
      const r = await w.nxs(['sync', 'status', '--json']);
      return r.json?.cursor >= acked!.seq ? r.json : undefined;
    });
    expect(s.inert).toMatchObject({ not_owner: 1 });
    const status = await w.status(true);
    const row = status.operations.flatMap((o: { threads: Array<{ thread: string }> }) => o.threads).find((t: { thread: string }) => t.thread === sent.json.thread);
    expect(row).toMatchObject({ state: 'open', answered_by: null, messages: 1 });
  });
});
