// How many commission refusals this workspace signs for one foreign workspace: a few per window, and
// past that a count instead of an op. Anyone on a stream can send commissions signed with a key of
// their own; each refusal would otherwise be an op this workspace signs and every node stores.
import { eq, like, sql } from 'drizzle-orm';
import { tables } from '../../adapters/store/index.js';
import type { Exec } from '../../kernel/index.js';

/** Refusals signed for one foreign workspace per window. */
export const REFUSALS_PER_WINDOW = 10;
/** The window, in milliseconds. */
export const REFUSAL_WINDOW_MS = 60 * 60 * 1000;

/** Device-local, per foreign workspace: the current window and what was signed in it, and every repeat not signed. */
export type RefusalCount = { window_start: string; signed: number; repeats: number };

/**
 * Whether to sign one more refusal for a workspace with `count` so far, at `now`: the count after it
 * either way. Pure: a new window starts once the last one has run its length.
 */
export function decideRefusal(count: RefusalCount | null, now: Date, limit = REFUSALS_PER_WINDOW, windowMs = REFUSAL_WINDOW_MS): { sign: boolean; next: RefusalCount } {
  const fresh = count === null || now.getTime() - Date.parse(count.window_start) >= windowMs || Number.isNaN(Date.parse(count.window_start));
  const current: RefusalCount = fresh ? { window_start: now.toISOString(), signed: 0, repeats: count?.repeats ?? 0 } : count;
  if (current.signed < limit) return { sign: true, next: { ...current, signed: current.signed + 1 } };
  return { sign: false, next: { ...current, repeats: current.repeats + 1 } };
}

const keyOf = (workspace: string) => `refusals ${workspace}`;

/** Decides one refusal for `workspace` and records the count (in the caller's transaction). */
export async function countRefusal(db: Exec, workspace: string, now: Date): Promise<boolean> {
  const rows = await db.select().from(tables.syncState).where(eq(tables.syncState.key, keyOf(workspace)));
  const { sign, next } = decideRefusal((rows[0]?.value as RefusalCount | undefined) ?? null, now);
  await db
    .insert(tables.syncState)
    .values({ key: keyOf(workspace), value: next })
    .onConflictDoUpdate({ target: tables.syncState.key, set: { value: sql`excluded.value` } });
  return sign;
}

/** Commissions refused without a signed refusal (over the limit), by the workspace that sent them. */
export async function refusalRepeats(db: Exec): Promise<Record<string, number>> {
  const rows = await db.select().from(tables.syncState).where(like(tables.syncState.key, 'refusals %'));
  const out: Record<string, number> = {};
  for (const r of rows) {
    const n = (r.value as Partial<RefusalCount>).repeats ?? 0;
    if (n > 0) out[r.key.slice('refusals '.length)] = n;
  }
  return out;
}
