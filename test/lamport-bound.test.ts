// The Lamport clock cannot be ratcheted by foreign ops: each op may step at most LAMPORT_AHEAD_LIMIT past
// the store's clock, and the clock may not pass what the ops stored can justify (their number, plus
// LAMPORT_AHEAD_LIMIT for ops not seen yet). Real signed ops, a real PGlite store, the real ingest path,
// and the sync page that counts refusals for `nxs sync status`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { max } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { checkOps } from '../crypto/index.js';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { createStore, openStore, tables, type Store } from '../node-agent/adapters/store/index.js';
import { LAMPORT_AHEAD_LIMIT } from '../node-agent/kernel/index.js';
import { storePage } from '../node-agent/host/sync/page.js';
import { readPosition } from '../node-agent/host/sync/state.js';
import { newThreadId } from '../protocol/ids.js';
import { MAX_LAMPORT } from '../protocol/storable.js';
import { Forger } from './helpers/forge.js';

const HOME = inject('nexusHome');
let base: string;
const stores: Store[] = [];

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'nexus-lamport-'));
});
afterAll(async () => {
  for (const s of stores) await s.close().catch(() => undefined);
  rmSync(base, { recursive: true, force: true });
});

async function freshStore(): Promise<Store> {
  const dir = join(base, `store-${stores.length}`);
  await createStore(dir, HOME);
  const store = await openStore(dir);
  stores.push(store);
  return store;
}

const scope = () => {
  const t = newThreadId();
  return { operation: t, thread: t, session: null };
};

/** The store's clock, and how many ops it ever stored (its highest local_seq). */
async function clockOf(store: Store): Promise<{ clock: number; stored: number }> {
  const [row] = await store.db.select({ clock: max(tables.ops.lamport), stored: max(tables.ops.localSeq) }).from(tables.ops);
  return { clock: Number(row?.clock ?? 0), stored: Number(row?.stored ?? 0) };
}

let seq = 0;
/** Takes `texts` in as the sync client does (one page), and returns what was refused. */
async function take(store: Store, texts: string[]) {
  const { report } = await storePage(store.db, 'k', await readPosition(store.db, 'k'), ++seq, await checkOps(texts), PROJECTIONS);
  return report;
}

describe('the Lamport clock under foreign ops', () => {
  it('2,000 ops each 2^24 - 1 ahead of the one before do not ratchet the clock: the rest are refused and counted for nxs sync status', async () => {
    const store = await freshStore();
    const m = new Forger();
    const step = LAMPORT_AHEAD_LIMIT - 1;
    const texts = Array.from({ length: 2_000 }, (_, i) => m.text({ kind: 'x.custom', ...scope(), body: {}, lamport: (i + 1) * step }));
    const report = await take(store, texts);
    const { clock, stored } = await clockOf(store);
    // Only the first is within what the log can justify; it moved the clock by less than one step.
    expect(report.fresh).toHaveLength(1);
    expect(report.rejected).toEqual({ lamport_ahead: 1_999 });
    expect(clock).toBeLessThanOrEqual(stored + LAMPORT_AHEAD_LIMIT);
    expect((await readPosition(store.db, 'k')).rejected).toEqual({ lamport_ahead: 1_999 });
    // An honest peer's next op, one past the clock, is still taken.
    const honest = new Forger();
    expect((await take(store, [honest.text({ kind: 'x.custom', ...scope(), body: {}, lamport: clock + 1 })])).fresh).toHaveLength(1);
  });

  it('no sequence of foreign ops, from any number of workspaces, moves the clock past the ops stored plus the bound', async () => {
    const store = await freshStore();
    const forgers = [new Forger(), new Forger(), new Forger()];
    const { clock: start } = await clockOf(store);
    // Lamport times drawn from around the live bound (just under, at and over it, and far past it), or anywhere.
    const lamportArb = fc.oneof(
      fc.integer({ min: -3, max: 3 }).map((d) => ({ near: 'bound' as const, d })),
      fc.integer({ min: -3, max: 3 }).map((d) => ({ near: 'clock' as const, d })),
      fc.integer({ min: 1, max: MAX_LAMPORT }).map((at) => ({ near: 'anywhere' as const, d: at })),
    );
    const opArb = fc.record({ who: fc.integer({ min: 0, max: forgers.length - 1 }), at: lamportArb });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(opArb, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 4 }), async (batches) => {
        for (const batch of batches) {
          const now = await clockOf(store);
          const texts = batch.map(({ who, at }) => {
            const raw = at.near === 'bound' ? now.stored + LAMPORT_AHEAD_LIMIT + at.d * 7 : at.near === 'clock' ? now.clock + LAMPORT_AHEAD_LIMIT + at.d : at.d;
            const lamport = Math.min(MAX_LAMPORT, Math.max(1, raw));
            return forgers[who]!.text({ kind: 'x.custom', ...scope(), body: {}, lamport });
          });
          await take(store, texts);
          const after = await clockOf(store);
          expect(after.clock).toBeLessThanOrEqual(Math.max(start, after.stored + LAMPORT_AHEAD_LIMIT));
        }
      }),
      { numRuns: 40 },
    );
  });
});
