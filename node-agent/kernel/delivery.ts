// The log's side of local delivery (a node handing one served workspace's ops to another on this machine):
// the signed ops a log wrote, read back as their exact wire texts, and which operations a log holds. The
// host decides who wants what; reading and taking in ops stays here, beside appending and ingesting them.
import { and, asc, eq, gt, inArray, isNotNull } from 'drizzle-orm';
import type { Op } from '../../protocol/ops.js';
import { tables } from '../adapters/store/index.js';
import type { Exec } from './db.js';
import { rowToOp, wireTextOf } from './log.js';

/** A stored signed op: its place in this log (local_seq), the op, and its wire text byte for byte. */
export type SignedEntry = { seq: number; op: Op; raw: string };

const entry = (r: typeof tables.ops.$inferSelect): SignedEntry => ({ seq: r.localSeq, op: rowToOp(r), raw: wireTextOf(r)! });

/** Up to `limit` signed ops `workspace` wrote into this log after local_seq `after`, in the order stored. */
export async function signedSince(db: Exec, workspace: string, after: number, limit: number): Promise<SignedEntry[]> {
  const rows = await db
    .select()
    .from(tables.ops)
    .where(and(eq(tables.ops.workspace, workspace), gt(tables.ops.localSeq, after), isNotNull(tables.ops.sig)))
    .orderBy(asc(tables.ops.localSeq))
    .limit(limit);
  return rows.map(entry);
}

/** Every signed op of these operations this log holds (its own and those it took in), in the order stored. */
export async function signedOfOperations(db: Exec, operations: readonly string[]): Promise<SignedEntry[]> {
  if (operations.length === 0) return [];
  const rows = await db
    .select()
    .from(tables.ops)
    .where(and(inArray(tables.ops.operation, [...operations]), isNotNull(tables.ops.sig)))
    .orderBy(asc(tables.ops.localSeq));
  return rows.map(entry);
}

/** Which of these operations this log has folded (it holds their opening). */
export async function heldOperations(db: Exec, operations: readonly string[]): Promise<Set<string>> {
  if (operations.length === 0) return new Set();
  const rows = await db.select({ id: tables.operations.id }).from(tables.operations).where(inArray(tables.operations.id, [...operations]));
  return new Set(rows.map((r) => r.id));
}
