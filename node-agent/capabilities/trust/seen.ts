// The ids of stamps already admitted, kept in the workspace's store (the device-local `stamps_seen` table)
// until each stamp can no longer pass on its own (past its exp plus the clock tolerance). An id is claimed
// inside the transaction that admits the commission, so the claim and the session it lets in commit
// together or not at all, whichever host (the node or a direct command) holds the store.
import { sql } from 'drizzle-orm';
import type { Exec } from '../../kernel/index.js';

// Plain SQL on the table declared in adapters/store/schema.ts: trust/ stays loadable without the store adapter.
type Rows<T> = { rows: T[] };

/**
 * Claims `jti` in the store: true when it was not seen before (now it is, until `forgetAfterSec`), false
 * for a replay. Ids whose time has passed are dropped first. Run it in the admitting transaction.
 */
export async function claimStamp(db: Exec, jti: string, forgetAfterSec: number, nowSec: number): Promise<boolean> {
  await db.execute(sql`delete from stamps_seen where forget_after < ${nowSec}`);
  const added = (await db.execute(
    sql`insert into stamps_seen (jti, forget_after) values (${jti}, ${forgetAfterSec}) on conflict (jti) do nothing returning jti`,
  )) as unknown as Rows<{ jti: string }>;
  return added.rows.length === 1;
}

/** Whether `jti` was admitted here and is still remembered. */
export async function stampSeen(db: Exec, jti: string): Promise<boolean> {
  const found = (await db.execute(sql`select 1 from stamps_seen where jti = ${jti}`)) as unknown as Rows<unknown>;
  return found.rows.length > 0;
}
