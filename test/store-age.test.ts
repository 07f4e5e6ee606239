// An old store answers a normal command as fast as a young one only if no query of that command reads the
// finished history. Here a store holds a few thousand finished operations (and the turns this machine ran
// for them) beside a hundred open ones, and every query `status`, `tick` and `threads show` ask is run again
// under EXPLAIN ANALYZE: the rows each scan reads must be bounded by the open work, not by the history.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { KeyRing } from '../node-agent/capabilities/keys/index.js';
import { openStore, type Store } from '../node-agent/adapters/store/index.js';
import { findWorkspace } from '../node-agent/adapters/workspace/index.js';
import { hostFor, realDeps, type Host } from '../node-agent/host/index.js';
import { appendOps, type OpDraft } from '../node-agent/kernel/index.js';
import { newMessageId, newSessionId, newThreadId } from '../protocol/ids.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

const FINISHED = 2_000;
/**
 * As many open operations as a busy workspace has: a query that lists them (`in (...)`) must still read by
 * index. Without statistics the planner takes each listed value for 0.5% of the table, and a list of ten read
 * by index where a list of a hundred read the whole table.
 */
const OPEN = 100;

type Query = { sql: string; params: unknown[] | undefined };
type PlanNode = { 'Node Type': string; 'Relation Name'?: string; 'Actual Rows': number; 'Actual Loops'?: number; 'Rows Removed by Filter'?: number; Plans?: PlanNode[] };

let ws: TestWorkspace;
let store: Store;
let host: Host;
let queries: Query[] | null = null;
let aFinishedThread = '';

/** Notes every query run on `store` (outside and inside transactions) while `queries` is set. */
function capture(s: Store): void {
  const pg = s.pg as unknown as { query: (sql: string, params?: unknown[], o?: unknown) => Promise<unknown>; transaction: (fn: (tx: unknown) => Promise<unknown>) => Promise<unknown> };
  const query = pg.query.bind(pg);
  pg.query = (sql, params, o) => (queries?.push({ sql, params }), query(sql, params, o));
  const transaction = pg.transaction.bind(pg);
  pg.transaction = (fn) =>
    transaction((tx) => {
      const t = tx as typeof pg;
      const q = t.query.bind(t);
      t.query = (sql, params, o) => (queries?.push({ sql, params }), q(sql, params, o));
      return fn(t);
    });
}

/** The queries `run` asks, each with the rows its scans read (rows returned, plus those a filter dropped). */
async function rowsRead(run: () => Promise<unknown>): Promise<Array<{ sql: string; read: number; scans: string[] }>> {
  queries = [];
  await run();
  const asked = queries;
  queries = null;
  const out: Array<{ sql: string; read: number; scans: string[] }> = [];
  for (const q of asked) {
    if (!/^\s*(select|with)\b/i.test(q.sql)) continue;
    const r = await store.pg.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`explain (analyze, format json) ${q.sql}`, q.params);
    let read = 0;
    const scans: string[] = [];
    const walk = (n: PlanNode) => {
      if (n['Node Type'].includes('Scan') && n['Relation Name'] !== undefined) {
        const rows = (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 1);
        read += rows;
        scans.push(`${n['Node Type']} on ${n['Relation Name']}: ${rows}`);
      }
      for (const c of n.Plans ?? []) walk(c);
    };
    walk(r.rows[0]!['QUERY PLAN'][0]!.Plan);
    out.push({ sql: q.sql.replace(/\s+/g, ' ').slice(0, 200), read, scans });
  }
  return out;
}

