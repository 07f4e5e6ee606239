// The operation aggregate in the store: reading folds and their ops, and the projections that keep
// the `operations` and `persona_runs` tables current as ops are stored.
import { and, count, eq, inArray, isNotNull, isNull, sql } from 'drizzle-orm';
import { PgTransaction } from 'drizzle-orm/pg-core';
import type { Op } from '../../../protocol/ops.js';
import { compareOps, WORKSPACE_OPERATION } from '../../../protocol/ops.js';
import { sqlInteger, sqlLiteral } from '../../../infra/index.js';
import { afterCommit, beforeCommit, hookedStore, tables } from '../../adapters/store/index.js';
import { opColumns, rowToOp, type Exec, type Projection } from '../../kernel/index.js';
import { appliesInOrder, emptyOperation, FOLD_VERSION, foldRun, foldWithVerdicts, isFinished, type InertReason, type OperationState, type SessionState, type ThreadState } from './fold.js';

/**
 * The folds a transaction has read or written, by operation: a command loads its operation, then appends
 * several times, and each append used to read the whole state back and parse it again (an operation of a
 * few hundred turns is a large document). Only a transaction keeps them: outside one, another writer may
 * have moved the state between two reads. The fold is pure, so a kept state is never changed in place.
 */
const kept = new WeakMap<Exec, Map<string, OperationState>>();

function keptBy(db: Exec): Map<string, OperationState> | null {
  if (!(db instanceof PgTransaction)) return null;
  let states = kept.get(db);
  if (states === undefined) kept.set(db, (states = new Map()));
  return states;
}

/**
 * The states committed to a store, as this process last wrote or read them, by operation: the process
 * that holds a store is its only writer (the store lock), so what it committed stays true until it
 * commits again. Every command of a long operation used to read and parse its whole state again.
 * Bounded; the least recently used goes first. Like the kept states, a cached state is never changed in place.
 */
const committed = new WeakMap<object, Map<string, OperationState>>();
const COMMITTED_KEPT = 256;

function committedOf(db: Exec): Map<string, OperationState> | null {
  const store = hookedStore(db);
  if (store === null) return null;
  let states = committed.get(store);
  if (states === undefined) committed.set(store, (states = new Map()));
  return states;
}

function remember(states: Map<string, OperationState>, state: OperationState): void {
  states.delete(state.id);
  states.set(state.id, state);
  if (states.size > COMMITTED_KEPT) states.delete(states.keys().next().value!);
}

/**
 * What the store holds for each operation a transaction has read (null: no row yet), as it first read it:
 * the state its end writes is compared with this, so only the threads and sessions that moved are written.
 */
const storedBy = new WeakMap<Exec, Map<string, OperationState | null>>();

function noteStored(db: Exec, id: string, state: OperationState | null): void {
  if (!(db instanceof PgTransaction)) return;
  let stored = storedBy.get(db);
  if (stored === undefined) storedBy.set(db, (stored = new Map()));
  if (!stored.has(id)) stored.set(id, state);
}

/** An operation's row holds its state without the threads and sessions, which are rows of operation_parts. */
type StoredCore = Omit<OperationState, 'threads' | 'sessions'>;

function coreOf(state: OperationState): StoredCore {
  const { threads: _threads, sessions: _sessions, ...core } = state;
  return core;
}

/**
 * The rows of operation_parts of `ids`, read through its primary key id by id. Not `operation in (...)`:
 * PGlite's planner has no statistics and takes each value of a list for 0.5% of the table, so a list of a
 * hundred open operations reads as half of it and the planner reads the whole table instead (200,000 parts
 * for 100 on a store of 100,000 finished operations, 0.4-1.7 s of every status). Joined laterally, each id
 * is a lookup of its own, which an index answers whatever the table holds; `offset 0` keeps the planner
 * from folding the lookup back into one join over the whole table.
 */
