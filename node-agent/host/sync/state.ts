// The sync position kept in the store (device-local): the stream cursor, the acknowledged outbox mark, reject counts.
import { and, count, eq, gt, sql } from 'drizzle-orm';
import type { Exec } from '../../kernel/index.js';
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
};

/** Positions are kept per relay and stream: binding elsewhere starts from the beginning of that stream. */
export function positionKey(relay: string, stream: string): string {
  return `position ${relay} ${stream}`;
}

export async function readPosition(db: Exec, key: string): Promise<SyncPosition> {
  const rows = await db.select().from(tables.syncState).where(eq(tables.syncState.key, key));
  const v = rows[0]?.value as Partial<SyncPosition> | undefined;
  return { cursor: v?.cursor ?? 0, acked: v?.acked ?? 0, rejected: v?.rejected ?? {}, acked_seq: v?.acked_seq ?? 0 };
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
