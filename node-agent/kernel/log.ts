// Appends ops to the store and keeps each operation's fold current, in the same transaction.
import { and, eq, inArray, max, sql } from 'drizzle-orm';
import { ulid } from 'ulidx';
import { signOp, type OpSigner } from '../../crypto/index.js';
import type { Op, OpPayload } from '../../protocol/ops.js';
import { compareOps, WORKSPACE_OPERATION } from '../../protocol/ops.js';
import type { Db } from '../adapters/store/index.js';
import { tables } from '../adapters/store/index.js';
import { appliesInOrder, applyOp, emptyOperation, foldOperation, isFinished, type OperationState } from './fold.js';

export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
export type Exec = Db | Tx;

/** What a command asks to append; the log adds identity, order and time. */
export type OpDraft = { operation: string; thread: string | null; session: string | null } & OpPayload;

/** Who appends: this workspace, this node, its clock, and the key that signs every op it writes. */
export type Author = { workspace: string; origin: string; now: () => Date; signer: OpSigner };

/** An op taken in from elsewhere, with its exact wire text and signature when it travelled signed. */
export type IncomingOp = Op & { raw?: string | null; sig?: string | null };

function rowToOp(row: typeof tables.ops.$inferSelect): Op {
  return {
    id: row.id,
    workspace: row.workspace,
    origin: row.origin,
    lamport: row.lamport,
    ts: row.ts,
    operation: row.operation,
    thread: row.thread,
    session: row.session,
    kind: row.kind,
    body: row.body,
    key: row.key ?? '',
  } as Op;
}

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
async function foldInto(db: Exec, added: Op[]): Promise<Map<string, OperationState>> {
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
  const result = new Map<string, OperationState>();
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
    result.set(id, state);
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
  await recordPersonaRuns(db, added);
  await recordKeys(db, added);
  return result;
}

/** Certified keys: every stored rotation op adds its new key to its workspace's chain. */
async function recordKeys(db: Exec, added: Op[]): Promise<void> {
  const rows = added
    .filter((op) => op.kind === 'workspace.key_rotated')
    .map((op) => ({ workspace: op.workspace, key: (op.body as { new_key: string }).new_key, signedBy: op.key, op: op.id, lamport: op.lamport, ts: op.ts }));
  if (rows.length > 0) await db.insert(tables.workspaceKeys).values(rows).onConflictDoNothing();
}

async function recordPersonaRuns(db: Exec, added: Op[]): Promise<void> {
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

/**
 * Appends ops authored here. Each gets the next Lamport time, so they sort after
 * everything this node has seen and fold in place, and is signed by the author's key:
 * its exact wire text is stored and is what sync pushes. Call inside a transaction.
 */
export async function appendOps(db: Exec, author: Author, drafts: readonly OpDraft[]): Promise<{ ops: Op[]; states: Map<string, OperationState> }> {
  if (drafts.length === 0) return { ops: [], states: new Map() };
  const [row] = await db.select({ top: max(tables.ops.lamport) }).from(tables.ops);
  let lamport = row?.top ?? 0;
  const ts = author.now().toISOString();
  const signer = author.signer;
  const ops = drafts.map(
    (d) => ({ id: ulid(), workspace: author.workspace, origin: author.origin, lamport: ++lamport, ts, kind: d.kind, operation: d.operation, thread: d.thread, session: d.session, body: d.body, key: signer.key }) as Op,
  );
  await db.insert(tables.ops).values(ops.map((op) => opRow({ ...op, ...signOp(op, signer) })));
  return { ops, states: await foldInto(db, ops) };
}

/** The stored row of an op; its signature and exact text travel with it when it has them. */
function opRow(op: Op & { key?: string | null; sig?: string | null; raw?: string | null }): typeof tables.ops.$inferInsert {
  return {
    id: op.id,
    workspace: op.workspace,
    origin: op.origin,
    lamport: op.lamport,
    ts: op.ts,
    kind: op.kind,
    operation: op.operation,
    thread: op.thread,
    session: op.session,
    body: op.body,
    key: op.key ?? null,
    sig: op.sig ?? null,
    raw: op.raw ?? null,
  };
}

/**
 * Takes in ops that arrived from elsewhere: duplicates are dropped by id, and every
 * touched operation ends in the state its full op set folds to, whatever the arrival order.
 * Trusts what it is given: sync calls it only with verified ops (see `ingestChecked`).
 */
export async function ingestOps(db: Exec, incoming: readonly IncomingOp[]): Promise<Op[]> {
  if (incoming.length === 0) return [];
  const ids = incoming.map((op) => op.id);
  const known = new Set(
    (await db.select({ id: tables.ops.id }).from(tables.ops).where(inArray(tables.ops.id, ids))).map((r) => r.id),
  );
  const seen = new Set<string>();
  const fresh = incoming.filter((op) => !known.has(op.id) && !seen.has(op.id) && seen.add(op.id));
  if (fresh.length === 0) return [];
  await db.insert(tables.ops).values(
    fresh.map(opRow),
  );
  await foldInto(db, fresh);
  return fresh;
}

export { rowToOp };
