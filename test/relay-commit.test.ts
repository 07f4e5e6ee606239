// Group commit on a real PGlite store: pushes that arrive while a commit runs share the next one.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newOpId } from '../protocol/ids.js';
import { GroupCommitter } from '../server/commit.js';
import { StreamFeed } from '../server/hub.js';
import { openPgliteStore, silentLog, type OpToAppend, type StoredOp, type StreamStore } from '../server/index.js';
import { PgliteThread } from '../server/storage/pglite-thread.js';

const dirs: string[] = [];
let store: StreamStore;
/** The same store, counting its append transactions and how many were on their way at once. */
let counted: StreamStore;
let appends = 0;
let inFlight = 0;
let mostInFlight = 0;
/** A second copy of the same database, on a thread of its own, for the thread's own cases. */
let thread: PgliteThread;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nexus-relay-commit-'));
  const copy = mkdtempSync(join(tmpdir(), 'nexus-relay-commit-'));
  const spare = mkdtempSync(join(tmpdir(), 'nexus-relay-commit-'));
  dirs.push(dir, copy, spare);
  await (await openPgliteStore({ dataDir: dir, log: silentLog })).close();
  cpSync(dir, copy, { recursive: true });
  cpSync(dir, spare, { recursive: true });
  [store, thread] = await Promise.all([openPgliteStore({ dataDir: dir, log: silentLog }), PgliteThread.open(join(copy, 'pgdata'), [])]);
  counted = Object.create(store, {
    append: {
      value: async (s: string, ops: readonly OpToAppend[]) => {
        appends += 1;
        mostInFlight = Math.max(mostInFlight, ++inFlight);
        try {
          return await store.append(s, ops);
        } finally {
          inFlight -= 1;
        }
      },
    },
  }) as StreamStore;
});

afterAll(async () => {
  await store?.close();
  await thread?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
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

  it('keeps a second transaction waiting at the database, and seqs in push order when the first meets a duplicate', async () => {
    await store.createStream('piped', 'h');
    const stored = op();
    await store.append('piped', [stored]);
    const committer = new GroupCommitter('piped', counted, { maxOps: 1_000, maxBytes: 1 << 20 }, () => undefined);
    mostInFlight = 0;
    // The first push repeats a stored op, so its transaction fails on the unique index and the careful
    // script runs in its place; the second push's transaction is already waiting behind it by then.
    const pushes = [[stored, op()], [op()], [op(), op()], [op()]];
    const outs = await Promise.all(pushes.map((ops) => committer.append(ops)));
    expect(store.appendDepth).toBe(2);
    expect(mostInFlight).toBe(2);
    expect(outs[0]!.results[0]).toEqual({ op: stored.id, seq: 1, duplicate: true });
    expect(outs.flatMap((c) => c.results.filter((r) => !r.duplicate).map((r) => r.seq))).toEqual([2, 3, 4, 5, 6]);
    expect((await store.read('piped', 0, 10)).map((r) => JSON.parse(r.op) as { id: string }).map((o) => o.id)).toEqual(pushes.flat().map((o) => o.id));
  });

  it('sends the next transaction before answering the pushes of the one that committed', async () => {
    await store.createStream('next-first', 'h');
    const events: string[] = [];
    const logged = Object.create(store, {
      append: { value: (s: string, ops: readonly OpToAppend[]) => (events.push(`append ${ops.length}`), store.append(s, ops)) },
    }) as StreamStore;
    // The feed hears of a commit as its pushes are answered, so its notice marks that moment.
    const committer = new GroupCommitter('next-first', logged, { maxOps: 1_000, maxBytes: 1 << 20 }, (rows) => events.push(`committed ${rows.length}`));
    // Two go out at once (appendDepth 2); the third waits for the first to commit.
    await Promise.all([[op()], [op(), op()], [op(), op(), op()]].map((ops) => committer.append(ops)));
    expect(events).toEqual(['append 1', 'append 2', 'append 3', 'committed 1', 'committed 2', 'committed 3']);
  });

  it('settles transactions in the order they were made, whichever the database finishes first', async () => {
    await store.createStream('overtaken', 'h');
    // The first append is held back until the second has committed.
    let first = true;
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    const slowFirst = Object.create(store, {
      append: {
        value: async (s: string, ops: readonly OpToAppend[]) => {
          if (!first) return store.append(s, ops).finally(release);
          first = false;
          await held;
          return store.append(s, ops);
        },
      },
    }) as StreamStore;
    const handed: number[] = [];
    const committer = new GroupCommitter('overtaken', slowFirst, { maxOps: 1_000, maxBytes: 1 << 20 }, (rows) => handed.push(...rows.map((r) => r.seq)));
    const order: number[] = [];
    const outs = await Promise.all([[op()], [op()]].map((ops, i) => committer.append(ops).then((c) => (order.push(i), c))));
    // The second push's transaction committed first, so it holds seq 1; it still resolves second.
    expect(outs.map((c) => c.results[0]!.seq)).toEqual([2, 1]);
    expect(order).toEqual([0, 1]);
    expect(handed).toEqual([2, 1]);
  });
});

