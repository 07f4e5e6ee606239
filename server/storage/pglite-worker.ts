// The database thread of PgliteThread (pglite-thread.ts): one PGlite database, its statements run one
// top-level job at a time in the order they came (a transaction is one job, from its BEGIN to its end).
import { createRequire } from 'node:module';
import { BroadcastChannel, parentPort, workerData } from 'node:worker_threads';
import type { PGlite, Transaction } from '@electric-sql/pglite';
import { cacheFileSizes } from '../../infra/pglite-sizes.js';
import { useNamedStatements, type PgliteProtocol } from '../../infra/pglite-statements.js';
import { firstTry, type FirstTry, type Sql as RowsSql } from './db.js';

/** What the relay's thread sends: `id` names the answer; `tx` places a statement in an open transaction. */
export type ThreadRequest = { id: number } & (
  | { op: 'query'; text: string; params?: unknown[]; tx?: number }
  | { op: 'exec'; script: string; tx?: number }
  | { op: 'commit' | 'rollback'; tx: number }
  | { op: 'begin' }
  | { op: 'execOr'; first: FirstTry }
  | { op: 'fallback'; of: number; script: string | null }
  | { op: 'open'; dataDir: string; startParams: string[] }
  | { op: 'close' }
);

/** Its answer: the value, or the error's message and PostgreSQL's SQLSTATE when it had one. */
export type ThreadReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: { message: string; code?: string } };

/** What the thread is started with: PGlite's CommonJS entry (an absolute path), the garbage channel's name, and the compiled module. */
export type ThreadData = { entry: string; collectChannel: string; wasmModule: WebAssembly.Module };

type Sql = Pick<PGlite, 'query' | 'exec'>;
type Statement = { op: 'query'; text: string; params?: unknown[] } | { op: 'exec'; script: string };
type OpenTx = { steps: Promise<unknown>; end: number | null; rolledBack: boolean; tx?: Transaction; commit?: () => void; rollback?: (err: Error) => void };

/**
 * WAL past the last checkpoint that has the thread checkpoint. PGlite runs PostgreSQL as a single user with no
 * checkpointer, and a single-user backend never checkpoints on its own however much it writes (max_wal_size
 * counts only under a postmaster): a relay checkpointed at close and never before, so pg_wal grew with
 * every op it took in, and a relay killed after a day of appends replayed all of them at its next start.
 */
export const CHECKPOINT_WAL_BYTES = 64 * 2 ** 20;
/**
 * How often the WAL is looked at: after this many bytes of statement text and text parameters (op texts,
 * almost all of it, written in a script or bound to a prepared append) or this many statements, whichever
 * comes first, rather than after every append. An append writes a few
 * times its text in WAL (the row, its indexes, whole pages after a checkpoint), so the WAL overshoots the
 * bound by some tens of MB at most.
 */
export const WAL_CHECK_TEXT_BYTES = 4 * 2 ** 20;
export const WAL_CHECK_STATEMENTS = 1_000;

/** A WAL position (`16/B374D848`) as a number of bytes: exact up to 2^53. */
function walBytes(lsn: string): number {
  const [hi, lo] = lsn.split('/');
  return parseInt(hi!, 16) * 2 ** 32 + parseInt(lo!, 16);
}

const port = parentPort;
if (port !== null) serve(port, workerData as ThreadData);

