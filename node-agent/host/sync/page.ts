// Storing one page of stream ops: every op checked on its own, the page stored and the cursor moved in
// one transaction. What no store could keep (protocol/storable.ts), what is badly signed or too far ahead
// is counted by reason and skipped, so one op can never hold the cursor back.
import type { CheckedOp } from '../../../crypto/index.js';
import { ingestChecked, type Exec, type IngestReport, type Projection } from '../../kernel/index.js';
import { writePosition, type HistoryPosition, type SyncPosition } from './state.js';

export type StoredPage = { next: SyncPosition; report: IngestReport };

/** `counts` with `more` added, reason by reason. */
function addCounts(counts: Readonly<Record<string, number>>, more: Readonly<Record<string, number>>): Record<string, number> {
  const sum = { ...counts };
  for (const [reason, n] of Object.entries(more)) sum[reason] = (sum[reason] ?? 0) + n;
  return sum;
}

type Db = { transaction<T>(fn: (tx: Exec) => Promise<T>): Promise<T> };

/** Takes in `checked` and writes the position `advance` makes of `position`, refusals added, in one transaction. */
function storeChecked(db: Db, key: string, position: SyncPosition, checked: readonly CheckedOp[], projections: readonly Projection[], advance: (p: SyncPosition) => SyncPosition): Promise<StoredPage> {
  return db.transaction(async (tx) => {
    const report = await ingestChecked(tx, checked, { projections });
    const next = { ...advance(position), rejected: addCounts(position.rejected, report.rejected) };
    await writePosition(tx, key, next);
    return { next, report };
  });
}

/**
 * Takes in a page of checked ops whose last stream seq is `lastSeq` and writes the position with the
 * cursor past it, in one transaction: a crash never skips or re-counts. Refusals add to `position.rejected`.
 */
export function storePage(db: Db, key: string, position: SyncPosition, lastSeq: number, checked: readonly CheckedOp[], projections: readonly Projection[]): Promise<StoredPage> {
  return storeChecked(db, key, position, checked, projections, (p) => ({ ...p, cursor: Math.max(lastSeq, p.cursor) }));
}

/**
 * Takes in checked ops of the stream's history (a join's background pass) and writes the position with
 * its history moved by `move`, in one transaction; the live cursor is left where it is. Ops already
 * here are dropped by id, so ops fetched twice (first, then in the full pass) are stored once.
 */
export function storeHistory(
  db: Db,
  key: string,
  position: SyncPosition,
  move: (h: HistoryPosition) => HistoryPosition,
  checked: readonly CheckedOp[],
  projections: readonly Projection[],
): Promise<StoredPage> {
  return storeChecked(db, key, position, checked, projections, (p) => {
    const moved = move(p.history!);
    return { ...p, history: { ...moved, fetched: moved.fetched + checked.length } };
  });
}

/** One log line for a page's refusals (the first few named), or null when there were none. */
export function refusalLine(report: IngestReport): string | null {
  if (report.refusals.length === 0) return null;
  const shown = report.refusals.slice(0, 5).map((r) => `${r.id ?? '?'} ${r.reason}: ${r.why}`);
  return `${report.refusals.length - report.held} op(s) refused, ${report.held} held pending; ${shown.join('; ')}${report.refusals.length > 5 ? '; ...' : ''}`;
}