describe('StreamFeed frames', () => {
  it('shares a frame among consumers at one cursor while they drift apart, and rebuilds one that ended at a head that moved', async () => {
    await store.createStream('frames', 'h');
    await store.append('frames', Array.from({ length: 30 }, () => op()));
    const feed = new StreamFeed('frames', store, { pageSize: 10, cacheOps: 40, cacheBytes: 1 << 20, group: { maxOps: 100, maxBytes: 1 << 20 } }, silentLog);
    try {
      feed.known(30);
      const first = feed.frame(0, 10, 1 << 20);
      const second = feed.frame(10, 10, 1 << 20);
      const tail = feed.frame(25, 10, 1 << 20);
      // A consumer still at 0 after another asked for the next page gets the frame already built.
      expect(feed.frame(0, 10, 1 << 20)).toBe(first);
      expect((await second)!.last).toBe(20);
      expect((await tail)!).toMatchObject({ count: 5, last: 30 });
      await feed.append([op(), op()]);
      expect(feed.head).toBe(32);
      // Stopped short of the head it was built under: still true. Ended at it: built again, with the new ops.
      expect(feed.frame(0, 10, 1 << 20)).toBe(first);
      const again = feed.frame(25, 10, 1 << 20);
      expect(again).not.toBe(tail);
      expect((await again)!).toMatchObject({ count: 7, last: 32 });
    } finally {
      feed.close();
    }
  });
});

describe('PgliteThread', () => {
  it('answers statements and scripts, with PostgreSQL error codes', async () => {
    expect(await thread.query<{ n: number }>('SELECT $1::int + 1 AS n', [41])).toEqual([{ n: 42 }]);
    expect(await thread.exec('SELECT 1 AS a; SELECT 2 AS b')).toEqual([[{ a: 1 }], [{ b: 2 }]]);
    await expect(thread.query('SELECT * FROM no_such_table')).rejects.toMatchObject({ code: '42P01' });
    await thread.exec('CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY)');
    await thread.exec('INSERT INTO t VALUES (1)');
    await expect(thread.exec('INSERT INTO t VALUES (1)')).rejects.toMatchObject({ code: '23505' });
    let built = 0;
    const fallback = () => (built++, 'SELECT 7 AS fallback');
    // The fallback is built only when needed, and nothing queued behind the script runs before it.
    const behind = thread.query<{ k: number }>('SELECT max(k) AS k FROM t');
    expect(await thread.execOr('INSERT INTO t VALUES (2) RETURNING k', fallback)).toEqual({ fellBack: false, results: [[{ k: 2 }]] });
    expect(built).toBe(0);
    const failing = thread.execOr('INSERT INTO t VALUES (1)', () => (built++, 'INSERT INTO t VALUES (3) RETURNING k'));
    const after = thread.query<{ k: number }>('SELECT max(k) AS k FROM t');
    expect(await failing).toEqual({ fellBack: true, results: [[{ k: 3 }]] });
    expect(built).toBe(1);
    expect(await behind).toEqual([{ k: 1 }]);
    expect(await after).toEqual([{ k: 3 }]);
    // Only a unique violation falls back; a fallback that cannot be built fails its call and frees the queue.
    await expect(thread.execOr('SELECT 1/0', fallback)).rejects.toMatchObject({ code: '22012' });
    await expect(thread.execOr('INSERT INTO t VALUES (1)', () => { throw new Error('no fallback today'); })).rejects.toThrow('no fallback today');
    expect(await thread.query('SELECT count(*)::int AS n FROM t')).toEqual([{ n: 3 }]);
  });

  it('runs a transaction as one job: committed when its function resolves, rolled back when it throws', async () => {
    await thread.exec('CREATE TABLE IF NOT EXISTS tx (k int PRIMARY KEY)');
    // A statement sent while the transaction is open waits for its end, and sees what it committed.
    let outside: Promise<unknown[]> | undefined;
    await thread.transaction(async (tx) => {
      await tx.query('INSERT INTO tx VALUES (1)');
      outside = thread.query('SELECT count(*)::int AS n FROM tx');
      await tx.query('INSERT INTO tx VALUES (2)');
    });
    expect(await outside).toEqual([{ n: 2 }]);
    await expect(
      thread.transaction(async (tx) => {
        await tx.query('INSERT INTO tx VALUES (3)');
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    // A failed statement inside rolls the whole transaction back.
    await expect(thread.transaction(async (tx) => (await tx.query('INSERT INTO tx VALUES (4)'), await tx.query('INSERT INTO tx VALUES (1)')))).rejects.toMatchObject({ code: '23505' });
    expect(await thread.query('SELECT k FROM tx ORDER BY k')).toEqual([{ k: 1 }, { k: 2 }]);
  });

  it('fails every waiting call with STORE_FAILED when its thread dies, and every later one', async () => {
    const heard: Error[] = [];
    const doomed = await PgliteThread.open(join(dirs[2]!, 'pgdata'), [], (err) => heard.push(err));
    const waiting = doomed.query('SELECT pg_sleep(0.5)');
    await (doomed as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await expect(waiting).rejects.toMatchObject({ code: 'STORE_FAILED' });
    await expect(doomed.query('SELECT 1')).rejects.toMatchObject({ code: 'STORE_FAILED' });
    await doomed.close();
    // Told once, with the reason; a thread ended by close() is not a failure.
    expect(heard.map((e) => (e as { code?: string }).code)).toEqual(['STORE_FAILED']);
    const closed: Error[] = [];
    await (await PgliteThread.open(join(dirs[2]!, 'pgdata'), [], (err) => closed.push(err))).close();
    expect(closed).toEqual([]);
  });
});

