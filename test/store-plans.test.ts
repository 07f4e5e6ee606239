// Queries asked on every status read must stay cheap as the log grows. PGlite never analyzes its tables,
// so the planner has no statistics and may read every op where an index would do: these cases check the
// answers on a store with many ops, and the plans PostgreSQL picks for them there.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../node-agent/adapters/store/index.js';
import { and, eq, isNull, sql } from 'drizzle-orm';
import { tables } from '../node-agent/adapters/store/index.js';
import { INERT_COUNTS_SQL, inertCounts } from '../node-agent/capabilities/threads/operations.js';
import { opsOfThreads } from '../node-agent/kernel/index.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

let ws: TestWorkspace;
let store: Store;
beforeAll(async () => {
  ws = await makeWorkspace({ git: false, real: true });
  store = await openStore(join(ws.root, '.nxs', 'store'));
  // 20,000 ops, as rows: what the plans depend on is the table's size, not the ops' signatures.
  await store.pg.exec(
    `insert into ops (id, workspace, origin, lamport, ts, kind, operation, thread, session, body)
     select 'op-' || i, 'ws', 'elsewhere', i, '2026-12-04T00:00:00.000Z', 'message.posted', 'th-' || (i / 5), 'th-' || (i / 5), null, '{}'::jsonb
     from generate_series(1, 20000) as i`,
  );
});
afterAll(async () => {
  await store?.close();
  await ws?.cleanup();
});

async function plan(q: string): Promise<string> {
  const r = await store.pg.query<{ 'QUERY PLAN': string }>(`explain ${q}`);
  return r.rows.map((x) => x['QUERY PLAN']).join('\n');
}

describe('inert counts on a large log', () => {
  it('are empty when no op is inert, and read the partial index instead of the table', async () => {
    expect(await inertCounts(store.db)).toEqual({});
    const p = await plan(INERT_COUNTS_SQL);
    expect(p).toContain('ops_inert_idx');
    expect(p).not.toMatch(/Seq Scan on ops/);
  });

  it('count every reason, the same as grouping the whole table would', async () => {
    await store.pg.exec(`update ops set inert = case when lamport % 3 = 0 then 'not_owner' when lamport % 3 = 1 then 'no_thread' else 'unaddressed' end where lamport % 7 = 0`);
    const grouped = await store.pg.query<{ inert: string; n: number }>('select inert, count(*)::int as n from ops where inert is not null group by inert');
    const expected = Object.fromEntries(grouped.rows.map((r) => [r.inert, r.n]));
    expect(Object.keys(expected)).toHaveLength(3);
    expect(await inertCounts(store.db)).toEqual(expected);
    expect(await store.db.transaction((tx) => inertCounts(tx))).toEqual(expected);
    expect(await plan(INERT_COUNTS_SQL)).not.toMatch(/Seq Scan on ops/);
  });
});

describe('the ops of many threads on a large log', () => {
  it('are the ones a list would select, read thread by thread through the index even for a hundred threads', async () => {
    const threads = Array.from({ length: 100 }, (_, i) => `th-${i * 37}`);
    const filter = and(eq(tables.ops.kind, 'message.posted'), isNull(tables.ops.inert))!;
    const listed = await store.db.select({ id: tables.ops.id }).from(tables.ops).where(and(sql`${tables.ops.thread} = any(${sql.param(threads)}::text[])`, filter));
    expect(listed.length).toBeGreaterThan(400);
    // The query it asks, caught on its way to PGlite.
    const pg = store.pg as unknown as { query: (q: string, params?: unknown[], o?: unknown) => Promise<unknown> };
    const query = pg.query;
    const asked: Array<{ q: string; params: unknown[] | undefined }> = [];
    pg.query = (q, params, o) => (asked.push({ q, params }), query.call(store.pg, q, params, o));
    let got;
    try {
      got = await opsOfThreads(store.db, threads, filter);
    } finally {
      pg.query = query;
    }
    expect(got.map((o) => o.id).sort()).toEqual(listed.map((r) => r.id).sort());
    expect(got.every((o) => threads.includes(o.thread!) && o.kind === 'message.posted')).toBe(true);
    expect(asked).toHaveLength(1);
    // A list of a hundred threads reads, to a planner without statistics, as half the table: it scans it all.
    const listPlan = (await store.pg.query<{ 'QUERY PLAN': string }>(`explain select * from ops where thread = any($1::text[]) and kind = 'message.posted'`, [threads])).rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(listPlan).toMatch(/Seq Scan on ops/);
    const r = await store.pg.query<{ 'QUERY PLAN': string }>(`explain ${asked[0]!.q}`, asked[0]!.params);
    const p = r.rows.map((x) => x['QUERY PLAN']).join('\n');
    expect(p).toContain('ops_thread_idx');
    expect(p).not.toMatch(/Seq Scan on ops/);
  });
});
