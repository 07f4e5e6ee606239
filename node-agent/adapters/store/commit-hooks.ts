// Work a transaction defers to its end. `beforeCommit` work runs after the transaction's own work,
// inside it, just before it commits; `afterCommit` work runs once it has committed. A transaction that
// throws runs neither. The operation fold uses both: it writes each operation's state once per
// transaction instead of once per append (a command appends several times, and an operation of a few
// hundred turns is a document of a few hundred kilobytes), and keeps what committed for the next reader.
import type { PgliteDatabase } from 'drizzle-orm/pglite';

type Hook = () => Promise<void> | void;
type Hooks = { before: Hook[]; after: Hook[] };
const hooks = new WeakMap<object, Hooks>();
const stores = new WeakMap<object, object>();
const hooked = new WeakSet<object>();

/** Makes every transaction of `db` run the hooks registered on it. */
export function runCommitHooks<D extends PgliteDatabase<any>>(db: D): D {
  const transaction = db.transaction.bind(db);
  hooked.add(db);
  db.transaction = (async (fn, config) => {
    let registered: Hooks | undefined;
    const result = await transaction(async (tx) => {
      const list: Hooks = { before: [], after: [] };
      registered = list;
      hooks.set(tx, list);
      stores.set(tx, db);
      const value = await fn(tx);
      // A hook may register another; each runs once, in order.
      for (let i = 0; i < list.before.length; i++) await list.before[i]!();
      hooks.delete(tx);
      return value;
    }, config);
    for (const after of registered?.after ?? []) await after();
    return result;
  }) as D['transaction'];
  return db;
}

/**
 * Registers `fn` to run before `tx` commits. False when `tx` is no transaction that runs hooks (the
 * store itself, or a transaction of a database not made by `runCommitHooks`): the caller does the work now.
 */
export function beforeCommit(tx: object, fn: Hook): boolean {
  const list = hooks.get(tx);
  if (list === undefined) return false;
  list.before.push(fn);
  return true;
}

/** Registers `fn` to run once `tx` has committed; false as for `beforeCommit`. */
export function afterCommit(tx: object, fn: Hook): boolean {
  const list = hooks.get(tx);
  if (list === undefined) return false;
  list.after.push(fn);
  return true;
}

/** The database `db` belongs to: itself when it runs commit hooks, the one a transaction of it was begun on, else null. */
export function hookedStore(db: object): object | null {
  if (hooked.has(db)) return db;
  return stores.get(db) ?? null;
}

/** A value kept beside each open store and seen through its transactions (see {@link keptPerStore}). */
export type StoreKept<T> = {
  /** The value `db` sees: its transaction's own when it set one, else the store's; undefined when none is kept. */
  get(db: object): T | undefined;
  /** Sets the value `db` sees. On a transaction it becomes the store's only once that commits. */
  set(db: object, value: T): void;
};

/**
 * State derived from a store that this process keeps in memory instead of reading it back: the process
 * holding a store is its only writer. A transaction sees what it set itself, and what it set reaches the
 * store's value through `settle` when it commits; one that rolls back leaves the store's as it was. Where
 * `db` runs no commit hooks (not made by {@link runCommitHooks}, or a nested transaction), nothing is kept
 * and `get` answers undefined.
 */
export function keptPerStore<T>(settle: (stored: T | undefined, committed: T) => T = (_, committed) => committed): StoreKept<T> {
  const stored = new WeakMap<object, T>();
  const pending = new WeakMap<object, T>();
  return {
    get(db) {
      const store = hookedStore(db);
      if (store === null) return undefined;
      return pending.has(db) ? pending.get(db) : stored.get(store);
    },
    set(db, value) {
      const store = hookedStore(db);
      if (store === null) return;
      if (store === db) {
        stored.set(store, value);
        return;
      }
      const commit = () => void stored.set(store, settle(stored.get(store), pending.get(db) as T));
      if (!pending.has(db) && !afterCommit(db, commit)) return;
      pending.set(db, value);
    },
  };
}
