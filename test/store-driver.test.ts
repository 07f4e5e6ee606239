// The client drizzle is given: drizzle's per-query text parsers are installed once on the PGlite
// instance and dropped from each query, with the rows unchanged; any other parser a query brings stays.
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/pglite';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../node-agent/adapters/store/index.js';
import { drizzleClient } from '../node-agent/adapters/store/driver.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

let ws: TestWorkspace;
let store: Store;
beforeAll(async () => {
  ws = await makeWorkspace({ git: false, real: true });
  store = await openStore(join(ws.root, '.nxs', 'store'));
});
afterAll(async () => {
  await store?.close();
  await ws?.cleanup();
});

const DATES = sql`select date '2026-12-03' as d, timestamp '2026-12-03 10:00:00' as ts, timestamptz '2026-12-03 10:00:00+00' as tz, interval '1 day' as i, array[1.5]::numeric[] as n, 7::int as k`;

describe('the store\'s drizzle client', () => {
  it('reads dates, timestamps and intervals as text, as stock drizzle does, through the store and in a transaction', async () => {
    const stock = drizzle(store.pg);
    const expected = (await stock.execute(DATES)).rows;
    expect(expected[0]).toMatchObject({ d: '2026-12-03', ts: '2026-12-03 10:00:00', i: '1 day', k: 7 });
    expect((await store.db.execute(DATES)).rows).toEqual(expected);
    expect(await store.db.transaction(async (tx) => (await tx.execute(DATES)).rows)).toEqual(expected);
  });

  it('drops only the parsers it installed: a query bringing another parser keeps all of them', async () => {
    const client = drizzleClient(store.pg);
    const mine = { 23: (v: string) => `int ${v}`, 1114: (v: string) => `ts ${v}` };
    const r = await client.query<{ k: string; ts: string }>('select 7::int as k, timestamp \'2026-12-03 10:00:00\' as ts', [], { parsers: mine });
    expect(r.rows[0]).toEqual({ k: 'int 7', ts: 'ts 2026-12-03 10:00:00' });
    const inTx = await client.transaction((tx) => tx.query<{ k: string }>('select 7::int as k', [], { parsers: mine }));
    expect(inTx.rows[0]).toEqual({ k: 'int 7' });
  });

  it('rolls a failed transaction back through the wrapped client, and the instance serves the next query', async () => {
    const client = drizzleClient(store.pg);
    await client.exec('create temp table driver_probe (v int)');
    await expect(
      client.transaction(async (tx) => {
        await tx.query('insert into driver_probe values ($1)', [1]);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect((await client.query<{ n: number }>('select count(*)::int as n from driver_probe')).rows[0]).toEqual({ n: 0 });
  });
});

describe('a store opened with a bad NEXUS_WASM_TIERING', () => {
  it('is refused with USAGE before anything opens, and opens once the value is fixed', async () => {
    const other = await makeWorkspace({ git: false, real: true });
    const saved = process.env['NEXUS_WASM_TIERING'];
    try {
      process.env['NEXUS_WASM_TIERING'] = 'sometimes';
      await expect(openStore(join(other.root, '.nxs', 'store'))).rejects.toMatchObject({ code: 'USAGE', message: expect.stringContaining('"sometimes"') });
      process.env['NEXUS_WASM_TIERING'] = 'off';
      const s = await openStore(join(other.root, '.nxs', 'store'));
      await s.close();
    } finally {
      if (saved === undefined) delete process.env['NEXUS_WASM_TIERING'];
      else process.env['NEXUS_WASM_TIERING'] = saved;
      await other.cleanup();
    }
  });
});

describe('a store\'s buffer cache', () => {
  let other: TestWorkspace;
  let dir: string;
  beforeAll(async () => {
    other = await makeWorkspace({ git: false, real: true });
    dir = join(other.root, '.nxs', 'store');
  });
  afterAll(() => other?.cleanup());

  async function cacheOf(value: string | undefined): Promise<string> {
    const saved = process.env['NEXUS_STORE_CACHE'];
    try {
      if (value === undefined) delete process.env['NEXUS_STORE_CACHE'];
      else process.env['NEXUS_STORE_CACHE'] = value;
      const s = await openStore(dir);
      try {
        return (await s.pg.query<{ shared_buffers: string }>('show shared_buffers')).rows[0]!.shared_buffers;
      } finally {
        await s.close();
      }
    } finally {
      if (saved === undefined) delete process.env['NEXUS_STORE_CACHE'];
      else process.env['NEXUS_STORE_CACHE'] = saved;
    }
  }

  it('is 16 MB unless NEXUS_STORE_CACHE sets another size, read at each open', async () => {
    expect(await cacheOf(undefined)).toBe('16MB');
    expect(await cacheOf('2MB')).toBe('2MB');
    expect(await cacheOf('512kB')).toBe('512kB');
  });

  it('sizes shared memory for the one backend PGlite runs, not a server\'s hundred connections', async () => {
    const saved = process.env['NEXUS_STORE_CACHE'];
    process.env['NEXUS_STORE_CACHE'] = '4MB';
    const s = await openStore(dir).finally(() => {
      if (saved === undefined) delete process.env['NEXUS_STORE_CACHE'];
      else process.env['NEXUS_STORE_CACHE'] = saved;
    });
    try {
      const show = async (name: string) => (await s.pg.query<Record<string, string>>(`show ${name}`)).rows[0]![name];
      expect(await show('max_connections')).toBe('4');
      expect(await show('max_wal_senders')).toBe('0');
      expect(await show('max_replication_slots')).toBe('0');
      // 4 MB of cache in 8 MB of shared memory; 11 MB with PostgreSQL's defaults.
      expect(await show('shared_memory_size')).toBe('8MB');
      // The store still works: a write and a read in one transaction.
      expect(await s.db.transaction(async (tx) => (await tx.execute(sql`select 1 as one`)).rows)).toEqual([{ one: 1 }]);
    } finally {
      await s.close();
    }
  });

  it('refuses a bad size with USAGE before the store is locked, and the store opens once it is fixed', async () => {
    const saved = process.env['NEXUS_STORE_CACHE'];
    try {
      process.env['NEXUS_STORE_CACHE'] = 'plenty';
      await expect(openStore(dir)).rejects.toMatchObject({ code: 'USAGE', message: expect.stringContaining('NEXUS_STORE_CACHE must be a size') });
      expect(existsSync(`${dir}.lock`)).toBe(false);
    } finally {
      if (saved === undefined) delete process.env['NEXUS_STORE_CACHE'];
      else process.env['NEXUS_STORE_CACHE'] = saved;
    }
    expect(await cacheOf('1MB')).toBe('1MB');
  });
});
