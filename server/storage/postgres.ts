// The StreamStore on PostgreSQL: a pg Pool, with LISTEN/NOTIFY (and a short poll) so several relays serve one stream.
import pg from 'pg';
import { NexusError } from '../../protocol/errors.js';
import { sqlLiteral, type Logger } from '../../infra/index.js';
import { relayMigrationsDir } from '../paths.js';
import type { StreamStore } from './port.js';
import { CommitEmitter, execOrInTurn, migrate, quoteIdent, sqlStreamStore, type Sql, type SqlDb } from './sql.js';

/**
 * The NOTIFY channel; payloads are `<stream>:<seq>` for a commit (rows are always read from the table)
 * and `<stream>:changed` when a stream was deleted or its token replaced.
 */
export const NOTIFY_CHANNEL = 'nexus_relay';

/** Options of {@link openPostgresStore}. */
export type PostgresStoreOptions = {
  url: string;
  /** A schema of its own (created when missing); default: the connection's search_path. */
  schema?: string;
  log: Logger;
  /** The safety-net poll of watched streams' heads, in ms (default 500). */
  pollMs?: number;
  poolSize?: number;
};

/** `url` fit to show: its password replaced by `***` (also in text that does not parse as a URL). */
export function redactDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/(\/\/[^/:@]*:)[^@/]*@/, '$1***@');
  }
}

function adapt(client: pg.Pool | pg.PoolClient): Sql {
  return {
    query: async <T>(text: string, params?: unknown[]) => (await client.query(text, params)).rows as T[],
    exec: async (script) => {
      // node-postgres answers a script of several statements with one result each, one alone without an array.
      const res = (await client.query(script)) as unknown as pg.QueryResult | pg.QueryResult[];
      return (Array.isArray(res) ? res : [res]).map((r) => r.rows as unknown[]);
    },
  };
}

