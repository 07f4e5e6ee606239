// Work a transaction defers to its end: it runs after the transaction's own work, inside it, just before
// it commits; a transaction that throws runs none of it. The operation fold uses this to write each
// operation's state once per transaction instead of once per append (a command appends several times,
// and an operation of a few hundred turns is a document of a few hundred kilobytes).
import type { PgliteDatabase } from 'drizzle-orm/pglite';

type Hook = () => Promise<void>;
const hooks = new WeakMap<object, Hook[]>();

/** Makes every transaction of `db` run the hooks registered on it before it commits. */
export function runCommitHooks<D extends PgliteDatabase<any>>(db: D): D {
  const transaction = db.transaction.bind(db);
  db.transaction = ((fn, config) =>
    transaction(async (tx) => {
      const list: Hook[] = [];
      hooks.set(tx, list);
      const result = await fn(tx);
      // A hook may register another; each runs once, in order.
      for (let i = 0; i < list.length; i++) await list[i]!();
      hooks.delete(tx);
      return result;
    }, config)) as D['transaction'];
  return db;
}

/**
 * Registers `fn` to run before `tx` commits. False when `tx` is no transaction that runs hooks (the
 * store itself, or a transaction of a database not made by `runCommitHooks`): the caller does the work now.
 */
export function beforeCommit(tx: object, fn: Hook): boolean {
  const list = hooks.get(tx);
  if (list === undefined) return false;
  list.push(fn);
  return true;
}
