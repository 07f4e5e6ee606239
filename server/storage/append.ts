// The append, shared by PGlite and PostgreSQL: gapless seqs under the stream row's lock, duplicates by id,
// one multi-row INSERT whose unique index finds duplicates for free in the usual case of there being none.
import { sqlLiteral as literal } from '../../infra/index.js';
import { NexusError } from '../../protocol/errors.js';
import type { AppendResult, OpToAppend, StoredOp } from './port.js';
import type { FirstTry, SqlDb } from './db.js';

/** What an append did: each op's fate in order, the head after it, and the rows it stored, in seq order. */
export type AppendOutcome = { results: AppendResult[]; head: number; rows: StoredOp[] };

/**
 * A statement to run in the append's transaction once the head moved, given the stream as a SQL
 * literal (PostgreSQL: a NOTIFY, delivered only if the transaction commits).
 */
export type OnAppend = (streamLiteral: string) => string;

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

/**
 * Rows of literals (PGlite passes a parameter through the same text encoding as the statement, so
 * parameters saved nothing and cost a placeholder each): `(n, id, text)` with n counting from 1.
 */
function valuesOf(fresh: readonly OpToAppend[]): string {
  return fresh.map((op, i) => `(${i + 1},${literal(op.id)},${workspaceLiteral(op)},${literal(op.text)})`).join(',');
}

/** The op's author workspace: as given, else read from its text (null when it names none). */
export function workspaceOf(op: OpToAppend): string | null {
  if (op.workspace !== undefined) return op.workspace;
  try {
    const v = (JSON.parse(op.text) as { workspace?: unknown }).workspace;
    return typeof v === 'string' ? v : null;
  } catch {
    return null;
  }
}

/** The op's author workspace as a SQL literal. */
function workspaceLiteral(op: OpToAppend): string {
  const ws = workspaceOf(op);
  return ws === null ? 'NULL' : literal(ws);
}

/**
 * The usual append of a single op, the commonest push of a live node: one statement with parameters, the
 * same text every time, so a database that keeps statements prepared (the relay's PGlite thread) parses
 * and plans it once instead of at every op (a PGlite append went from 340-400 to 140-180 µs). The UPDATE
 * takes the stream row's lock and moves its head; the op goes in at the new head. No row comes back when
 * the stream does not exist.
 */
const APPEND_ONE =
  'WITH h AS (UPDATE streams SET head = head + 1 WHERE name = $1 RETURNING head) ' +
  'INSERT INTO stream_ops (stream, seq, op_id, workspace, op) SELECT $1, h.head, $2, $3, $4 FROM h RETURNING seq AS head';

/** Seqs for the firsts (stored ones keep theirs, fresh ones follow head), then the outcome. */
function outcome(ops: readonly OpToAppend[], plan: ReturnType<typeof firstsOf>, head: number, stored: Map<string, number>): AppendOutcome {
  const seqOfFirst: number[] = [];
  let fresh = 0;
  const rows: StoredOp[] = [];
  for (const op of plan.firsts) {
    const known = stored.get(op.id);
    if (known !== undefined) seqOfFirst.push(known);
    else {
      fresh += 1;
      seqOfFirst.push(head + fresh);
      rows.push({ seq: head + fresh, op: op.text });
    }
  }
  const results = ops.map((op, i): AppendResult => {
    const first = plan.firstIndex[i]!;
    // A duplicate is an op already stored, or a repeat of an earlier op of this same append.
    const duplicate = stored.has(op.id) || plan.position[first] !== i;
    return { op: op.id, seq: seqOfFirst[first]!, duplicate };
  });
  return { results, head: head + fresh, rows };
}

