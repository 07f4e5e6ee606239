// The StreamStore in SQL shared by PGlite and PostgreSQL: migrations, streams, paged reads (the append is in append.ts).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { appendOps, type OnAppend } from './append.js';
import { firstTry, type ExecOrOutcome, type FirstTry, type Sql, type SqlDb } from './db.js';
import type { StoredOp, StreamRow, StreamStore, StreamSummary } from './port.js';

export type { ExecOrOutcome, FirstTry, Sql, SqlDb } from './db.js';

/** Whether `err` is PostgreSQL's unique_violation (SQLSTATE 23505). */
function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505';
}

/** `execOr` for a database whose calls nothing can overtake (one append at a time per stream). */
export async function execOrInTurn(sql: Sql, first: FirstTry, fallback: () => string): Promise<ExecOrOutcome> {
  try {
    return { fellBack: false, results: await firstTry(sql, first) };
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
  }
  return { fellBack: true, results: await sql.exec(fallback()) };
}

/** Any number an advisory lock can hold: serialises migrations between relay instances. */
const MIGRATION_LOCK = 0x6e78_7265;

/** Applies the `.sql` files of `dir` not applied yet, in name order, in one transaction. */
export async function migrate(db: SqlDb, dir: string, schema?: string): Promise<void> {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort();
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    if (schema !== undefined) await tx.exec(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
    await tx.exec('CREATE TABLE IF NOT EXISTS relay_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    const done = new Set((await tx.query<{ name: string }>('SELECT name FROM relay_migrations')).map((r) => r.name));
    for (const file of files) {
      if (done.has(file)) continue;
      await tx.exec(readFileSync(join(dir, file), 'utf8'));
      await tx.query('INSERT INTO relay_migrations (name) VALUES ($1)', [file]);
    }
  });
}

/** A schema name safe to splice into SQL. */
export function quoteIdent(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new TypeError(`not a usable schema name: ${name}`);
  return `"${name}"`;
}

/** Up to this many workspaces, a filtered history read walks each one's index range on its own. */
const LATERAL_WORKSPACES = 16;

/** Fans commit notices out to in-process subscribers, per stream, and stream changes to whoever watches them. */
export class CommitEmitter {
  private readonly listeners = new Map<string, Set<(head: number) => void>>();
  private readonly changeListeners = new Set<(stream: string) => void>();

  onChanged(listener: (stream: string) => void): () => void {
    this.changeListeners.add(listener);
    return () => void this.changeListeners.delete(listener);
  }

  changed(stream: string): void {
    for (const listener of this.changeListeners) listener(stream);
  }

  subscribe(stream: string, listener: (head: number) => void): () => void {
    let set = this.listeners.get(stream);
    if (!set) this.listeners.set(stream, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(stream) === set) this.listeners.delete(stream);
    };
  }

  emit(stream: string, head: number): void {
    for (const listener of this.listeners.get(stream) ?? []) listener(head);
  }

  /** The streams somebody listens to. */
  streams(): string[] {
    return [...this.listeners.keys()];
  }
}

/** What the two back-ends add to the shared SQL. */
export type SqlStoreHooks = {
  kind: StreamStore['kind'];
  appendDepth: number;
  /** A statement for the append transaction once the head moved (PostgreSQL: NOTIFY). */
  onAppend?: OnAppend;
  /** Runs inside the transaction that deletes a stream or replaces its token (PostgreSQL: NOTIFY). */
  onChange?: (tx: Sql, stream: string) => Promise<void>;
  close: () => Promise<void>;
};

