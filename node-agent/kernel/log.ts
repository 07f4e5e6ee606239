// Appends ops to the store and keeps each operation's fold current, in the same transaction.
import { sql, type SQL } from 'drizzle-orm';
import { SIGNED_FIELDS, signedText, signOp, wireText, type OpSigner } from '../../crypto/index.js';
import { copyRow, sqlLiteral } from '../../infra/index.js';
import { NexusError } from '../../protocol/errors.js';
import { randomUlid } from '../../protocol/ids.js';
import type { Op, OpPayload } from '../../protocol/ops.js';
import { badTextError, findBadText, MAX_LAMPORT } from '../../protocol/storable.js';
import { pgliteUnder, tables } from '../adapters/store/index.js';
import type { Exec } from './db.js';
import { logClock, raiseLogClock } from './clock.js';
import { project, type Projection } from './projections.js';

export type { Exec, Tx } from './db.js';

/**
 * How far ahead of this store's clock a received op's Lamport time may be. An honest peer is ahead by
 * the number of ops this store has not seen yet (2^24 is about 16.7 million); a hostile one that
 * could jump freely would reach MAX_LAMPORT in one op, after which no node that took it could write.
 * Within this bound it needs 2^24 accepted ops to get there.
 */
export const LAMPORT_AHEAD_LIMIT = 2 ** 24;

/** What a command asks to append; the log adds identity, order and time. */
export type OpDraft = { operation: string; thread: string | null; session: string | null } & OpPayload;

/**
 * Who appends: this workspace, this node, its clock, the key that signs every op it writes, and the
 * projections every stored op is folded into.
 */
export type Author = { workspace: string; origin: string; now: () => Date; signer: OpSigner; projections: readonly Projection[] };

/** An op taken in from elsewhere, with its signature when it travelled signed. */
export type IncomingOp = Op & { sig?: string | null };

/**
 * The columns an op is read back from (its signed fields): a read that folds or shows ops selects
 * these, not the stored wire text and signature, which only sync sends on. The text is the op again,
 * and a prompt's history read parsed it for every message of the thread.
 */
export const opColumns = Object.fromEntries(SIGNED_FIELDS.map((f) => [f, tables.ops[f]])) as { [F in (typeof SIGNED_FIELDS)[number]]: (typeof tables.ops)[F] };

type OpRow = Pick<typeof tables.ops.$inferSelect, keyof typeof opColumns>;

/**
 * The exact wire text of a stored op, or null for one written before ops were signed. The signed columns
 * hold what was signed (the body as its exact text), so the canonical signed text and the signature give
 * back the bytes that were verified or pushed, without a second copy of the op in the row.
 */
export function wireTextOf(row: OpRow & { sig: string | null }): string | null {
  return row.sig === null ? null : wireText(signedText(rowToOp(row)), row.sig);
}

export function rowToOp(row: OpRow): Op {
  return {
    id: row.id,
    workspace: row.workspace,
    origin: row.origin,
    lamport: row.lamport,
    ts: row.ts,
    operation: row.operation,
    thread: row.thread,
    session: row.session,
    kind: row.kind,
    body: row.body,
    key: row.key ?? '',
  } as Op;
}

/**
 * The ops of each of `threads` that `filter` keeps (a condition on the columns of ops), read thread by thread
 * through ops_thread_idx, up to 1,000 threads a query. Not `thread in (...)`: PGlite's planner has no
 * statistics and takes each listed value for 0.5% of the table, so a list of a hundred threads reads as half
 * the log and the planner scans all of it instead (a million ops, 0.8-1.5 s, for the hundred openings of a
 * status). Unnested and joined laterally, each thread is an index lookup of its own whatever the log holds;
 * `offset 0` keeps the planner from folding the lookups back into one join over the whole table.
 */
export async function opsOfThreads(db: Exec, threads: readonly string[], filter: SQL): Promise<Op[]> {
  const out: Op[] = [];
  const columns = sql.raw(SIGNED_FIELDS.map((f) => `"${f}"`).join(', '));
  for (let i = 0; i < threads.length; i += 1000) {
    const { rows } = (await db.execute(
      sql`select o.* from unnest(${sql.param(threads.slice(i, i + 1000))}::text[]) as w(id) cross join lateral (select ${columns} from ops where "ops"."thread" = w.id and ${filter} offset 0) o`,
    )) as unknown as { rows: OpRow[] };
    for (const r of rows) out.push(rowToOp(r));
  }
  return out;
}

