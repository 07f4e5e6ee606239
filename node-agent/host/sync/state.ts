// The sync position kept in the store (device-local): the stream cursor, the acknowledged outbox mark, reject counts.
import { and, count, eq, gt, sql } from 'drizzle-orm';
import type { Exec } from '../../kernel/index.js';
import type { SyncHistory } from '../../../protocol/commands.js';
import { tables } from '../../adapters/store/index.js';

export type SyncPosition = {
  /** Highest stream seq whose ops are stored here. */
  cursor: number;
  /** Highest local_seq of an op authored here that the relay acknowledged. */
  acked: number;
  /** Ops refused on arrival, by reason. */
  rejected: Record<string, number>;
  /**
   * Highest stream seq the relay gave an op of ours in an ack. A relay whose head is below it has lost
   * ops it acknowledged (restored from a backup): ours are pushed again.
   */
  acked_seq?: number;
  /** Set when this node joined the stream at its head and fetches what came before in the background. */
  history?: HistoryPosition;
};

/**
 * A join's background history. The live feed began after seq `from`. The ops of `priority` (this
 * workspace and the ones it trusts) up to `from` are fetched first: `priority_done` are the workspaces
 * whose ops are all here, and the pass over the others has gone to `priority_through`. Then every other
 * op up to `from`, the full pass, to `through`. Seqs count gaplessly from 1, so `through` >= `from`
 * means every op of the stream is here.
 */
export type HistoryPosition = {
  from: number;
  priority: string[];
  priority_done: string[];
  priority_through: number;
  through: number;
  /** Ops the history passes took in. */
  fetched: number;
};

/** Every op of the priority workspaces is here. */
export function priorityComplete(h: HistoryPosition): boolean {
  return h.through >= h.from || h.priority.every((w) => h.priority_done.includes(w));
}

/** Every op of the stream up to where the live feed began is here. */
export function historyComplete(h: HistoryPosition): boolean {
  return h.through >= h.from;
}

/** The history as `nxs sync status` shows it. */
export function historyReport(h: HistoryPosition | undefined): SyncHistory | null {
  if (h === undefined) return null;
  return { from: h.from, through: Math.min(h.through, h.from), fetched: h.fetched, priority: h.priority, priority_complete: priorityComplete(h), complete: historyComplete(h) };
}

/** Positions are kept per relay and stream: binding elsewhere starts from the beginning of that stream. */
export function positionKey(relay: string, stream: string): string {
  return `position ${relay} ${stream}`;
}

export async function readPosition(db: Exec, key: string): Promise<SyncPosition> {
  const rows = await db.select().from(tables.syncState).where(eq(tables.syncState.key, key));
  const v = rows[0]?.value as Partial<SyncPosition> | undefined;
  return { cursor: v?.cursor ?? 0, acked: v?.acked ?? 0, rejected: v?.rejected ?? {}, acked_seq: v?.acked_seq ?? 0, ...(v?.history ? { history: v.history } : {}) };
}

export async function writePosition(db: Exec, key: string, pos: SyncPosition): Promise<void> {
  await db
    .insert(tables.syncState)
    .values({ key, value: pos })
    .onConflictDoUpdate({ target: tables.syncState.key, set: { value: sql`excluded.value` } });
}

/** Ops authored on this node that the relay has not acknowledged yet, oldest first. */
export async function outbox(db: Exec, origin: string, after: number, limit: number) {
  return db
    .select()
    .from(tables.ops)
    .where(and(eq(tables.ops.origin, origin), gt(tables.ops.localSeq, after)))
    .orderBy(tables.ops.localSeq)
    .limit(limit);
}

export async function outboxSize(db: Exec, origin: string, after: number): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(tables.ops)
    .where(and(eq(tables.ops.origin, origin), gt(tables.ops.localSeq, after)));
  return Number(row?.n ?? 0);
}
