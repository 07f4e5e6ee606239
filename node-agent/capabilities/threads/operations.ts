// The operation aggregate in the store: reading folds and their ops, and the projections that keep
// the `operations` and `persona_runs` tables current as ops are stored.
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Op } from '../../../protocol/ops.js';
import { compareOps, WORKSPACE_OPERATION } from '../../../protocol/ops.js';
import { tables } from '../../adapters/store/index.js';
import { rowToOp, type Exec, type Projection } from '../../kernel/index.js';
import { appliesInOrder, applyOp, emptyOperation, foldOperation, isFinished, type OperationState } from './fold.js';

/** Reads the fold of one operation; an operation never seen is empty. */
export async function loadOperation(db: Exec, id: string): Promise<OperationState> {
  const rows = await db.select({ state: tables.operations.state }).from(tables.operations).where(eq(tables.operations.id, id));
  return (rows[0]?.state as OperationState | undefined) ?? emptyOperation(id);
}

/** The operation a thread belongs to, or null for an unknown thread. */
export async function operationOfThread(db: Exec, thread: string): Promise<string | null> {
  const rows = await db
    .select({ operation: tables.ops.operation })
    .from(tables.ops)
    .where(and(eq(tables.ops.thread, thread), eq(tables.ops.kind, 'thread.opened')))
    .limit(1);
  return rows[0]?.operation ?? null;
}

/** The operation a session belongs to, or null for an unknown session. */
export async function operationOfSession(db: Exec, session: string): Promise<string | null> {
  const rows = await db
    .select({ operation: tables.ops.operation })
    .from(tables.ops)
    .where(and(eq(tables.ops.session, session), eq(tables.ops.kind, 'session.created')))
    .limit(1);
  return rows[0]?.operation ?? null;
}

/** All ops of one thread, in fold order. */
export async function threadOps(db: Exec, thread: string): Promise<Op[]> {
  const rows = await db.select().from(tables.ops).where(eq(tables.ops.thread, thread));
  return rows.map(rowToOp).sort(compareOps);
}

/** Folds freshly stored ops into their operations: one read and one write for the whole batch. */
async function foldInto(db: Exec, added: readonly Op[]): Promise<void> {
  const byOperation = new Map<string, Op[]>();
  for (const op of added) {
    // Workspace-scoped ops (key rotations) belong to no thread tree: never folded into an operation.
    if (op.operation === WORKSPACE_OPERATION) continue;
    const list = byOperation.get(op.operation);
    if (list) list.push(op);
    else byOperation.set(op.operation, [op]);
  }
  const ids = [...byOperation.keys()];
  const known = new Map<string, OperationState>();
  for (let i = 0; i < ids.length; i += 1000) {
    const rows = await db
      .select({ id: tables.operations.id, state: tables.operations.state })
      .from(tables.operations)
      .where(inArray(tables.operations.id, ids.slice(i, i + 1000)));
    for (const r of rows) known.set(r.id, r.state as OperationState);
  }
  const rows: Array<typeof tables.operations.$inferInsert> = [];
  for (const [id, fresh] of byOperation) {
    fresh.sort(compareOps);
    let state = known.get(id) ?? emptyOperation(id);
    if (appliesInOrder(state, fresh[0]!)) {
      state = fresh.reduce(applyOp, state);
    } else {
      // A late arrival: re-fold this operation alone from its whole log.
      const all = await db.select().from(tables.ops).where(eq(tables.ops.operation, id));
      state = foldOperation(id, all.map(rowToOp));
    }
    rows.push({ id, state, finished: isFinished(state), openedLamport: fresh[0]!.lamport });
  }
  for (let i = 0; i < rows.length; i += 500) {
    await db
      .insert(tables.operations)
      .values(rows.slice(i, i + 500))
      .onConflictDoUpdate({
        target: tables.operations.id,
        set: {
          state: sql`excluded.state`,
          finished: sql`excluded.finished`,
          openedLamport: sql`least(${tables.operations.openedLamport}, excluded.opened_lamport)`,
        },
      });
  }
}

async function recordPersonaRuns(db: Exec, added: readonly Op[]): Promise<void> {
  for (const op of added) {
    if (op.kind !== 'session.turn_started') continue;
    await db
      .insert(tables.personaRuns)
      .values({ workspace: op.workspace, role: op.body.role, hash: op.body.declaration_hash, lamport: op.lamport })
      .onConflictDoUpdate({
        target: [tables.personaRuns.workspace, tables.personaRuns.role],
        set: { hash: op.body.declaration_hash, lamport: op.lamport },
        setWhere: sql`${tables.personaRuns.lamport} < ${op.lamport}`,
      });
  }
}

/** The declaration hash a persona last started under, or null when it never ran. */
export async function lastDeclaration(db: Exec, workspace: string, role: string): Promise<string | null> {
  const rows = await db
    .select({ hash: tables.personaRuns.hash })
    .from(tables.personaRuns)
    .where(and(eq(tables.personaRuns.workspace, workspace), eq(tables.personaRuns.role, role)));
  return rows[0]?.hash ?? null;
}


/** Keeps each operation's fold current: in place for ops that sort last, a re-fold for a late arrival. */
export const operationsProjection: Projection = { name: 'operations', apply: foldInto };

/** Remembers the declaration each persona last started under (for declaration_changed). */
export const personaRunsProjection: Projection = { name: 'persona_runs', apply: recordPersonaRuns };
