// A store keeps its files' sizes instead of asking the kernel at every seek to a file's end (PostgreSQL
// does that for a table and each of its indexes whenever it plans a statement). The sizes it keeps must
// be the files' own through growth, truncation and a reopen, or PostgreSQL would read or write past them.
import fs, { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { max } from 'drizzle-orm';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createStore, openStore, tables, type Store } from '../node-agent/adapters/store/index.js';

const base = mkdtempSync(join(tmpdir(), 'nexus-sizes-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

let made = 0;
async function freshStore(): Promise<Store> {
  const dir = join(base, `store-${++made}`);
  await createStore(dir, join(base, 'home'));
  return openStore(dir);
}

/** What PostgreSQL takes relation `name`'s main file to hold, and what the file on disk holds. */
async function sizes(store: Store, name: string): Promise<{ postgres: number; disk: number }> {
  const { rows } = await store.pg.query<{ size: string; path: string }>(`select pg_relation_size('${name}')::text as size, pg_relation_filepath('${name}') as path`);
  return { postgres: Number(rows[0]!.size), disk: statSync(join(store.dir, rows[0]!.path)).size };
}

describe("a store's file sizes", () => {
  it('are asked of the kernel once per file, not at every statement planned: 300 reads of the op log make a handful of fstat calls', async () => {
    const store = await freshStore();
    try {
      await store.db.select({ top: max(tables.ops.lamport) }).from(tables.ops);
      const fstat = vi.spyOn(fs, 'fstatSync');
      for (let i = 0; i < 300; i++) await store.db.select({ top: max(tables.ops.lamport) }).from(tables.ops);
      // Each plan seeks to the end of the ops table and of its indexes: without the kept sizes, one fstat per seek.
      expect(fstat.mock.calls.length).toBeLessThan(30);
    } finally {
      await store.close();
    }
  });

  it('follow a table as it grows, as VACUUM cuts it short, as TRUNCATE starts it anew, and across a reopen', async () => {
    let store = await freshStore();
    try {
      await store.pg.exec('create table probe (n int, pad text)');
      await store.pg.exec(`insert into probe select g, repeat('x', 200) from generate_series(1, 20000) g`);
      const grown = await sizes(store, 'probe');
      expect(grown.postgres).toBeGreaterThan(4 * 2 ** 20);
      expect(grown.postgres).toBe(grown.disk);

      await store.pg.exec('delete from probe where n > 100');
      await store.pg.exec('vacuum probe');
      const cut = await sizes(store, 'probe');
      expect(cut.postgres).toBeLessThan(grown.postgres / 10);
      expect(cut.postgres).toBe(cut.disk);

      await store.pg.exec(`insert into probe select g, repeat('y', 200) from generate_series(101, 5000) g`);
      const regrown = await sizes(store, 'probe');
      expect(regrown.postgres).toBeGreaterThan(cut.postgres);
      expect(regrown.postgres).toBe(regrown.disk);

      await store.pg.exec('truncate probe');
      await store.pg.exec(`insert into probe values (1, 'z')`);
      const anew = await sizes(store, 'probe');
      expect(anew.postgres).toBe(8192);
      expect(anew.postgres).toBe(anew.disk);

      const dir = store.dir;
      await store.close();
      store = await openStore(dir);
      expect((await store.pg.query<{ n: number }>('select count(*)::int as n from probe')).rows[0]!.n).toBe(1);
      await store.pg.exec(`insert into probe select g, repeat('w', 200) from generate_series(2, 3000) g`);
      const reopened = await sizes(store, 'probe');
      expect(reopened.postgres).toBe(reopened.disk);
      expect((await store.pg.query<{ n: number }>('select count(*)::int as n from probe')).rows[0]!.n).toBe(3000);
    } finally {
      await store.close();
    }
  });
});
