// The highest Lamport time in an open store's log, read once and then kept by the writes, instead of a
// `max(lamport)` query before every append (one query in nine of a busy store's). The process holding a
// store is its only writer, and every op reaches the log through `appendOps` or `ingestOps`, which raise
// the kept time; a transaction's own raise reaches the store's time when it commits (`keptPerStore`).
import { max } from 'drizzle-orm';
import { keptPerStore, tables } from '../adapters/store/index.js';
import type { Exec } from './db.js';

const clocks = keptPerStore<number>((stored, committed) => Math.max(stored ?? 0, committed));

/** The highest Lamport time in the log `db` writes to (0 when it is empty). */
export async function logClock(db: Exec): Promise<number> {
  const kept = clocks.get(db);
  if (kept !== undefined) return kept;
  const [row] = await db.select({ top: max(tables.ops.lamport) }).from(tables.ops);
  const top = Number(row?.top ?? 0);
  clocks.set(db, top);
  return top;
}

/** Tells the kept clock that ops up to `lamport` were written through `db`; with none kept, the next append reads the log. */
export function raiseLogClock(db: Exec, lamport: number): void {
  const kept = clocks.get(db);
  if (kept !== undefined && lamport > kept) clocks.set(db, lamport);
}