/** A StreamStore over `db`. Commit notices of this process go through `emitter`. */
export function sqlStreamStore(db: SqlDb, emitter: CommitEmitter, hooks: SqlStoreHooks): StreamStore {
  return {
    kind: hooks.kind,
    appendDepth: hooks.appendDepth,

    async createStream(name, tokenHash) {
      const rows = await db.query('INSERT INTO streams (name, token_hash) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING name', [name, tokenHash]);
      return rows.length === 1;
    },

    async getStream(name): Promise<StreamRow | null> {
      const [row] = await db.query<{ name: string; token_hash: string; head: unknown }>('SELECT name, token_hash, head FROM streams WHERE name = $1', [name]);
      return row ? { name: row.name, tokenHash: row.token_hash, head: Number(row.head) } : null;
    },

    async append(stream, ops) {
      const out = await appendOps(db, stream, ops, hooks.onAppend);
      if (out.rows.length > 0) emitter.emit(stream, out.head);
      return out;
    },

    async read(stream, afterSeq, limit, maxBytes): Promise<StoredOp[]> {
      const page = 'SELECT seq, op FROM stream_ops WHERE stream = $1 AND seq > $2 ORDER BY seq LIMIT $3';
      const rows =
        maxBytes === undefined
          ? await db.query<{ seq: unknown; op: string }>(page, [stream, afterSeq, limit])
          : await db.query<{ seq: unknown; op: string }>(
              // The window runs over the limited page only; the first op always passes.
              `SELECT seq, op FROM (SELECT seq, op, sum(octet_length(op)) OVER (ORDER BY seq) AS cum FROM (${page}) p) w
               WHERE cum <= $4 OR cum = octet_length(op) ORDER BY seq`,
              [stream, afterSeq, limit, maxBytes],
            );
      return rows.map((r) => ({ seq: Number(r.seq), op: r.op }));
    },

    async readHistory(stream, afterSeq, uptoSeq, filter, limit, maxBytes): Promise<StoredOp[]> {
      const params: unknown[] = [stream, afterSeq, limit, maxBytes, uptoSeq];
      let page: string;
      if (filter.only !== undefined && filter.only.length <= LATERAL_WORKSPACES) {
        // A few workspaces: each one's next rows straight from the (stream, workspace, seq) index, merged.
        // (With = ANY the planner read every matching row of the range and sorted them, for each page:
        // 28 ms a page against 3 ms on a stream of 1,000,000 ops.)
        page =
          `SELECT s.seq, s.op FROM unnest($6::text[]) AS w(ws) CROSS JOIN LATERAL ` +
          `(SELECT seq, op FROM stream_ops WHERE stream = $1 AND workspace = w.ws AND seq > $2 AND seq <= $5 ORDER BY seq LIMIT $3) s ORDER BY s.seq LIMIT $3`;
        params.push([...filter.only]);
      } else {
        let where = '';
        if (filter.only !== undefined) where += ` AND workspace = ANY($${params.push([...filter.only])}::text[])`;
        // A row stored before the column was filled has none: it is nobody's to leave out.
        if (filter.exclude !== undefined && filter.exclude.length > 0) where += ` AND coalesce(workspace, '') <> ALL($${params.push([...filter.exclude])}::text[])`;
        page = `SELECT seq, op FROM stream_ops WHERE stream = $1 AND seq > $2 AND seq <= $5${where} ORDER BY seq LIMIT $3`;
      }
      const rows = await db.query<{ seq: unknown; op: string }>(
        `SELECT seq, op FROM (SELECT seq, op, sum(octet_length(op)) OVER (ORDER BY seq) AS cum FROM (${page}) p) w
         WHERE cum <= $4 OR cum = octet_length(op) ORDER BY seq`,
        params,
      );
      return rows.map((r) => ({ seq: Number(r.seq), op: r.op }));
    },

    async heads() {
      const rows = await db.query<{ name: string; head: unknown }>('SELECT name, head FROM streams ORDER BY name');
      return rows.map((r) => ({ name: r.name, head: Number(r.head) }));
    },

    async listStreams(): Promise<StreamSummary[]> {
      const rows = await db.query<{ name: string; head: unknown; created_at: unknown }>('SELECT name, head, created_at FROM streams ORDER BY name');
      return rows.map((r) => ({ name: r.name, head: Number(r.head), createdAt: new Date(r.created_at as string | Date).toISOString() }));
    },

    async deleteStream(name) {
      const ops = await db.transaction(async (tx) => {
        const [row] = await tx.query<{ head: unknown }>('SELECT head FROM streams WHERE name = $1 FOR UPDATE', [name]);
        if (!row) return null;
        await tx.query('DELETE FROM stream_ops WHERE stream = $1', [name]);
        await tx.query('DELETE FROM streams WHERE name = $1', [name]);
        await hooks.onChange?.(tx, name);
        // Seqs are gapless from 1, so the head is the number of ops.
        return Number(row.head);
      });
      if (ops !== null) emitter.changed(name);
      return ops;
    },

    async setTokenHash(name, tokenHash) {
      const done = await db.transaction(async (tx) => {
        const rows = await tx.query('UPDATE streams SET token_hash = $2 WHERE name = $1 RETURNING name', [name, tokenHash]);
        if (rows.length === 0) return false;
        await hooks.onChange?.(tx, name);
        return true;
      });
      if (done) emitter.changed(name);
      return done;
    },

    onStreamChanged: (listener) => emitter.onChanged(listener),

    async operatorTokenHash() {
      const [row] = await db.query<{ token_hash: string }>('SELECT token_hash FROM relay_operator WHERE id = 1');
      return row?.token_hash ?? null;
    },

    async initOperatorTokenHash(hash) {
      const rows = await db.query('INSERT INTO relay_operator (id, token_hash) VALUES (1, $1) ON CONFLICT (id) DO NOTHING RETURNING id', [hash]);
      return rows.length === 1;
    },

    async ping() {
      await db.query('SELECT 1');
    },

    subscribe: (stream, listener) => emitter.subscribe(stream, listener),
    close: hooks.close,
  };
}