/**
 * Appends ops authored here. Each gets the next Lamport time, so they sort after
 * everything this node has seen and fold in place, and is signed by the author's key:
 * its exact wire text is stored and is what sync pushes. Call inside a transaction.
 */
export async function appendOps(db: Exec, author: Author, drafts: readonly OpDraft[]): Promise<Op[]> {
  if (drafts.length === 0) return [];
  // Text no store can keep never reaches SQL, whichever way it came in: a coded refusal, nothing written.
  for (const d of drafts) {
    const bad = findBadText(d.body);
    if (bad !== null) throw badTextError(bad, ['body']);
  }
  let lamport = await logClock(db);
  // Never build an op no relay or node would take: the clock stops at MAX_LAMPORT (see protocol/storable.ts).
  if (lamport + drafts.length > MAX_LAMPORT) {
    throw new NexusError('CLOCK_EXHAUSTED', `this log's Lamport clock is at ${lamport}; no op past ${MAX_LAMPORT} can be written`, { lamport, max: MAX_LAMPORT });
  }
  const ts = author.now().toISOString();
  const signer = author.signer;
  const ops = drafts.map(
    (d) => ({ id: randomUlid(), workspace: author.workspace, origin: author.origin, lamport: ++lamport, ts, kind: d.kind, operation: d.operation, thread: d.thread, session: d.session, body: d.body, key: signer.key }) as Op,
  );
  await db.insert(tables.ops).values(ops.map((op) => opRow({ ...op, sig: signOp(op, signer).sig })));
  raiseLogClock(db, lamport);
  await project(db, author.projections, ops);
  return ops;
}

/** The stored row of an op, with its signature when it has one. */
function opRow(op: Op & { key?: string | null; sig?: string | null }): typeof tables.ops.$inferInsert {
  const row: Record<string, unknown> = {};
  for (const field of SIGNED_FIELDS) row[field] = op[field] ?? null;
  return { ...(row as Omit<typeof tables.ops.$inferInsert, 'sig'>), sig: op.sig ?? null };
}

/**
 * Takes in ops that arrived from elsewhere: duplicates are dropped by id, and every
 * touched operation ends in the state its full op set folds to, whatever the arrival order.
 * Trusts what it is given: sync calls it only with verified ops (see `ingestChecked`).
 */
export async function ingestOps(db: Exec, incoming: readonly IncomingOp[], projections: readonly Projection[]): Promise<Op[]> {
  if (incoming.length === 0) return [];
  const known = new Set<string>();
  for (let i = 0; i < incoming.length; i += LOOKUP_CHUNK) {
    const ids = incoming.slice(i, i + LOOKUP_CHUNK).map((op) => sqlLiteral(op.id));
    const rows = (await db.execute(sql.raw(`select id from ops where id in (${ids.join(',')})`))) as unknown as { rows: Array<{ id: string }> };
    for (const r of rows.rows) known.add(r.id);
  }
  const seen = new Set<string>();
  const fresh = incoming.filter((op) => !known.has(op.id) && !seen.has(op.id) && seen.add(op.id));
  if (fresh.length === 0) return [];
  await pgliteUnder(db).query(COPY_OPS, [], { blob: new Blob([copyOps(fresh)]) });
  raiseLogClock(db, fresh.reduce((top, op) => Math.max(top, op.lamport), 0));
  await project(db, projections, fresh);
  return fresh;
}

/** Ids per lookup of the ones already stored. */
const LOOKUP_CHUNK = 500;

/**
 * Ingested ops go in by COPY: a page of received ops is the node's hottest write, and COPY parses rows
 * of text where a multi-row INSERT first parses and plans a statement of thousands of literals (that
 * took 1.3x as long, paired on one machine; drizzle's row building and bound parameters longer still).
 */
const COPY_OPS = "copy ops (id, workspace, origin, lamport, ts, kind, operation, thread, session, body, sig, key) from '/dev/blob'";

/**
 * The COPY rows of `ops`, the body as the JSON text it was signed as (kept as written by the `json`
 * column). Ops reach here storable (protocol/storable.ts), so no text holds a NUL.
 */
function copyOps(ops: readonly IncomingOp[]): string {
  let rows = '';
  for (const op of ops) rows += copyRow([op.id, op.workspace, op.origin, op.lamport, op.ts, op.kind, op.operation, op.thread, op.session, JSON.stringify(op.body), op.sig, op.key]);
  return rows;
}
