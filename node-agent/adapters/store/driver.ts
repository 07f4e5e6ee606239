// The PGlite client drizzle talks to. drizzle's PGlite driver sends, with every query, the same nine
// parser overrides (dates, timestamps, intervals and a few array types returned as text). PGlite merges
// them into its own parser table for each query, and that table holds an entry for every type and
// array type the database knows (about 320): the copy cost 180 µs of a 320 µs query (measured: a
// primary-key select, 144 µs bare, 321 µs with drizzle's options). So the overrides are installed once
// on the instance, and a query that brings exactly those overrides runs without them: the same rows,
// without the copy.
import type { PGlite, QueryOptions, Transaction } from '@electric-sql/pglite';

/** The type ids drizzle reads as text (its PglitePreparedQuery configs): date, timestamp, timestamptz, interval, numeric[], timestamp[], timestamptz[], interval[], date[]. */
const AS_TEXT = [1082, 1114, 1184, 1186, 1231, 1115, 1185, 1187, 1182];
const asText = (value: string): string => value;

/** Options without drizzle's parsers, when those are the ones installed on the instance; otherwise as given. */
function withoutInstalledParsers(options: QueryOptions | undefined): QueryOptions | undefined {
  const parsers = options?.parsers;
  if (parsers === undefined) return options;
  for (const key of Object.keys(parsers)) if (!AS_TEXT.includes(Number(key))) return options;
  const { parsers: _dropped, ...rest } = options!;
  return rest;
}

type Queryable = Pick<PGlite, 'query'> | Pick<Transaction, 'query'>;

/** `target` with its `query` taking drizzle's options cheaply, and `transaction` handing out the same kind of client. */
function wrap<T extends Queryable>(target: T): T {
  return new Proxy(target, {
    get(t, prop) {
      if (prop === 'query') {
        return (sql: string, params?: unknown[], options?: QueryOptions) => t.query(sql, params, withoutInstalledParsers(options));
      }
      if (prop === 'transaction' && 'transaction' in t) {
        return <R>(fn: (tx: Transaction) => Promise<R>) => (t as PGlite).transaction((tx) => fn(wrap(tx)));
      }
      const value = Reflect.get(t, prop, t) as unknown;
      // PGlite's methods reach private fields: they must run on the instance, not on the proxy.
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
    },
  });
}

/**
 * The client to give drizzle for `pg`. Installs drizzle's text parsers on `pg` itself, so a raw
 * `pg.query` also reads those types as text (the store's schema has no column of them).
 */
export function drizzleClient(pg: PGlite): PGlite {
  for (const oid of AS_TEXT) pg.parsers[oid] = asText;
  return wrap(pg);
}

/**
 * The PGlite client (or open transaction) under a drizzle handle. drizzle keeps it as its session's
 * `client` and offers nothing public that reaches it; COPY FROM a blob needs it. Throws when drizzle's
 * shape has changed, rather than leaving a caller without its bulk path (a test pins it).
 */
export function pgliteUnder(db: object): Pick<PGlite, 'query'> {
  const client = (db as { session?: { client?: unknown } }).session?.client;
  if (typeof client !== 'object' || client === null || typeof (client as { query?: unknown }).query !== 'function') {
    throw new TypeError('pgliteUnder: no PGlite client under this drizzle handle');
  }
  return client as Pick<PGlite, 'query'>;
}
