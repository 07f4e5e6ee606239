// The SQL database the stream store runs on: the port PGlite (in a worker thread) and PostgreSQL each
// implement, below both the shared store (sql.ts) and the append (append.ts).

/** Statements on one connection (or inside one transaction). */
export type Sql = {
  query<T>(text: string, params?: unknown[]): Promise<T[]>;
  /**
   * Runs a script of several statements, no parameters, in one round trip. Outside a transaction the
   * statements form one implicit transaction (all or nothing). Resolves to each statement's rows.
   */
  exec(script: string): Promise<unknown[][]>;
};

/** What {@link SqlDb.execOr} ran: the first try's rows, or the fallback's when the first try hit a unique index. */
export type ExecOrOutcome = { fellBack: boolean; results: unknown[][] };

/**
 * The first try of {@link SqlDb.execOr}: a script of statements with their values written in, or one
 * statement with parameters (its rows are then the only result), which a database may keep prepared.
 */
export type FirstTry = string | { text: string; params: unknown[] };

/**
 * A database: statements; transactions that commit when `fn` resolves and roll back when it throws; and
 * `execOr`, which runs a first try and, if it fails on a unique index (SQLSTATE 23505, it rolled back),
 * runs the script `fallback` gives in its place, with nothing of this database's other work between the
 * two (the fallback is only built when it is needed).
 */
export type SqlDb = Sql & {
  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T>;
  execOr(first: FirstTry, fallback: () => string): Promise<ExecOrOutcome>;
};

/** Runs a first try of {@link SqlDb.execOr} on `sql`: the script's results, or the statement's rows as the one result. */
export async function firstTry(sql: Sql, first: FirstTry): Promise<unknown[][]> {
  return typeof first === 'string' ? sql.exec(first) : [await sql.query(first.text, first.params)];
}
