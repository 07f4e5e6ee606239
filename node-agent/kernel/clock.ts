// The highest Lamport time in an open store's log, read once and then kept by the writes, instead of a
// `max(lamport)` query before every append (one query in nine of a busy store's). The process holding a
// store is its only writer, and every op reaches the log through `appendOps` or `ingestOps`, which raise
// the kept time. A transaction keeps its own until it commits: one that rolls back leaves the store's as
// it was. Where no commit hooks run (a database not made by `runCommitHooks`, a nested transaction),
// nothing is kept and the log is read each time.
import { max } from 'drizzle-orm';
import { afterCommit, hookedStore, tables } from '../adapters/store/index.js';
import type { Exec } from './db.js';

/** Per store: the highest Lamport time committed to its log, once known. */
const committed = new WeakMap<object, number>();
/** Per open transaction: the same with its own writes, until it commits. */
const pending = new WeakMap<object, number>();

function known(db: Exec, store: object): number | undefined {
  return pending.get(db) ?? committed.get(store);
}

/** The highest Lamport time in the log `db` writes to (0 when it is empty). */
export async function logClock(db: Exec): Promise<number> {
  const store = hookedStore(db);
  const kept = store === null ? undefined : known(db, store);
  if (kept !== undefined) return kept;
  const [row] = await db.select({ top: max(tables.ops.lamport) }).from(tables.ops);
  const top = Number(row?.top ?? 0);
  if (store !== null) raise(db, store, top);
  return top;
}

/**
 * Tells the kept clock that ops up to `lamport` were written through `db`. Nothing is kept yet for that
 * store: nothing to raise (the next append reads the log).
 */
export function raiseLogClock(db: Exec, lamport: number): void {
  const store = hookedStore(db);
  if (store === null || known(db, store) === undefined) return;
  raise(db, store, lamport);
}

function raise(db: Exec, store: object, lamport: number): void {
  const top = Math.max(known(db, store) ?? 0, lamport);
  if (db === store) {
    committed.set(store, top);
    return;
  }
  const first = !pending.has(db);
  pending.set(db, top);
  if (first) {
    const registered = afterCommit(db, () => {
      const value = pending.get(db);
      if (value !== undefined) committed.set(store, Math.max(committed.get(store) ?? 0, value));
    });
    // No hooks on this transaction: keep nothing from it.
    if (!registered) pending.delete(db);
  }
}
