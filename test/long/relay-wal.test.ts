// The relay's PGlite store checkpoints its write-ahead log: PGlite runs no checkpointer, so without one of
// its own a relay kept every byte of WAL it wrote until it closed, and a relay killed after a long run
// replayed all of it at its next start. Here ~200 MB of ops go through the store in appends as the relay
// makes them; pg_wal must stay near the 64 MB mark, whatever was written since the store opened.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPgliteStore, silentLog, type OpToAppend } from '../../server/index.js';
import { writeUntilNewSegment } from '../helpers/wal-segments.js';

const base = mkdtempSync(join(tmpdir(), 'nexus-relay-wal-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const MB = 2 ** 20;

function walBytes(pgdata: string): number {
  const dir = join(pgdata, 'pg_wal');
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile())
    .reduce((n, e) => n + statSync(join(dir, e.name)).size, 0);
}

describe('the write-ahead log of the relay PGlite store', () => {
  it('is checkpointed as ops are appended: after ~200 MB of ops, pg_wal stays under twice the 64 MB mark', async () => {
    const store = await openPgliteStore({ dataDir: base, log: silentLog });
    try {
      await store.createStream('team', 'hash');
      // Ops of 8 kB that do not compress (PostgreSQL would store a repeated text in a few bytes), in
      // appends of 50 ops, then single-op appends as a quiet stream gets them.
      const op = (i: number): OpToAppend => ({ id: `op-${i}`, text: JSON.stringify({ id: `op-${i}`, pad: randomBytes(6 * 1024).toString('base64') }) });
      let n = 0;
      let bytes = 0;
      while (bytes < 190 * MB) {
        const ops = Array.from({ length: 50 }, () => op(n++));
        bytes += ops.reduce((s, o) => s + o.text.length, 0);
        await store.append('team', ops);
      }
      for (let i = 0; i < 1_200; i++) {
        const one = op(n++);
        bytes += one.text.length;
        await store.append('team', [one]);
      }
      expect(bytes).toBeGreaterThan(190 * MB);
      expect(walBytes(join(base, 'pgdata'))).toBeLessThan(128 * MB);
    } finally {
      await store.close();
    }
    // The database thread kept its files' sizes itself through all of that (infra/pglite-sizes.ts): opened
    // again, the store holds every op, in order, as appended.
    const again = await openPgliteStore({ dataDir: base, log: silentLog });
    try {
      const heads = await again.heads();
      expect(heads).toEqual([{ name: 'team', head: expect.any(Number) }]);
      const head = heads[0]!.head;
      expect(head).toBeGreaterThan(25_000);
      const tail = await again.read('team', head - 3, 10);
      expect(tail.map((r) => r.seq)).toEqual([head - 2, head - 1, head]);
      expect(JSON.parse(tail.at(-1)!.op).id).toBe(`op-${head - 1}`);
      const first = await again.read('team', 0, 2);
      expect(first.map((r) => JSON.parse(r.op).id)).toEqual(['op-0', 'op-1']);
    } finally {
      await again.close();
    }
  }, 300_000);

  it('is checkpointed when large ops come one per append: their bytes count, not only the statement that carries them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nexus-relay-wal-single-'));
    const store = await openPgliteStore({ dataDir: dir, log: silentLog });
    try {
      await store.createStream('team', 'hash');
      // 700 ops of ~200 kB, each its own append (one prepared statement with the op as a parameter): fewer
      // appends than the statement count that also has the WAL looked at, and ~140 MB of op text.
      let bytes = 0;
      for (let i = 0; i < 700; i++) {
        const id = `big-${i}`;
        const text = JSON.stringify({ id, pad: randomBytes(150 * 1024).toString('base64') });
        bytes += text.length;
        await store.append('team', [{ id, text }]);
      }
      expect(bytes).toBeGreaterThan(135 * MB);
      expect(walBytes(join(dir, 'pgdata'))).toBeLessThan(128 * MB);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  it('makes a new segment without writing 16 MB of zeros first: an append that crossed into it did not stall on that', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nexus-relay-segment-'));
    const store = await openPgliteStore({ dataDir: dir, log: silentLog });
    try {
      await store.createStream('team', 'hash');
      let n = 0;
      const op = (): OpToAppend => ({ id: `seg-${n}`, text: JSON.stringify({ id: `seg-${n++}`, pad: randomBytes(6 * 1024).toString('base64') }) });
      const fresh = await writeUntilNewSegment(join(dir, 'pgdata'), async () => void (await store.append('team', Array.from({ length: 50 }, op))));
      expect(fresh.size).toBe(16 * MB);
      // Zero-filled, it would hold all 16 MB on disk the moment it appeared.
      expect(fresh.allocated).toBeLessThan(8 * MB);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
