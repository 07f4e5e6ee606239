// The node store's tables: the op log, its folds, and device-local facts that never sync.
import { bigint, bigserial, boolean, index, integer, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

/** The op log. Append-only and idempotent on `id`; everything else here is derived from it or device-local. */
export const ops = pgTable(
  'ops',
  {
    id: text('id').primaryKey(),
    /** Arrival order on this node; the sync outbox and cursor read it. Folds never do. */
    localSeq: bigserial('local_seq', { mode: 'number' }).notNull().unique(),
    workspace: text('workspace').notNull(),
    origin: text('origin').notNull(),
    lamport: bigint('lamport', { mode: 'number' }).notNull(),
    ts: text('ts').notNull(),
    kind: text('kind').notNull(),
    operation: text('operation').notNull(),
    thread: text('thread'),
    session: text('session'),
    body: jsonb('body').notNull(),
    sig: text('sig'),
  },
  (t) => [
    index('ops_operation_idx').on(t.operation, t.lamport),
    index('ops_thread_idx').on(t.thread, t.lamport),
    index('ops_session_idx').on(t.session),
    index('ops_lamport_idx').on(t.lamport),
    // The sync outbox: ops authored on this node, in the order they were written.
    index('ops_origin_idx').on(t.origin, t.localSeq),
  ],
);

/** One row per operation (thread tree): the fold of its ops, rebuilt from the log whenever needed. */
export const operations = pgTable(
  'operations',
  {
    id: text('id').primaryKey(),
    state: jsonb('state').notNull(),
    finished: boolean('finished').notNull(),
    openedLamport: bigint('opened_lamport', { mode: 'number' }).notNull(),
  },
  (t) => [index('operations_finished_idx').on(t.finished, t.openedLamport)],
);

/** Which declaration each persona last started under, for the declaration_changed warning. */
export const personaRuns = pgTable(
  'persona_runs',
  {
    workspace: text('workspace').notNull(),
    role: text('role').notNull(),
    hash: text('hash').notNull(),
    lamport: bigint('lamport', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspace, t.role] })],
);

/** Device-local: the processes behind each session turn on this machine. Never synced. */
export const sessionProcs = pgTable(
  'session_procs',
  {
    session: text('session').notNull(),
    turn: integer('turn').notNull(),
    sidecarPid: integer('sidecar_pid'),
    runtimePid: integer('runtime_pid'),
    startedAt: text('started_at').notNull(),
    endedAt: text('ended_at'),
    exitCode: integer('exit_code'),
    signal: text('signal'),
  },
  (t) => [primaryKey({ columns: [t.session, t.turn] })],
);

/** Device-local: this node's sync position per workspace (stream cursor, acknowledged outbox mark, counters). */
export const syncState = pgTable('sync_state', {
  key: text('key').primaryKey(),
  value: jsonb('value').notNull(),
});
