// A store's write-ahead log is checkpointed often enough that a node which stops without closing its stores
// (killed, or its machine lost) opens them again quickly: the next open replays every write since the last
// checkpoint, and PGlite runs no checkpointer, so without a bound a long-running node piles up to 1 GB of
// WAL to replay. Here a store takes ~150 MB of writes in one session; the WAL a crash at that moment would
// leave to replay (from the last checkpoint's redo point to the end of the log), and the WAL kept on disk,
// must stay near 64 MB, whatever was written since the store opened.
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { itLong } from './helpers/lanes.js';
import { createStore, openStore } from '../node-agent/adapters/store/index.js';
import { WAL_CHECK_INTERVAL_MS } from '../node-agent/adapters/store/open.js';
import { writeUntilNewSegment } from './helpers/wal-segments.js';

const base = mkdtempSync(join(tmpdir(), 'nexus-wal-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const MB = 2 ** 20;

function walBytes(store: string): number {
  const dir = join(store, 'pg_wal');
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile())
    .reduce((n, e) => n + statSync(join(dir, e.name)).size, 0);
}

describe('the write-ahead log of a workspace store', () => {
  itLong('is checkpointed every 64 MB or so: after 150 MB of writes a crash would replay a bounded tail, and the log on disk stays small', async () => {
    const dir = join(base, 'store');
    await createStore(dir, join(base, 'home'));
    const store = await openStore(dir);
    try {
      const toReplay = async () =>
        (await store.pg.query<{ n: number }>('select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), (select redo_lsn from pg_control_checkpoint()))::float8 as n')).rows[0]!.n;
      // The writes: any will do, as WAL is WAL; rows of 1 kB in a table of their own, committed in
      // transactions as a node commits its work (a command, or a page of ops taken in).
      await store.pg.exec('create table filler (x text)');
      const start = (await store.pg.query<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn')).rows[0]!.lsn;
      for (let i = 0; i < 10; i++) await store.db.transaction((tx) => tx.execute(sql`insert into filler select repeat(md5(g::text), 32) from generate_series(1, 16000) g`));
      const written = (await store.pg.query<{ n: number }>(`select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '${start}')::float8 as n`)).rows[0]!.n;
      expect(written).toBeGreaterThan(150 * MB);
      // What the next open would replay were the process killed now (pg_control_checkpoint reads the control
      // file on disk, which the next open starts its recovery from).
      expect(await toReplay()).toBeLessThan(80 * MB);
      expect(walBytes(dir)).toBeLessThan(112 * MB);
    } finally {
      await store.close();
    }
  }, 120_000);

  it('is looked at once per 100 ms of small commits, not after each: a command commits several in a few milliseconds', async () => {
    const dir = join(base, 'store-looks');
    await createStore(dir, join(base, 'home'));
    const store = await openStore(dir);
    try {
      await store.pg.exec('create table ticks (n int)');
      const query = vi.spyOn(store.pg, 'query');
      const looks = () => query.mock.calls.filter(([text]) => String(text).includes('pg_current_wal_insert_lsn')).length;
      const started = performance.now();
      for (let i = 0; i < 200; i++) await store.db.transaction((tx) => tx.execute(sql`insert into ticks values (${i})`));
      const elapsed = performance.now() - started;
      expect(looks()).toBeGreaterThanOrEqual(1);
      expect(looks()).toBeLessThanOrEqual(Math.ceil(elapsed / WAL_CHECK_INTERVAL_MS) + 1);
      expect(looks()).toBeLessThan(200);
    } finally {
      await store.close();
    }
  });

  it('makes a new segment without writing 16 MB of zeros first', async () => {
    const dir = join(base, 'segments');
    await createStore(dir, join(base, 'home'));
    const store = await openStore(dir);
    try {
      // Rows of 8 kB stored as they are (no compression), as a node taking in a backlog writes them.
      await store.pg.exec('CREATE TABLE filler (x text); ALTER TABLE filler ALTER COLUMN x SET STORAGE EXTERNAL');
      const insert = "INSERT INTO filler SELECT (SELECT string_agg(md5(random()::text || g::text || r::text), '') FROM generate_series(1, 256) g) FROM generate_series(1, 50) r";
      const fresh = await writeUntilNewSegment(dir, async () => void (await store.pg.exec(insert)));
      expect(fresh.size).toBe(16 * MB);
      // Zero-filled, it would hold all 16 MB on disk the moment it appeared.
      expect(fresh.allocated).toBeLessThan(8 * MB);
    } finally {
      await store.close();
    }
  });
});