/**
 * Appends `ops` to `stream` under the stream row's lock, so seqs come from its head with no gap and no
 * second writer between. Usually no op is stored yet, and the append is one script in one round trip
 * (an implicit transaction; for a single op, one prepared statement): the rows go in at the locked
 * head + 1.., the head moves by their number and comes back, and the unique (stream, op_id) index is
 * the duplicate check. A plain INSERT: an id
 * already stored raises unique_violation, which rolls the script back (ON CONFLICT DO NOTHING would
 * make every insert a speculative one, measured 1.3-2x slower on PGlite), and the careful script runs in
 * its place with nothing between them, so appends still take their seqs in the order they were made.
 * It takes the lock first; its later statements then see every op committed before it, insert only the
 * ids not stored (one index probe each), and read back the seqs of the ones that were.
 */
export async function appendOps(db: SqlDb, stream: string, ops: readonly OpToAppend[], onAppend?: OnAppend): Promise<AppendOutcome> {
  const plan = firstsOf(ops);
  const name = literal(stream);
  const fresh = plan.firsts;
  if (fresh.length === 0) {
    const [row] = await db.query<{ head: unknown }>('SELECT head FROM streams WHERE name = $1', [stream]);
    if (!row) throw new NexusError('UNKNOWN_STREAM', `no stream ${stream}`);
    return { results: [], head: Number(row.head), rows: [] };
  }
  const values = `(VALUES ${valuesOf(fresh)}) AS v(n, id, ws, op)`;
  const notify = onAppend ? [onAppend(name)] : [];
  const one = fresh.length === 1 && notify.length === 0 ? fresh[0]! : null;
  const usual: FirstTry =
    one !== null
      ? { text: APPEND_ONE, params: [stream, one.id, workspaceOf(one), one.text] }
      : [
          `INSERT INTO stream_ops (stream, seq, op_id, workspace, op) SELECT ${name}, h.head + v.n, v.id, v.ws, v.op FROM (SELECT head FROM streams WHERE name = ${name} FOR UPDATE) h, ${values}`,
          `UPDATE streams SET head = head + ${fresh.length} WHERE name = ${name} RETURNING head`,
          ...notify,
        ].join(';\n');
  const careful = () => [
    `SELECT head FROM streams WHERE name = ${name} FOR UPDATE`,
    `WITH ins AS (INSERT INTO stream_ops (stream, seq, op_id, workspace, op) SELECT ${name}, h.head + f.k, f.id, f.ws, f.op FROM (SELECT head FROM streams WHERE name = ${name}) h, ` +
      `(SELECT v.id, v.ws, v.op, row_number() OVER (ORDER BY v.n) AS k FROM ${values} WHERE NOT EXISTS (SELECT 1 FROM stream_ops o WHERE o.stream = ${name} AND o.op_id = v.id)) f RETURNING 1) ` +
      `UPDATE streams SET head = head + (SELECT count(*) FROM ins) WHERE name = ${name} RETURNING head`,
    `SELECT o.op_id, o.seq FROM ${values} JOIN stream_ops o ON o.stream = ${name} AND o.op_id = v.id`,
    ...notify,
  ].join(';\n');
  const { fellBack, results } = await db.execOr(usual, careful);
  if (!fellBack) {
    const [row] = (results[one !== null ? 0 : 1] ?? []) as Array<{ head: unknown }>;
    // No stream row: the INSERT found no head to add to and the UPDATE moved nothing.
    if (!row) throw new NexusError('UNKNOWN_STREAM', `no stream ${stream}`);
    return outcome(ops, plan, Number(row.head) - fresh.length, new Map());
  }
  const [before] = (results[0] ?? []) as Array<{ head: unknown }>;
  if (!before) throw new NexusError('UNKNOWN_STREAM', `no stream ${stream}`);
  const head = Number(before.head);
  // Ops stored before this append keep their seqs; the ones it stored follow the old head.
  const stored = new Map<string, number>();
  for (const r of (results[2] ?? []) as Array<{ op_id: string; seq: unknown }>) if (Number(r.seq) <= head) stored.set(r.op_id, Number(r.seq));
  const out = outcome(ops, plan, head, stored);
  const [after] = (results[1] ?? []) as Array<{ head: unknown }>;
  if (Number(after?.head) !== out.head) throw new Error(`append to ${stream}: the head moved to ${String(after?.head)}, expected ${out.head}`);
  return out;
}
