// The append, shared by PGlite and PostgreSQL: gapless seqs under the stream row's lock, duplicates by id,
// one multi-row INSERT whose unique index finds duplicates for free in the usual case of there being none.
import { NexusError } from '../../protocol/errors.js';
import type { AppendResult, OpToAppend, StoredOp } from './port.js';
import type { Sql, SqlDb } from './sql.js';

/** What an append did: each op's fate in order, the head after it, and the rows it stored, in seq order. */
export type AppendOutcome = { results: AppendResult[]; head: number; rows: StoredOp[] };

/** Runs inside the append transaction once ops were inserted (PostgreSQL: NOTIFY). */
export type OnAppend = (tx: Sql, stream: string, head: number) => Promise<void>;

/**
 * A SQL string literal. Both stores run with standard_conforming_strings on (set at open), where a
 * quote doubled is the only escape; NUL cannot be written in a literal and is refused.
 */
export function literal(text: string): string {
  if (text.includes('\u0000')) throw new TypeError('a SQL literal cannot hold U+0000');
  return `'${text.replace(/'/g, "''")}'`;
}

/** Whether `err` is PostgreSQL's unique_violation (SQLSTATE 23505), from PGlite or node-postgres. */
function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505';
}

/**
 * The ops to insert (the first occurrence of each id), for each op given the index of its id in
 * `firsts`, and for each of `firsts` its position in `ops`.
 */
function firstsOf(ops: readonly OpToAppend[]): { firsts: OpToAppend[]; firstIndex: number[]; position: number[] } {
  const seen = new Map<string, number>();
  const firsts: OpToAppend[] = [];
  const position: number[] = [];
  const firstIndex = ops.map((op, at) => {
    let i = seen.get(op.id);
    if (i === undefined) {
      seen.set(op.id, (i = firsts.push(op) - 1));
      position.push(at);
    }
    return i;
  });
  return { firsts, firstIndex, position };
}

async function lockHead(tx: Sql, stream: string): Promise<number> {
  const [row] = await tx.query<{ head: unknown }>('SELECT head FROM streams WHERE name = $1 FOR UPDATE', [stream]);
  if (!row) throw new NexusError('UNKNOWN_STREAM', `no stream ${stream}`);
  return Number(row.head);
}

/**
 * Inserts `fresh` at head+1.. as one statement of literals (PGlite passes a parameter through the same
 * text encoding as the statement, so parameters saved nothing and cost a placeholder each). A plain
 * INSERT: an id already stored raises unique_violation, which the caller turns into the careful path
 * (ON CONFLICT DO NOTHING would cost every insert a speculative pass, measured 1.3-2x slower on PGlite).
 */
async function insertRows(tx: Sql, stream: string, head: number, fresh: readonly OpToAppend[]): Promise<void> {
  const name = literal(stream);
  const values = fresh.map((op, i) => `(${name},${head + i + 1},${literal(op.id)},${literal(op.text)})`);
  await tx.query(`INSERT INTO stream_ops (stream, seq, op_id, op) VALUES ${values.join(',')}`);
}

/** Seqs for the firsts (stored ones keep theirs, fresh ones follow head), then the outcome. */
function outcome(ops: readonly OpToAppend[], plan: ReturnType<typeof firstsOf>, head: number, stored: Map<string, number>): { out: AppendOutcome; fresh: OpToAppend[] } {
  const seqOfFirst: number[] = [];
  const fresh: OpToAppend[] = [];
  const rows: StoredOp[] = [];
  for (const op of plan.firsts) {
    const known = stored.get(op.id);
    if (known !== undefined) seqOfFirst.push(known);
    else {
      fresh.push(op);
      seqOfFirst.push(head + fresh.length);
      rows.push({ seq: head + fresh.length, op: op.text });
    }
  }
  const results = ops.map((op, i): AppendResult => {
    const first = plan.firstIndex[i]!;
    // A duplicate is an op already stored, or a repeat of an earlier op of this same append.
    const duplicate = stored.has(op.id) || plan.position[first] !== i;
    return { op: op.id, seq: seqOfFirst[first]!, duplicate };
  });
  return { out: { results, head: head + fresh.length, rows }, fresh };
}

async function finish(tx: Sql, stream: string, head: number, fresh: number, onAppend: OnAppend | undefined): Promise<void> {
  if (fresh === 0) return;
  await tx.query('UPDATE streams SET head = $2 WHERE name = $1', [stream, head]);
  await onAppend?.(tx, stream, head);
}

/**
 * Appends `ops` to `stream` in one transaction under the stream row's lock, so seqs come from its head
 * with no gap and no second writer between. Usually no op is stored yet: the rows go straight in and
 * the unique (stream, op_id) index is the duplicate check. When one was stored (unique_violation), that
 * transaction has rolled back and a careful one looks the ids up first (by index, one probe per id)
 * and inserts only the new ones.
 */
export async function appendOps(db: SqlDb, stream: string, ops: readonly OpToAppend[], onAppend?: OnAppend): Promise<AppendOutcome> {
  const plan = firstsOf(ops);
  try {
    return await db.transaction(async (tx) => {
      const head = await lockHead(tx, stream);
      const { out, fresh } = outcome(ops, plan, head, new Map());
      if (fresh.length > 0) await insertRows(tx, stream, head, fresh);
      await finish(tx, stream, out.head, fresh.length, onAppend);
      return out;
    });
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
  }
  return db.transaction(async (tx) => {
    const head = await lockHead(tx, stream);
    const ids = plan.firsts.map((o) => o.id);
    const found = await tx.query<{ op_id: string; seq: unknown }>(
      // A join drives one index probe per id; `op_id = ANY(...)` was planned as a scan of the whole stream.
      'SELECT s.op_id, s.seq FROM unnest($2::text[]) AS i(id) JOIN stream_ops s ON s.stream = $1 AND s.op_id = i.id',
      [stream, ids],
    );
    const { out, fresh } = outcome(ops, plan, head, new Map(found.map((r) => [r.op_id, Number(r.seq)])));
    if (fresh.length > 0) await insertRows(tx, stream, head, fresh);
    await finish(tx, stream, out.head, fresh.length, onAppend);
    return out;
  });
}
