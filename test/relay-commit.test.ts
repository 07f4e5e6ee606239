// Group commit on a real PGlite store: pushes that arrive while a commit runs share the next one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newOpId } from '../protocol/ids.js';
import { GroupCommitter } from '../server/commit.js';
import { openPgliteStore, silentLog, type OpToAppend, type StoredOp, type StreamStore } from '../server/index.js';

let dir = '';
let store: StreamStore;
/** The same store, counting its append transactions. */
let counted: StreamStore;
let appends = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'nexus-relay-commit-'));
  store = await openPgliteStore({ dataDir: dir, log: silentLog });
  counted = Object.create(store, { append: { value: (s: string, ops: readonly OpToAppend[]) => (appends++, store.append(s, ops)) } }) as StreamStore;
});

afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const op = (id = newOpId()): OpToAppend => ({ id, text: JSON.stringify({ id }) });

describe('GroupCommitter', () => {
  it('commits pushes queued meanwhile together, resolves each in order with its own results, seqs gapless', async () => {
    await store.createStream('grouped', 'h');
    const handed: StoredOp[] = [];
    const committer = new GroupCommitter('grouped', counted, { maxOps: 1_000, maxBytes: 1 << 20 }, (rows) => handed.push(...rows));
    appends = 0;
    const repeated = op();
    const pushes = Array.from({ length: 30 }, (_, i) => (i === 7 || i === 20 ? [op(), repeated] : [op(), op()]));
    const order: number[] = [];
    const outs = await Promise.all(pushes.map((ops, i) => committer.append(ops).then((c) => (order.push(i), c))));
    expect(order).toEqual(pushes.map((_, i) => i));
    expect(appends).toBeLessThan(pushes.length);
    expect(appends).toBeGreaterThanOrEqual(1);
    const seqs = outs.flatMap((c) => c.results.filter((r) => !r.duplicate).map((r) => r.seq));
    expect(seqs).toEqual(Array.from({ length: 59 }, (_, i) => i + 1));
    expect(outs[20]!.results[1]).toEqual({ op: repeated.id, seq: outs[7]!.results[1]!.seq, duplicate: true });
    expect(outs.map((c, i) => c.results.map((r) => r.op))).toEqual(pushes.map((ops) => ops.map((o) => o.id)));
    // The rows each commit stored were handed over as stored, once each, in seq order.
    expect(handed.map((r) => r.seq)).toEqual(seqs);
    expect(handed).toEqual(await store.read('grouped', 0, 100));
  });

  it('keeps a group within its bounds', async () => {
    await store.createStream('bounded', 'h');
    const committer = new GroupCommitter('bounded', counted, { maxOps: 5, maxBytes: 1 << 20 }, () => undefined);
    appends = 0;
    await Promise.all(Array.from({ length: 10 }, () => committer.append([op(), op()])));
    // 20 ops, at most 5 (two pushes of two) per transaction; the first push goes alone.
    expect(appends).toBeGreaterThanOrEqual(5);
    expect((await store.getStream('bounded'))!.head).toBe(20);
  });

  it('fails exactly the pushes of a failed commit, and carries on with the next', async () => {
    const committer = new GroupCommitter('nowhere', counted, { maxOps: 1_000, maxBytes: 1 << 20 }, () => undefined);
    const results = await Promise.allSettled([committer.append([op()]), committer.append([op()])]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect((results[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'UNKNOWN_STREAM' });
    await store.createStream('nowhere', 'h');
    expect((await committer.append([op()])).results[0]!.seq).toBe(1);
  });
});
