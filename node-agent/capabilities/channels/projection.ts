// The rounds table: each round's board kept current from the log as its ops are stored, and the reads
// the engine makes of it (one round, the rounds of some operations, the rounds a tick has work for).
import { and, asc, eq, inArray, isNotNull, lte, sql } from 'drizzle-orm';
import { CHANNEL_OP_KINDS, type ChannelOpKind } from '../../../protocol/round.js';
import { compareOps, type Op } from '../../../protocol/ops.js';
import { keptPerStore, tables } from '../../adapters/store/index.js';
import { opColumns, rowToOp, type Exec, type Projection } from '../../kernel/index.js';
import { applyBoardOp, foldBoard, type Board, type BoardOp } from './board.js';
import { nextDeadline } from './decide.js';

type Head = { lamport: number; workspace: string; id: string };

const ROUND_KINDS = new Set<string>(CHANNEL_OP_KINDS);

export function isRoundOp(op: Pick<Op, 'kind'>): op is Op & BoardOp {
  return ROUND_KINDS.has(op.kind);
}

function boardOp(op: Op): BoardOp {
  return { kind: op.kind as ChannelOpKind, body: op.body, workspace: op.workspace, id: op.id, lamport: op.lamport } as BoardOp;
}

/** Every stored op of one round, in fold order. */
async function roundLog(db: Exec, round: string): Promise<BoardOp[]> {
  const rows = await db
    .select(opColumns)
    .from(tables.ops)
    .where(and(eq(tables.ops.thread, round), inArray(tables.ops.kind, CHANNEL_OP_KINDS)));
  return rows.map(rowToOp).sort(compareOps).map(boardOp);
}

/** What the engine reads of a round's row: its operation, its board and the sort key of its newest op. */
type Kept = { operation: string; board: Board | null; head: Head };

/**
 * The rows of the rounds read or written lately, per open store, so a running round is not read back from
 * the table by every step of every command that touches it (25 reads a round before, counted in
 * test/channels/reads.test.ts). This table is written only by the projection below, inside the transaction
 * that stores the ops; a transaction's rows reach the store's when it commits (`keptPerStore`). The last
 * {@link KEEP_ROWS} rounds are kept, as JSON would give them back.
 */
const keptRows = keptPerStore<ReadonlyMap<string, Kept>>();
/** Rows kept per store: the rounds running at once, with room to spare. */
const KEEP_ROWS = 256;

/** A copy, as the table would give it back: the board is stored as JSON. */
function copy(row: Kept): Kept {
  return JSON.parse(JSON.stringify(row)) as Kept;
}

function keptRow(db: Exec, id: string): Kept | undefined {
  const row = keptRows.get(db)?.get(id);
  return row === undefined ? undefined : copy(row);
}

/** Keeps `row` as round `id`'s, as `db` sees it now: the newest last, the oldest dropped past {@link KEEP_ROWS}. */
function keepRow(db: Exec, id: string, row: Kept): void {
  const rows = new Map(keptRows.get(db));
  rows.delete(id);
  rows.set(id, copy(row));
  if (rows.size > KEEP_ROWS) rows.delete(rows.keys().next().value!);
  keptRows.set(db, rows);
}

/** Folds freshly stored round ops into their rounds: in place when they sort last, a re-fold otherwise. */
async function foldRounds(db: Exec, added: readonly Op[]): Promise<void> {
  const byRound = new Map<string, Op[]>();
  for (const op of added) {
    if (!isRoundOp(op) || op.thread === null) continue;
    byRound.set(op.thread, [...(byRound.get(op.thread) ?? []), op]);
  }
  if (byRound.size === 0) return;
  const known = new Map<string, Kept>();
  const unread: string[] = [];
  for (const id of byRound.keys()) {
    const kept = keptRow(db, id);
    if (kept !== undefined) known.set(id, kept);
    else unread.push(id);
  }
  if (unread.length > 0) {
    for (const r of await db.select().from(tables.rounds).where(inArray(tables.rounds.id, unread))) {
      known.set(r.id, { operation: r.operation, board: r.board as Board | null, head: r.head as Head });
    }
  }
  for (const [id, fresh] of byRound) {
    fresh.sort(compareOps);
    const row = known.get(id);
    let board: Board | null;
    if (row !== undefined && compareOps(row.head as Head, fresh[0]!) < 0) {
      board = fresh.map(boardOp).reduce<Board | null>(applyBoardOp, row.board as Board | null);
    } else {
      // A late arrival (or the first op seen): fold the round from its whole log.
      board = foldBoard(await roundLog(db, id));
    }
    const last = fresh.at(-1)!;
    const head = row !== undefined && compareOps(row.head as Head, last) > 0 ? (row.head as Head) : { lamport: last.lamport, workspace: last.workspace, id: last.id };
    const values = {
      id,
      operation: last.operation,
      workspace: board?.workspace ?? null,
      board,
      head,
      completed: board?.completed != null,
      nextDeadline: board === null ? null : nextDeadline(board),
    };
    await db
      .insert(tables.rounds)
      .values(values)
      .onConflictDoUpdate({
        target: tables.rounds.id,
        set: { workspace: values.workspace, board: sql`excluded.board`, head: sql`excluded.head`, completed: values.completed, nextDeadline: values.nextDeadline },
      });
    // A stored row keeps the operation it was first written with.
    keepRow(db, id, { operation: row?.operation ?? values.operation, board, head });
  }
}

/** Keeps each round's board current (table `rounds`). */
export const roundsProjection: Projection = { name: 'rounds', apply: foldRounds };

export type RoundRow = { board: Board; operation: string };

/** One round's board and operation, or null when this node knows no such round. */
export async function loadRound(db: Exec, round: string): Promise<RoundRow | null> {
  let row = keptRow(db, round);
  if (row === undefined) {
    const [stored] = await db.select().from(tables.rounds).where(eq(tables.rounds.id, round));
    if (stored === undefined) return null;
    row = { operation: stored.operation, board: stored.board as Board | null, head: stored.head as Head };
    keepRow(db, round, row);
  }
  return row.board === null ? null : { board: row.board, operation: row.operation };
}

/** The boards of every round in these operations, by round id. */
export async function roundsOfOperations(db: Exec, operations: readonly string[]): Promise<Map<string, Board>> {
  const out = new Map<string, Board>();
  for (let i = 0; i < operations.length; i += 1000) {
    const rows = await db
      .select({ id: tables.rounds.id, board: tables.rounds.board })
      .from(tables.rounds)
      .where(and(inArray(tables.rounds.operation, operations.slice(i, i + 1000)), isNotNull(tables.rounds.board)));
    for (const r of rows) out.set(r.id, r.board as Board);
  }
  return out;
}

/** Open rounds of `workspace` whose earliest open window ends at or before `now`: what a tick settles. */
export async function dueRounds(db: Exec, workspace: string, now: Date): Promise<string[]> {
  const rows = await db
    .select({ id: tables.rounds.id })
    .from(tables.rounds)
    .where(and(eq(tables.rounds.completed, false), eq(tables.rounds.workspace, workspace), lte(tables.rounds.nextDeadline, now.toISOString())))
    .orderBy(asc(tables.rounds.nextDeadline));
  return rows.map((r) => r.id);
}
