// Ops no store can keep (a NUL, a lone surrogate, nesting far too deep, a Lamport clock out of range or
// far ahead of the receiver's): a node counts each by reason, never folds it, and moves its cursor past
// it, so the good op behind it arrives. And one a node can keep but that has no authority (an answer
// forged for a thread the signer is not addressed by): stored, inert, counted. Here straight into the sync
// client's page path on a real store; through a real relay between real nodes in
// test/e2e/poison-ops-nodes.test.ts.
import { count, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { checkOps } from '../crypto/index.js';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { tables } from '../node-agent/adapters/store/index.js';
import { appendOps, LAMPORT_AHEAD_LIMIT } from '../node-agent/kernel/index.js';
import { storePage } from '../node-agent/host/sync/page.js';
import { readPosition } from '../node-agent/host/sync/state.js';
import { newThreadId } from '../protocol/ids.js';
import { checkStorable, MAX_DEPTH, MAX_LAMPORT } from '../protocol/storable.js';
import { forger as m, nested, POISON, scope } from './helpers/poison.js';
import { useFreshStores } from './helpers/stores.js';

const freshStore = useFreshStores('poison');

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