async function partsOf(db: Exec, ids: readonly string[]): Promise<Array<{ operation: string; kind: string; key: string; value: unknown }>> {
  const r = (await db.execute(
    sql`select p.operation, p.kind, p.key, p.value from unnest(${sql.param(ids)}::text[]) as w(id) cross join lateral (select * from operation_parts where operation = w.id offset 0) p`,
  )) as unknown as { rows: Array<{ operation: string; kind: string; key: string; value: unknown }> };
  return r.rows;
}

/** Whole states from operations rows: their threads and sessions put back from operation_parts, one read per 1,000. */
export async function withParts(db: Exec, rows: ReadonlyArray<{ id: string; state: unknown }>): Promise<OperationState[]> {
  const states = new Map<string, OperationState>();
  for (const r of rows) states.set(r.id, { ...(r.state as StoredCore), threads: {}, sessions: {} } as OperationState);
  const ids = [...states.keys()];
  for (let i = 0; i < ids.length; i += 1000) {
    const parts = await partsOf(db, ids.slice(i, i + 1000));
    for (const p of parts) {
      const state = states.get(p.operation)!;
      if (p.kind === 'thread') state.threads[p.key] = p.value as ThreadState;
      else state.sessions[p.key] = p.value as SessionState;
    }
  }
  return rows.map((r) => states.get(r.id)!);
}

/** The stored states of these operations, by id; an operation with no row is absent. */
async function readStates(db: Exec, ids: readonly string[]): Promise<Map<string, OperationState>> {
  const out = new Map<string, OperationState>();
  for (let i = 0; i < ids.length; i += 1000) {
    const rows = await db
      .select({ id: tables.operations.id, state: tables.operations.state })
      .from(tables.operations)
      .where(inArray(tables.operations.id, ids.slice(i, i + 1000)));
    for (const state of await withParts(db, rows)) out.set(state.id, state);
  }
  return out;
}