beforeAll(async () => {
  ws = await makeWorkspace({ git: false, real: true });
  store = await openStore(join(ws.root, '.nxs', 'store'));
  const workspace = findWorkspace(ws.root, { NEXUS_HOME: process.env['NEXUS_HOME'] });
  const writer = { workspace: workspace.id, origin: 'here', now: ws.clock.now, signer: new KeyRing(workspace.paths.keys, workspace.id).signer, projections: PROJECTIONS };
  const alice = { handle: 'alice', session: null };
  const handle = `${workspace.short}/dev`;
  // Finished operations as a persona's answered commissions, with the turns this machine ran for them
  // (device-local rows that stay once each turn has ended), written a year ago: they are history.
  const YEAR = 365 * 86_400_000;
  ws.clock.advance(-YEAR);
  for (let done = 0; done < FINISHED; ) {
    const batch = Math.min(250, FINISHED - done);
    const drafts: OpDraft[] = [];
    const procs: string[] = [];
    for (let i = 0; i < batch; i++) {
      const thread = newThreadId();
      const session = newSessionId();
      const at = { operation: thread, thread };
      const dev = { handle, session };
      drafts.push(
        { ...at, session: null, kind: 'thread.opened', body: { parent: null, subject: `change ${done + i}`, opener: alice, target: { kind: 'persona', role: 'dev', handle } } },
        { ...at, session, kind: 'session.created', body: { role: 'dev', handle, depth: 1 } },
        { ...at, session: null, kind: 'message.posted', body: { message: newMessageId(), author: alice, text: 'please', effect: 'commission', substituted: false, refs: { working_copy: null } } },
        { ...at, session, kind: 'session.turn_started', body: { role: 'dev', turn: 1, reason: 'commissioned', declaration_hash: 'h' } },
        { ...at, session, kind: 'message.posted', body: { message: newMessageId(), author: dev, text: 'done', effect: 'answer', substituted: false, refs: { working_copy: null } } },
        { ...at, session, kind: 'session.turn_ended', body: { turn: 1, outcome: 'replied', exit_code: 0, signal: null, timed_out: false } },
      );
      procs.push(`('${session}', 1, 1, 1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:01:00.000Z', 0)`);
      if (done + i === 0) aFinishedThread = thread;
    }
    await store.db.transaction((tx) => appendOps(tx, writer, drafts));
    await store.pg.exec(`insert into session_procs (session, turn, sidecar_pid, runtime_pid, started_at, ended_at, exit_code) values ${procs.join(',')}`);
    done += batch;
  }
  ws.clock.advance(YEAR);
  const open: OpDraft[] = [];
  for (let i = 0; i < OPEN; i++) {
    const thread = newThreadId();
    open.push(
      { operation: thread, thread, session: null, kind: 'thread.opened', body: { parent: null, subject: `open ${i}`, opener: alice, target: { kind: 'person', handle: 'bob' } } },
      { operation: thread, thread, session: null, kind: 'message.posted', body: { message: newMessageId(), author: alice, text: `question ${i}`, effect: 'commission', substituted: false, refs: { working_copy: null } } },
    );
  }
  await store.db.transaction((tx) => appendOps(tx, writer, open));
  host = hostFor(realDeps(workspace, store.db, { now: ws.clock.now }));
  capture(store);
}, 300_000);
afterAll(async () => {
  await store?.close();
  await ws?.cleanup();
});

describe('an old store: normal commands read the open work, not the history', () => {
  it('holds the history the checks below are about', async () => {
    const r = await store.pg.query<{ finished: number; procs: number }>('select (select count(*) from operations where finished)::int as finished, (select count(*) from session_procs)::int as procs');
    expect(r.rows[0]).toEqual({ finished: FINISHED, procs: FINISHED });
  });

  it('status lists the open operations, and none of its queries reads more rows than the open work holds', async () => {
    const report = (await host.run('status', { all: false })) as { operations: unknown[] };
    expect(report.operations).toHaveLength(OPEN);
    const reads = await rowsRead(() => host.run('status', { all: false }));
    expect(reads.length).toBeGreaterThan(0);
    // A scan of the finished operations, their parts, their ops or the turns run for them reads thousands.
    for (const q of reads) expect(q.read, `${q.sql}\n${q.scans.join('\n')}`).toBeLessThanOrEqual(4 * OPEN);
  });

  it('the tick reads only the open work too', async () => {
    const reads = await rowsRead(() => host.run('tick', {}));
    for (const q of reads) expect(q.read, `${q.sql}\n${q.scans.join('\n')}`).toBeLessThanOrEqual(4 * OPEN);
  });

  it('threads show of a finished thread reads that thread, not the rest', async () => {
    const view = (await host.run('threads.show', { thread: aFinishedThread })) as { thread: { state: string }; messages: unknown[] };
    expect(view.thread.state).toBe('answered');
    expect(view.messages).toHaveLength(2);
    const reads = await rowsRead(() => host.run('threads.show', { thread: aFinishedThread }));
    for (const q of reads) expect(q.read, `${q.sql}\n${q.scans.join('\n')}`).toBeLessThanOrEqual(20);
  });
});
