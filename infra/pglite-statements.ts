// Named statements for a PGlite database (a node's store, the relay's database thread): each distinct SQL
// text is parsed once, then only bound and run.
//
// PGlite's `query` sends every statement as an unnamed one: PostgreSQL parses, analyses and plans it anew each
// time, in WebAssembly, over six round trips into the database. Most statements are a few dozen texts run
// thousands of times with other parameters, so here each text becomes a named statement the first time it
// runs, and afterwards one call binds and executes it. PostgreSQL keeps its plan (a generic one, once five
// runs have shown it costs no more than planning each time). Measured on a store, a primary-key select went
// from 350 to 110 µs of CPU, a max() over an index from 450 to 120 µs; the relay's single-op append from
// 340-400 to 140-180 µs of wall time.
//
// PGlite's protocol classes come from the caller, from the same build as the database: the relay's thread
// loads PGlite's CommonJS build by path, and an error of one build is no instance of the other's class.
//
// Only reads and writes of rows that take parameters are named (select, insert, update, delete, with): a
// statement that changes the schema or the session runs as before, and a plan made before such a change is
// re-planned by PostgreSQL.
import type { messages as Messages, parse as Parse, protocol as Protocol, PGlite, QueryOptions, Results, Transaction } from '@electric-sql/pglite';

/** The parts of PGlite's module this needs: its wire messages, its result parser and its serializer. */
export type PgliteProtocol = { messages: typeof Messages; parse: typeof Parse; protocol: typeof Protocol };

/** Named statements kept per database; the least recently used is closed past this many. */
const MAX_STATEMENTS = 256;
const NAMED = /^\s*(select|insert|update|delete|with)\b/i;
/** SQLSTATEs after which a named statement is made again: its result's shape changed, or it is gone. */
const STALE = new Set(['0A000', '26000']);

type Statement = { name: string; types: number[]; rows: Messages.RowDescriptionMessage | null };

/** PGlite's internals this relies on (public in its class, undocumented): the locks its own `query` takes. */
type Internals = {
  _checkReady(): Promise<void>;
  _runExclusiveQuery<T>(fn: () => Promise<T>): Promise<T>;
  _runExclusiveTransaction<T>(fn: () => Promise<T>): Promise<T>;
};

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Says on the error which statement failed, as PGlite's own `query` does. */
function decorate(messages: typeof Messages, err: unknown, text: string, params: unknown[] | undefined, options: QueryOptions | undefined): unknown {
  if (err instanceof messages.DatabaseError) Object.assign(err, { query: text, params, queryOptions: options });
  return err;
}

const installed = new WeakSet<PGlite>();

/**
 * Makes `pg.query`, and `query` on the transactions `pg.transaction` hands out, run each row statement as a
 * named statement. Results, errors and locking are PGlite's own; a query with a blob or parameter types of
 * its own goes PGlite's way.
 */
export function useNamedStatements(pg: PGlite, lib: PgliteProtocol): void {
  if (installed.has(pg)) return;
  installed.add(pg);
  const { messages, parse } = lib;
  const { serialize } = lib.protocol;
  const inner = pg as unknown as Internals;
  const plainQuery = pg.query.bind(pg);
  const plainTransaction = pg.transaction.bind(pg);
  const kept = new Map<string, Statement>();
  let next = 0;
  let closing: string[] = [];

  const exchange = async (parts: Uint8Array[], options?: QueryOptions) =>
    (await pg.execProtocol(concat(parts), { syncToFs: false, ...(options?.onNotice === undefined ? {} : { onNotice: options.onNotice }) })).messages;

  const prepare = async (text: string): Promise<Statement> => {
    const name = `nx${next++}`;
    // Statements let go of are closed with the next one made, in the same call.
    const close = closing.map((n) => serialize.close({ type: 'S', name: n }));
    closing = [];
    const answer = await exchange([...close, serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync()]);
    let types: number[] = [];
    let rows: Messages.RowDescriptionMessage | null = null;
    for (const m of answer) {
      if (m instanceof messages.ParameterDescriptionMessage) types = m.dataTypeIDs;
      else if (m instanceof messages.RowDescriptionMessage) rows = m;
    }
    const statement = { name, types, rows };
    kept.set(text, statement);
    if (kept.size > MAX_STATEMENTS) {
      const [oldest, held] = kept.entries().next().value as [string, Statement];
      kept.delete(oldest);
      closing.push(held.name);
    }
    return statement;
  };

  const forget = (text: string) => {
    const held = kept.get(text);
    if (held === undefined) return;
    kept.delete(text);
    closing.push(held.name);
  };

  const execute = async <T>(text: string, params: unknown[], options: QueryOptions | undefined): Promise<Results<T>> => {
    let statement = kept.get(text);
    if (statement === undefined) statement = await prepare(text);
    else {
      kept.delete(text); // to the recent end
      kept.set(text, statement);
    }
    const types = statement.types;
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null;
      const serializer = options?.serializers?.[types[i]!] ?? pg.serializers[types[i]!];
      return serializer ? serializer(value) : String(value);
    });
    const answer = await exchange([serialize.bind({ statement: statement.name, values }), serialize.execute({}), serialize.sync()], options);
    const rows = statement.rows;
    return parse.parseResults(rows === null ? answer : [rows, ...answer], pg.parsers, options)[0] as Results<T>;
  };

  /**
   * Runs `text` named, inside the query lock. A statement whose table changed shape, or that is gone, is made
   * again: at once outside a transaction, at its next run inside one (whose failure stands).
   */
  const run = <T>(text: string, params: unknown[], options: QueryOptions | undefined, inTransaction: boolean): Promise<Results<T>> =>
    inner._runExclusiveQuery(async () => {
      try {
        return await execute<T>(text, params, options).catch((err: unknown) => {
          if (!(err instanceof messages.DatabaseError) || !STALE.has(err.code ?? '')) throw err;
          forget(text);
          if (inTransaction) throw err;
          return execute<T>(text, params, options);
        });
      } catch (err) {
        throw decorate(messages, err, text, params, options);
      } finally {
        if (!inTransaction) await pg.syncToFs();
      }
    });

  // A statement without parameters is most often one of a kind (values written into its text): it would only
  // take a name's place and an extra round trip.
  const named = (text: string, params: unknown[] | undefined, options: QueryOptions | undefined) =>
    params !== undefined && params.length > 0 && NAMED.test(text) && options?.blob === undefined && options?.paramTypes === undefined;

  pg.query = async <T>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>> => {
    if (!named(text, params, options)) return plainQuery<T>(text, params, options);
    await inner._checkReady();
    return inner._runExclusiveTransaction(() => run<T>(text, params ?? [], options, false));
  };

  pg.transaction = <T>(fn: (tx: Transaction) => Promise<T>): Promise<T> =>
    plainTransaction((tx) => {
      const plainTxQuery = tx.query.bind(tx);
      const namedTx = Object.create(tx, {
        query: {
          // Writable and configurable as an own method would be: a proxy over this object (driver.ts) may then return another.
          writable: true,
          configurable: true,
          enumerable: true,
          value: async <R>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<R>> => {
            if (!named(text, params, options)) return plainTxQuery<R>(text, params, options);
            if (tx.closed) throw new Error('Transaction is closed');
            return run<R>(text, params ?? [], options, true);
          },
        },
      }) as Transaction;
      return fn(namedTx);
    });
}