/** Reads the fold of one operation; an operation never seen is empty. One folded by older rules is folded again. */
export async function loadOperation(db: Exec, id: string): Promise<OperationState> {
  const states = keptBy(db);
  const known = states?.get(id);
  if (known !== undefined) return known;
  const cache = committedOf(db);
  const cached = cache?.get(id);
  if (cached !== undefined) {
    remember(cache!, cached);
    noteStored(db, id, cached);
    states?.set(id, cached);
    return cached;
  }
  const state = (await readStates(db, [id])).get(id);
  noteStored(db, id, state ?? null);
  if (state === undefined) return emptyOperation(id);
  if (state.v !== FOLD_VERSION) {
    // Not kept: the stored row still holds the old fold, which the next append re-folds from the log.
    const all = await db.select(opColumns).from(tables.ops).where(eq(tables.ops.operation, id));
    return foldWithVerdicts(id, all.map(rowToOp)).state;
  }
  // What a transaction reads of this table is committed: its own states are written only at its end.
  if (cache !== null) remember(cache, state);
  states?.set(id, state);
  return state;
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

/**
 * All ops of one thread, in fold order. `effective`: only those the fold took (no inert op), which is
 * what a person reads and what a session's prompt is built from.
 */
export async function threadOps(db: Exec, thread: string, opts: { effective?: boolean } = {}): Promise<Op[]> {
  const where = opts.effective ? and(eq(tables.ops.thread, thread), isNull(tables.ops.inert)) : eq(tables.ops.thread, thread);
  const rows = await db.select(opColumns).from(tables.ops).where(where);
  return rows.map(rowToOp).sort(compareOps);
}

/** Of these ops, the ids the fold took nothing from. */
export async function inertIds(db: Exec, ids: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (let i = 0; i < ids.length; i += 1000) {
    const rows = await db
      .select({ id: tables.ops.id })
      .from(tables.ops)
      .where(and(inArray(tables.ops.id, ids.slice(i, i + 1000)), isNotNull(tables.ops.inert)));
    for (const r of rows) out.add(r.id);
  }
  return out;
}

/**
 * Counts inert ops by reason, reading only the partial index on `inert`: the reasons are walked one by
 * one (each the least above the last), then each is counted by equality. PGlite never analyzes its
 * tables, and without statistics the planner took `group by inert` as a scan of every op: 42 ms on a
 * store of 100,000 ops with none inert, against under 1 ms this way (`sync status` asks each time).
 */
export const INERT_COUNTS_SQL =
  'with recursive r(reason) as (' +
  'select min(inert) from ops where inert is not null ' +
  'union all select (select min(inert) from ops where inert > r.reason) from r where r.reason is not null) ' +
  'select reason, (select count(*) from ops where inert = r.reason)::int as n from r where reason is not null';

/** Inert ops stored here, by reason (see INERT_REASONS). */
export async function inertCounts(db: Exec): Promise<Record<string, number>> {
  const { rows } = (await db.execute(sql.raw(INERT_COUNTS_SQL))) as unknown as { rows: Array<{ reason: string; n: number }> };
  return Object.fromEntries(rows.map((r) => [r.reason, Number(r.n)]));
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
  const states = keptBy(db);
  const known = new Map<string, OperationState>();
  // What the store holds for each, before this batch: what the write below is compared with.
  const stored = new Map<string, OperationState | null>();
  // Only what this transaction has not read yet is read here (a kept state was read or folded by it).
  const cache = committedOf(db);
  const ids = [...byOperation.keys()].filter((id) => {
    const kept = states?.get(id);
    if (kept !== undefined) {
      known.set(id, kept);
      return false;
    }
    const cached = cache?.get(id);
    if (cached !== undefined) {
      known.set(id, cached);
      stored.set(id, cached);
      noteStored(db, id, cached);
    }
    return cached === undefined;
  });
  const read = await readStates(db, ids);
  for (const id of ids) {
    const state = read.get(id);
    if (state !== undefined) known.set(id, state);
    stored.set(id, state ?? null);
    noteStored(db, id, state ?? null);
  }
  const rows: StateRow[] = [];
  // The fold's verdicts go onto the ops themselves: fresh ops were stored with none.
  const inert = new Map<InertReason, string[]>();
  const mark = (verdicts: Iterable<[string, InertReason]>) => {
    for (const [op, reason] of verdicts) inert.set(reason, [...(inert.get(reason) ?? []), op]);
  };
  for (const [id, fresh] of byOperation) {
    fresh.sort(compareOps);
    const stored = known.get(id);
    let state: OperationState;
    if (stored === undefined || (stored.v === FOLD_VERSION && appliesInOrder(stored, fresh[0]!))) {
      state = foldRun(stored ?? emptyOperation(id), fresh, (op, reason) => mark([[op.id, reason]]));
    } else {
      // A late arrival (or a state folded by older rules): re-fold this operation alone from its whole
      // log, and decide every op's verdict again (an op inert for want of its thread may now move it).
      const all = await db.select({ ...opColumns, inert: tables.ops.inert }).from(tables.ops).where(eq(tables.ops.operation, id));
      const folded = foldWithVerdicts(id, all.map(rowToOp));
      state = folded.state;
      if (all.some((r) => r.inert !== null)) await db.update(tables.ops).set({ inert: null }).where(and(eq(tables.ops.operation, id), isNotNull(tables.ops.inert)));
      mark(folded.inert);
    }
    states?.set(id, state);
    rows.push({ id, state, finished: isFinished(state), shown: Object.keys(state.threads).length > 0, openedLamport: fresh[0]!.lamport });
  }
  for (const [reason, ids] of inert) {
    for (let i = 0; i < ids.length; i += 1000) await db.update(tables.ops).set({ inert: reason }).where(inArray(tables.ops.id, ids.slice(i, i + 1000)));
  }
  if (rows.length === 0) return;
  const pending = pendingStates(db);
  if (pending === null) {
    // A state is its row and its parts: written together, even when the caller holds no transaction.
    const write = (x: Exec) => writeStates(x, rows, stored);
    await (db instanceof PgTransaction ? write(db) : db.transaction(write));
    if (cache !== null) for (const row of rows) remember(cache, row.state as OperationState);
    return;
  }
  // In a transaction: the state is written once, at its end, whatever the number of appends before.
  for (const row of rows) {
    const earlier = pending.get(row.id);
    pending.set(row.id, earlier === undefined ? row : { ...row, openedLamport: Math.min(earlier.openedLamport!, row.openedLamport!) });
  }
}

type StateRow = typeof tables.operations.$inferInsert;

/** The states a transaction has yet to write, by operation; null outside a transaction that runs commit hooks. */
const pendingByTx = new WeakMap<Exec, Map<string, StateRow>>();

function pendingStates(db: Exec): Map<string, StateRow> | null {
  if (!(db instanceof PgTransaction)) return null;
  let pending = pendingByTx.get(db);
  if (pending !== undefined) return pending;
  const fresh = new Map<string, StateRow>();
  if (!beforeCommit(db, () => writeStates(db, [...fresh.values()], storedBy.get(db) ?? new Map()))) return null;
  // Once committed, what was written is what the next reader gets.
  const cache = committedOf(db);
  if (cache !== null) afterCommit(db, () => fresh.forEach((row) => remember(cache, row.state as OperationState)));
  pendingByTx.set(db, fresh);
  return fresh;
}

type PartRow = typeof tables.operationParts.$inferInsert;

/**
 * Writes folded states: each operation's row, and of its threads and sessions only those that differ from
 * what the store held (`stored`; the fold is pure, so an entry it did not move is the very object it read).
 * An operation whose stored state is not known here has all its parts written again.
 */
async function writeStates(db: Exec, rows: readonly StateRow[], stored: ReadonlyMap<string, OperationState | null>): Promise<void> {
  const upserts: PartRow[] = [];
  const rewrite: string[] = [];
  const gone: Array<{ operation: string; kind: string; keys: string[] }> = [];
  for (const row of rows) {
    const state = row.state as OperationState;
    const before = stored.get(row.id);
    if (before === undefined) rewrite.push(row.id);
    for (const [kind, now, then] of [
      ['thread', state.threads, before?.threads],
      ['session', state.sessions, before?.sessions],
    ] as const) {
      for (const [key, value] of Object.entries(now)) if (then?.[key] !== value) upserts.push({ operation: row.id, kind, key, value });
      const keys = before ? Object.keys(then!).filter((key) => !(key in now)) : [];
      if (keys.length > 0) gone.push({ operation: row.id, kind, keys });
    }
  }
  for (let i = 0; i < rewrite.length; i += 1000) await db.delete(tables.operationParts).where(inArray(tables.operationParts.operation, rewrite.slice(i, i + 1000)));
  for (const g of gone) {
    const p = tables.operationParts;
    await db.delete(p).where(and(eq(p.operation, g.operation), eq(p.kind, g.kind), inArray(p.key, g.keys)));
  }
  // Multi-row INSERTs of literals, as for ops (kernel/log.ts): a catch-up page writes hundreds of states,
  // and building them as drizzle rows with bound parameters cost more than the writes.
  for (let i = 0; i < upserts.length; i += 500) {
    const values = upserts.slice(i, i + 500).map((u) => `(${sqlLiteral(u.operation)},${sqlLiteral(u.kind)},${sqlLiteral(u.key)},${sqlLiteral(JSON.stringify(u.value))})`);
    await db.execute(sql.raw(`insert into operation_parts (operation, kind, key, value) values ${values.join(',')} on conflict (operation, kind, key) do update set value = excluded.value`));
  }
  for (let i = 0; i < rows.length; i += 500) {
    const values = rows
      .slice(i, i + 500)
      .map((row) => `(${sqlLiteral(row.id)},${sqlLiteral(JSON.stringify(coreOf(row.state as OperationState)))},${row.finished},${row.shown ?? true},${sqlInteger(row.openedLamport)})`);
    await db.execute(
      sql.raw(
        `insert into operations (id, state, finished, shown, opened_lamport) values ${values.join(',')} ` +
          'on conflict (id) do update set state = excluded.state, finished = excluded.finished, shown = excluded.shown, opened_lamport = least(operations.opened_lamport, excluded.opened_lamport)',
      ),
    );
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