function serve(port: NonNullable<typeof parentPort>, data: ThreadData): void {
  // Where the process exposes `gc` (node --expose-gc), a message on the channel runs a full collection here.
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc === 'function') {
    const collect = new BroadcastChannel(data.collectChannel);
    collect.onmessage = () => gc();
    collect.unref();
  }
  let pg: PGlite | null = null;
  let chain: Promise<unknown> = Promise.resolve();
  const txs = new Map<number, OpenTx>();
  const fallbacks = new Map<number, (m: Extract<ThreadRequest, { op: 'fallback' }>) => void>();
  let nextTx = 1;
  const reply = (r: ThreadReply) => port.postMessage(r);
  const ok = (id: number, value: unknown) => reply({ id, ok: true, value });
  const fail = (id: number, err: unknown) => {
    const e = err as { message?: unknown; code?: unknown } | null;
    const code = e && typeof e.code === 'string' ? e.code : undefined;
    reply({ id, ok: false, error: { message: String((e && e.message) || err), ...(code === undefined ? {} : { code }) } });
  };
  const db = (): PGlite => {
    if (pg === null) throw new Error('the database is not open');
    return pg;
  };
  // Statements on `on` answering with their rows, as the relay's SQL port (db.ts) has them: made once per
  // database or transaction, not per statement (this thread's garbage lands in the acks' tail).
  const adapted = new WeakMap<Sql, RowsSql>();
  const rowsOf = (on: Sql): RowsSql => {
    let rows = adapted.get(on);
    if (rows === undefined) {
      rows = {
        query: async <T>(text: string, params?: unknown[]) => (await on.query<T>(text, params)).rows,
        exec: async (script: string) => (await on.exec(script)).map((r) => r.rows),
      };
      adapted.set(on, rows);
    }
    return rows;
  };
  const statement = (on: Sql, m: Statement): Promise<unknown> => (m.op === 'query' ? rowsOf(on).query(m.text, m.params) : rowsOf(on).exec(m.script));
  // Top-level work runs one job after another.
  const run = <T>(fn: () => Promise<T>): Promise<T> => {
    const p = chain.then(fn);
    chain = p.catch(() => undefined);
    return p;
  };
  const job = (id: number, fn: () => Promise<unknown>) => void run(fn).then((v) => ok(id, v), (e: unknown) => fail(id, e));

  // Statement text and statements since the WAL was last looked at. The look is a job of its own, queued
  // behind the statement that crossed the mark: after it commits, or after the transaction it belongs to.
  let textSince = 0;
  let statementsSince = 0;
  const wrote = (text: string, params: readonly unknown[] = []) => {
    textSince += text.length;
    for (const p of params) if (typeof p === 'string') textSince += p.length;
    statementsSince++;
    if (textSince < WAL_CHECK_TEXT_BYTES && statementsSince < WAL_CHECK_STATEMENTS) return;
    textSince = 0;
    statementsSince = 0;
    void run(async () => {
      if (pg === null) return;
      try {
        const [row] = (await pg.query<{ now: string; redo: string }>('SELECT pg_current_wal_insert_lsn()::text AS now, redo_lsn::text AS redo FROM pg_control_checkpoint()')).rows;
        if (row && walBytes(row.now) - walBytes(row.redo) >= CHECKPOINT_WAL_BYTES) await pg.exec('CHECKPOINT');
      } catch {
        // Nothing is lost: the WAL is looked at again after the next mark.
      }
    });
  };

  port.on('message', (m: ThreadRequest) => {
    if (m.op === 'query') wrote(m.text, m.params);
    else if (m.op === 'exec') wrote(m.script);
    else if (m.op === 'execOr') {
      if (typeof m.first === 'string') wrote(m.first);
      else wrote(m.first.text, m.first.params);
    }
    else if (m.op === 'fallback' && m.script !== null) wrote(m.script);
    if (m.op === 'query' || m.op === 'exec' || m.op === 'commit' || m.op === 'rollback') {
      if (m.tx === undefined) {
        if (m.op === 'query' || m.op === 'exec') job(m.id, () => statement(db(), m));
        return;
      }
      const t = txs.get(m.tx);
      if (!t) return fail(m.id, new Error('no such transaction'));
      // A transaction's statements run in the order sent; its end waits for them.
      t.steps = t.steps.then(() => {
        if (m.op === 'query' || m.op === 'exec') return statement(t.tx!, m).then((v) => ok(m.id, v), (e: unknown) => fail(m.id, e));
        t.end = m.id;
        t.rolledBack = m.op === 'rollback';
        return t.rolledBack ? t.rollback!(new Error('rolled back')) : t.commit!();
      });
    } else if (m.op === 'begin') {
      // Answered with the transaction's number once it is open; its end is answered to the commit or rollback.
      void run(
        () =>
          new Promise<void>((released) => {
            const n = nextTx++;
            const t: OpenTx = { steps: Promise.resolve(), end: null, rolledBack: false };
            txs.set(n, t);
            db()
              .transaction(
                (tx) =>
                  new Promise<void>((commit, rollback) => {
                    Object.assign(t, { tx, commit, rollback });
                    ok(m.id, n);
                  }),
              )
              .then(
                () => ok(t.end!, null),
                (e: unknown) => (t.end === null ? fail(m.id, e) : t.rolledBack ? ok(t.end, null) : fail(t.end, e)),
              )
              .finally(() => {
                txs.delete(n);
                released();
              });
          }),
      );
    } else if (m.op === 'execOr') {
      // On a unique violation the job asks for its fallback and holds the queue until it comes, so the
      // fallback runs in this job's place: no other work comes between the two.
      void run(async () => {
        try {
          return ok(m.id, { fellBack: false, results: await firstTry(rowsOf(db()), m.first) });
        } catch (e) {
          if (!e || (e as { code?: unknown }).code !== '23505') return fail(m.id, e);
        }
        const next = new Promise<Extract<ThreadRequest, { op: 'fallback' }>>((resolve) => fallbacks.set(m.id, resolve));
        ok(m.id, { fellBack: true, results: null });
        const f = await next;
        if (typeof f.script !== 'string') return fail(f.id, new Error('no fallback was given'));
        return statement(db(), { op: 'exec', script: f.script }).then((v) => ok(f.id, v), (e: unknown) => fail(f.id, e));
      });
    } else if (m.op === 'fallback') {
      const resolve = fallbacks.get(m.of);
      fallbacks.delete(m.of);
      if (resolve) resolve(m);
      else fail(m.id, new Error('nothing waits for a fallback'));
    } else if (m.op === 'open') {
      job(m.id, async () => {
        // PGlite's CommonJS build, by the absolute path the relay's thread resolved.
        const lib = createRequire(import.meta.url)(data.entry) as PgliteProtocol & { PGlite: typeof PGlite };
        pg = await lib.PGlite.create({ dataDir: m.dataDir, startParams: [...lib.PGlite.defaultStartParams, ...m.startParams], pgliteWasmModule: data.wasmModule });
        // The relay's lock makes this thread the folder's only writer: relation sizes are kept here (infra/pglite-sizes.ts).
        cacheFileSizes(pg);
        // A statement with parameters is parsed and planned once (infra/pglite-statements.ts): the single-op append above all.
        useNamedStatements(pg, lib);
        return null;
      });
    } else {
      job(m.id, async () => {
        if (pg) await pg.close();
        pg = null;
        return null;
      });
    }
  });
}
