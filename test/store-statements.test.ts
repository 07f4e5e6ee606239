// A store runs each statement text with parameters as a named statement: parsed once, planned once PostgreSQL
// finds its generic plan no dearer, then only bound and run. What it returns and how it fails must be what
// PGlite's own unnamed path gives.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { createStore, openStore, tables, type Store } from '../node-agent/adapters/store/index.js';

const base = mkdtempSync(join(tmpdir(), 'nexus-statements-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

let made = 0;
async function withStore(fn: (store: Store) => Promise<void>): Promise<void> {
  const dir = join(base, `store-${++made}`);
  await createStore(dir, join(base, 'home'));
  const store = await openStore(dir);
  try {
    await fn(store);
  } finally {
    await store.close();
  }
}

type Prepared = { statement: string; generic_plans: number; custom_plans: number };

async function prepared(store: Store, like: string): Promise<Prepared[]> {
  // A leading comment keeps this query itself unnamed (only texts starting with a row verb are named).
  const { rows } = await store.pg.query<Prepared>(`/* look */ select statement, generic_plans::int, custom_plans::int from pg_prepared_statements where statement like '${like}'`);
  return rows;
}

describe("a store's statements", () => {
  it('are parsed once per text: 200 runs with other parameters are one named statement, run on a plan made once', async () => {
    await withStore(async (store) => {
      for (let i = 0; i < 200; i++) await store.db.select({ id: tables.ops.id }).from(tables.ops).where(eq(tables.ops.id, `op-${i}`));
      const held = await prepared(store, '%from "ops" where "ops"."id" = $1%');
      expect(held).toHaveLength(1);
      // PostgreSQL plans the first five runs for their parameters, then keeps one generic plan.
      expect(held[0]!.generic_plans + held[0]!.custom_plans).toBe(200);
      expect(held[0]!.generic_plans).toBeGreaterThan(190);
    });
  });

  it('return what the unnamed path returns: nulls, JSON, big integers, booleans, arrays, and rows as arrays for drizzle', async () => {
    await withStore(async (store) => {
      await store.pg.exec(`create table kinds (id int primary key, j json, jb jsonb, n bigint, b boolean, t text[], s text)`);
      await store.pg.query(`insert into kinds values ($1, $2, $3, $4, $5, $6, $7)`, [1, JSON.stringify({ a: [1, 'x'] }), JSON.stringify({ k: null }), 9007199254740991, true, ['a', 'b,c'], null]);
      await store.pg.query(`insert into kinds values ($1, $2, $3, $4, $5, $6, $7)`, [2, null, null, null, null, null, "it's"]);
      const text = `select * from kinds where id >= $1 order by id`;
      const named = await store.pg.query(text, [1]);
      const plain = await store.pg.query(`/* plain */ ${text}`, [1]);
      expect(named.rows).toEqual(plain.rows);
      expect(named.fields).toEqual(plain.fields);
      expect(named.rows[0]).toMatchObject({ j: { a: [1, 'x'] }, n: 9007199254740991, b: true, t: ['a', 'b,c'], s: null });
      const asArrays = await store.pg.query(text, [2], { rowMode: 'array' });
      expect(asArrays.rows).toEqual([[2, null, null, null, null, null, "it's"]]);
      const update = await store.pg.query(`update kinds set s = $1 where id > $2`, ['z', 0]);
      expect(update.affectedRows).toBe(2);
    });
  });

  it("hand PostgreSQL's notices to the query's onNotice, as the unnamed path does", async () => {
    await withStore(async (store) => {
      await store.pg.exec(`create function shout(t text) returns int language plpgsql as $$ begin raise notice 'heard %', t; return 1; end $$`);
      const heard: string[] = [];
      for (let i = 0; i < 3; i++) await store.pg.query(`select shout($1) as n`, [`call ${i}`], { onNotice: (n) => heard.push(n.message ?? '') });
      expect(heard).toEqual(['heard call 0', 'heard call 1', 'heard call 2']);
      expect(await prepared(store, 'select shout($1) as n')).toHaveLength(1);
    });
  });

  it('fail as the unnamed path fails: the code and the statement on the error, and the next statement runs', async () => {
    await withStore(async (store) => {
      await store.pg.exec(`create table once (id text primary key)`);
      const insert = `insert into once (id) values ($1)`;
      await store.pg.query(insert, ['a']);
      const err = (await store.pg.query(insert, ['a']).catch((e: unknown) => e)) as { code?: string; query?: string; params?: unknown[] };
      expect(err.code).toBe('23505');
      expect(err.query).toBe(insert);
      expect(err.params).toEqual(['a']);
      await store.pg.query(insert, ['b']);
      expect((await store.pg.query(`select count(*)::int as n from once where id > $1`, [''])).rows).toEqual([{ n: 2 }]);
    });
  });

  it('made inside a transaction that rolls back, still run after it; a failure inside one rolls it back whole', async () => {
    await withStore(async (store) => {
      await store.pg.exec(`create table moves (id text primary key)`);
      const insert = `insert into moves (id) values ($1)`;
      await expect(
        store.pg.transaction(async (tx) => {
          await tx.query(insert, ['x']);
          await tx.query(insert, ['x']);
        }),
      ).rejects.toMatchObject({ code: '23505' });
      expect((await store.pg.query(`select count(*)::int as n from moves where id <> $1`, [''])).rows).toEqual([{ n: 0 }]);
      await store.pg.query(insert, ['y']);
      expect(await prepared(store, insert)).toHaveLength(1);
    });
  });

  it('are made again when the table they read changed shape, with its new column', async () => {
    await withStore(async (store) => {
      await store.pg.exec(`create table shape (id int)`);
      const read = `select * from shape where id >= $1`;
      await store.pg.query(`insert into shape values ($1)`, [1]);
      expect((await store.pg.query(read, [0])).rows).toEqual([{ id: 1 }]);
      await store.pg.exec(`alter table shape add column note text default 'new'`);
      expect((await store.pg.query(read, [0])).rows).toEqual([{ id: 1, note: 'new' }]);
    });
  });

  it('are kept to the 256 most recently used texts: older ones are closed in PostgreSQL too', async () => {
    await withStore(async (store) => {
      for (let i = 0; i < 300; i++) await store.pg.query(`select $1::int + ${i} as v`, [1]);
      const held = await prepared(store, 'select $1::int + % as v');
      expect(held.length).toBeLessThanOrEqual(257);
      expect(held.length).toBeGreaterThan(200);
      expect(held.some((h) => h.statement === 'select $1::int + 299 as v')).toBe(true);
      expect(held.some((h) => h.statement === 'select $1::int + 0 as v')).toBe(false);
      // A text closed earlier is made again when it comes back.
      expect((await store.pg.query(`select $1::int + 0 as v`, [5])).rows).toEqual([{ v: 5 }]);
    });
  });
});
