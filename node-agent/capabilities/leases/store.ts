// The lease in the store: one row per workspace holding the fold of its `lease.*` ops, kept current by a
// projection in the very transaction that appends them, and re-folded from the log when an op arrives late.
import { and, eq, like } from 'drizzle-orm';
import { emptyLeaseState, type LeaseOpPayload, type LeaseState } from '../../../protocol/leases.js';
import { compareOps, type Op } from '../../../protocol/ops.js';
import { tables } from '../../adapters/store/index.js';
import { opColumns, rowToOp, type Exec, type Projection } from '../../kernel/index.js';
import { applyLeaseFact, foldLease } from './state.js';

type Head = { lamport: number; workspace: string; id: string };

const isLeaseOp = (op: Op): boolean => op.kind.startsWith('lease.');

function payload(op: Op): LeaseOpPayload {
  return { kind: op.kind, body: op.body } as LeaseOpPayload;
}

/** The lease of `workspace` as its ops fold; a workspace whose lease never recorded anything has the empty one. */
export async function loadLease(db: Exec, workspace: string): Promise<LeaseState> {
  const rows = await db.select({ state: tables.leases.state }).from(tables.leases).where(eq(tables.leases.workspace, workspace));
  return (rows[0]?.state as LeaseState | undefined) ?? emptyLeaseState();
}

async function foldInto(db: Exec, added: readonly Op[]): Promise<void> {
  const byWorkspace = new Map<string, Op[]>();
  for (const op of added) {
    if (!isLeaseOp(op)) continue;
    const list = byWorkspace.get(op.workspace);
    if (list) list.push(op);
    else byWorkspace.set(op.workspace, [op]);
  }
  for (const [workspace, fresh] of byWorkspace) {
    fresh.sort(compareOps);
    const rows = await db.select().from(tables.leases).where(eq(tables.leases.workspace, workspace));
    const row = rows[0];
    let state: LeaseState;
    if (row === undefined || compareOps(row.head as Head, fresh[0]!) < 0) {
      state = fresh.map(payload).reduce(applyLeaseFact, (row?.state as LeaseState | undefined) ?? emptyLeaseState());
    } else {
      // A late arrival (a fact synced from another node of the same workspace): fold the whole log again.
      const all = await db
        .select(opColumns)
        .from(tables.ops)
        .where(and(eq(tables.ops.workspace, workspace), like(tables.ops.kind, 'lease.%')));
      state = foldLease(all.map(rowToOp).sort(compareOps).map(payload));
    }
    const last = fresh[fresh.length - 1]!;
    const top: Head = row !== undefined && compareOps(row.head as Head, last) > 0 ? (row.head as Head) : { lamport: last.lamport, workspace: last.workspace, id: last.id };
    await db
      .insert(tables.leases)
      .values({ workspace, state, head: top })
      .onConflictDoUpdate({ target: tables.leases.workspace, set: { state, head: top } });
  }
}

/** Keeps each workspace's lease row equal to the fold of its lease facts. */
export const leaseProjection: Projection = { name: 'leases', apply: foldInto };