/** Opens a pooled, migrated store on PostgreSQL, listening for other instances' commits. */
export async function openPostgresStore(opts: PostgresStoreOptions): Promise<StreamStore> {
  // Appends write op texts as literals, where a doubled quote must be the only escape.
  const config: pg.ClientConfig = { connectionString: opts.url, options: '-c standard_conforming_strings=on' };
  if (opts.schema !== undefined) config.options += ` -c search_path=${quoteIdent(opts.schema)}`;
  const pool = new pg.Pool({ ...config, max: opts.poolSize ?? 10 });
  // An idle client's error must not reach the process as an unhandled 'error' event.
  pool.on('error', (err) => opts.log.warn('postgres pool client failed', { error: err.message }));
  const sql = adapt(pool);
  const db: SqlDb = {
    ...sql,
    // The relay appends to a stream one group at a time (appendDepth 1): nothing of ours comes between.
    execOr: (script, fallback) => execOrInTurn(sql, script, fallback),
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn(adapt(client));
        await client.query('COMMIT');
        client.release();
        return result;
      } catch (err) {
        const broken = await client.query('ROLLBACK').then(
          () => undefined,
          (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
        );
        client.release(broken);
        throw err;
      }
    },
  };
  try {
    await migrate(db, relayMigrationsDir(), opts.schema);
  } catch (err) {
    await pool.end().catch(() => undefined);
    const why = err instanceof Error ? err.message : String(err);
    throw new NexusError('STORE_FAILED', `the relay database at ${redactDatabaseUrl(opts.url)} could not be opened: ${why}`, undefined, { cause: err });
  }

  const emitter = new CommitEmitter();
  let closed = false;
  let listener: pg.Client | null = null;
  let retry: NodeJS.Timeout | undefined;

  const listen = async (): Promise<void> => {
    const client = new pg.Client(config);
    let dead = false;
    const again = (err: Error) => {
      if (dead) return;
      dead = true;
      if (listener === client) listener = null;
      client.end().catch(() => undefined);
      if (closed) return;
      opts.log.warn('postgres LISTEN connection lost; the poll covers until it is back', { error: err.message });
      retry ??= setTimeout(() => {
        retry = undefined;
        void listen();
      }, 1_000);
    };
    client.on('error', again);
    client.on('end', () => again(new Error('the connection ended')));
    client.on('notification', (msg) => {
      if (msg.channel !== NOTIFY_CHANNEL || !msg.payload) return;
      const at = msg.payload.lastIndexOf(':');
      if (at <= 0) return;
      const stream = msg.payload.slice(0, at);
      const tail = msg.payload.slice(at + 1);
      if (tail === 'changed') return emitter.changed(stream);
      const seq = Number(tail);
      if (Number.isSafeInteger(seq)) emitter.emit(stream, seq);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${NOTIFY_CHANNEL}`);
      if (closed) await client.end();
      else listener = client;
    } catch (err) {
      again(err instanceof Error ? err : new Error(String(err)));
    }
  };
  await listen();

  // The safety net: a lost notification (or a LISTEN connection being re-made) costs at most one poll.
  let polling = false;
  const poll = setInterval(() => {
    const streams = emitter.streams();
    if (polling || streams.length === 0) return;
    polling = true;
    pool
      .query<{ name: string; head: string }>('SELECT name, head FROM streams WHERE name = ANY($1::text[])', [streams])
      .then((res) => res.rows.forEach((r) => emitter.emit(r.name, Number(r.head))))
      .catch((err: Error) => opts.log.warn('postgres poll failed', { error: err.message }))
      .finally(() => (polling = false));
  }, opts.pollMs ?? 500);
  poll.unref();

  // Commit notices go out after the append committed, not in its transaction: PostgreSQL serializes the
  // commits of transactions that NOTIFY (a database-wide lock from before the commit record is flushed
  // until the commit ends), so with the NOTIFY inside, the appends of every stream committed one at a
  // time, each holding the others up for its flush and for any moment its backend was off the CPU; on a
  // busy machine they queued behind each other. The notices of every stream that committed meanwhile go in one transaction of
  // their own, one at a time, committed without waiting for the flush (they write no data). A notice
  // lost with a crash between the two is what the poll covers.
  const notices = new Map<string, number>();
  let noticing = false;
  const sendNotices = (): void => {
    if (noticing || notices.size === 0 || closed) return;
    noticing = true;
    const payloads = [...notices].map(([stream, head]) => `${stream}:${head}`);
    notices.clear();
    // One implicit transaction (no BEGIN: a failure rolls it all back and never leaves the LISTEN
    // connection inside a transaction, where it would hear nothing).
    const script = [
      'SET LOCAL synchronous_commit TO off',
      `SELECT pg_notify('${NOTIFY_CHANNEL}', p) FROM unnest(ARRAY[${payloads.map(sqlLiteral).join(',')}]::text[]) AS p`,
    ].join(';\n');
    // On the LISTEN connection, idle but for notifications: from the pool, a notice would wait behind
    // every append queued for a connection.
    (listener ?? pool)
      .query(script)
      .catch((err: Error) => void (closed || opts.log.warn('postgres NOTIFY failed; the poll covers', { error: err.message })))
      .finally(() => {
        noticing = false;
        sendNotices();
      });
  };
  const notice = (stream: string, head: number): void => {
    notices.set(stream, Math.max(head, notices.get(stream) ?? 0));
    sendNotices();
  };

  const store = sqlStreamStore(db, emitter, {
    kind: 'postgres',
    appendDepth: 1,
    onChange: async (tx, stream) => {
      await tx.query('SELECT pg_notify($1, $2)', [NOTIFY_CHANNEL, `${stream}:changed`]);
    },
    close: async () => {
      if (closed) return;
      closed = true;
      clearInterval(poll);
      clearTimeout(retry);
      await listener?.end().catch(() => undefined);
      await pool.end();
    },
  });
  return {
    ...store,
    async append(stream, ops) {
      const out = await store.append(stream, ops);
      if (out.rows.length > 0) notice(stream, out.head);
      return out;
    },
  };
}
