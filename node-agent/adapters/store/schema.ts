// The node store's tables: the op log, its folds, and device-local facts that never sync.
import { sql } from 'drizzle-orm';
import { bigint, bigserial, boolean, index, integer, json, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

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
    /**
     * The body as the exact text it was signed with (`json` keeps text and member order; `jsonb` would
     * not). With the other signed columns and `sig` it gives the op's wire text back byte for byte
     * (kernel/log.ts `wireTextOf`), so the op is stored once, not also as a second text.
     */
    body: json('body').notNull(),
    /** The signature (base64url); null only for ops written before signing. */
    sig: text('sig'),
    /** The public key that signed the op (base64url of its 32 raw bytes). Null only for ops written before signing. */
    key: text('key'),
    /**
     * Why the operation fold took nothing from this op (no authority for what it claims, or the thread
     * it names is not here yet); null when it moved its operation. Kept by the fold, re-decided with it.
     */
    inert: text('inert'),
  },
  (t) => [
    index('ops_operation_idx').on(t.operation, t.lamport),
    index('ops_thread_idx').on(t.thread, t.lamport),
    // Most ops (a person's messages, every thread's opening) belong to no session: only the rest are indexed.
    index('ops_session_idx').on(t.session).where(sql`${t.session} is not null`),
    index('ops_lamport_idx').on(t.lamport),
    // The sync outbox: ops authored on this node, in the order they were written.
    index('ops_origin_idx').on(t.origin, t.localSeq),
    // Inert ops are few: counting them (sync status) reads only them.
    index('ops_inert_idx').on(t.inert).where(sql`${t.inert} is not null`),
    // A workspace's spend today (the daily ceiling, read at every turn's start) sums only its turns' ends.
    index('ops_turn_ended_idx').on(t.workspace, t.ts).where(sql`${t.kind} = 'session.turn_ended'`),
  ],
);

/**
 * One row per operation (thread tree): the fold of its ops, rebuilt from the log whenever needed. Its
 * threads and sessions are rows of `operation_parts`; `state` holds the rest (rules version, head, carried
 * turns), so a step rewrites what it moved and not the whole operation.
 */
export const operations = pgTable(
  'operations',
  {
    id: text('id').primaryKey(),
    state: jsonb('state').notNull(),
    finished: boolean('finished').notNull(),
    /**
     * The fold holds a thread: false for an operation made only of inert ops or of kinds newer than
     * this node (anyone on a stream can name any operation), which status leaves out.
     */
    shown: boolean('shown').notNull().default(true),
    openedLamport: bigint('opened_lamport', { mode: 'number' }).notNull(),
  },
  (t) => [
    index('operations_finished_idx').on(t.finished, t.openedLamport),
    index('operations_shown_idx').on(t.shown, t.finished, t.openedLamport),
    // The open operations alone: what status and the tick read on every call, however many have finished.
    // PGlite never analyzes a table, so without statistics the planner reads all of it for `finished =
    // false` through the indexes above; this one holds only the open rows and is the cheaper read.
    index('operations_open_idx').on(t.openedLamport).where(sql`${t.finished} = false`),
  ],
);

/**
 * The threads and sessions of each operation's fold, one row each (`kind` is `thread` or `session`, `key` its
 * id). An operation of a few hundred turns is a few hundred KB as one document, and every step used to write
 * all of it again.
 */
export const operationParts = pgTable(
  'operation_parts',
  {
    operation: text('operation').notNull(),
    kind: text('kind').notNull(),
    key: text('key').notNull(),
    value: jsonb('value').notNull(),
  },
  (t) => [primaryKey({ columns: [t.operation, t.kind, t.key] })],
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
    /**
     * The last command of the session's own that was refused during this turn (its code and message), or
     * null: a session that then exits without answering could not carry its task out.
     */
    refusedCode: text('refused_code'),
    refusedMessage: text('refused_message'),
  },
  (t) => [
    primaryKey({ columns: [t.session, t.turn] }),
    // A row stays once its turn has ended, one per turn this machine ever ran; every command that reaps
    // dead turns asks only for the running ones, so only those are indexed and read.
    index('session_procs_running_idx').on(t.session).where(sql`${t.endedAt} is null`),
  ],
);

/** Device-local: this node's sync position per workspace (stream cursor, acknowledged outbox mark, counters). */
export const syncState = pgTable('sync_state', {
  key: text('key').primaryKey(),
  value: jsonb('value').notNull(),
});

/**
 * Device-local: the keys each workspace has certified by a verified `workspace.key_rotated` op (the
 * genesis key, whose sha256 is the workspace id, is implied). Derived from the op log like persona_runs.
 */
export const workspaceKeys = pgTable(
  'workspace_keys',
  {
    workspace: text('workspace').notNull(),
    key: text('key').notNull(),
    /** The key that signed the rotation op certifying this one. */
    signedBy: text('signed_by').notNull(),
    /** The rotation op. */
    op: text('op').notNull(),
    lamport: bigint('lamport', { mode: 'number' }).notNull(),
    ts: text('ts').notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspace, t.key] })],
);

/**
 * Device-local: ops that arrived correctly signed, by a key this node cannot yet place for their
 * workspace (reason `unknown_key`). Not folded; taken in when a rotation op certifies the key.
 */
export const pendingOps = pgTable(
  'pending_ops',
  {
    id: text('id').primaryKey(),
    workspace: text('workspace').notNull(),
    key: text('key').notNull(),
    reason: text('reason').notNull(),
    /** The exact wire text, as received (its signature was verified on arrival). */
    raw: text('raw').notNull(),
    receivedAt: text('received_at').notNull(),
  },
  (t) => [index('pending_ops_workspace_idx').on(t.workspace, t.key)],
);

/**
 * The working-copy lease of each workspace: the fold of its `lease.*` ops (see protocol/leases.ts), kept as one
 * JSON value, and the sort key of the newest op folded so that a late arrival is recognised and re-folded.
 */
export const leases = pgTable('leases', {
  workspace: text('workspace').primaryKey(),
  state: jsonb('state').notNull(),
  head: jsonb('head').notNull(),
});

/**
 * One row per channel round (its id is the round's thread): the board, a pure fold of the round's
 * ops kept current as they are stored, like `operations`. `next_deadline` is the earliest window
 * still open, so a tick finds the rounds it has work for without folding anything.
 */
export const rounds = pgTable(
  'rounds',
  {
    id: text('id').primaryKey(),
    operation: text('operation').notNull(),
    /** The workspace that opened the round (only its node decides about it); null until `round.opened` is here. */
    workspace: text('workspace'),
    /** The board, or null while only later ops of the round have arrived. */
    board: jsonb('board'),
    /** Sort key of the newest folded op, so a late arrival is recognised and the board re-folded. */
    head: jsonb('head').notNull(),
    completed: boolean('completed').notNull(),
    nextDeadline: text('next_deadline'),
  },
  (t) => [index('rounds_open_idx').on(t.completed, t.nextDeadline), index('rounds_operation_idx').on(t.operation)],
);

/**
 * Device-local: the ids (jti) of commission stamps this workspace admitted, each kept until its stamp could no
 * longer pass on its own (its `exp` plus the clock tolerance). A jti is claimed in the transaction that admits
 * the commission, so whichever host holds the store, one stamp is admitted once.
 */
export const stampsSeen = pgTable(
  'stamps_seen',
  {
    jti: text('jti').primaryKey(),
    /** Seconds since the epoch after which the id is forgotten. */
    forgetAfter: bigint('forget_after', { mode: 'number' }).notNull(),
  },
  (t) => [index('stamps_seen_forget_idx').on(t.forgetAfter)],
);

/**
 * Device-local: the idempotency keys of requests that wrote here (`RequestKeySchema` in protocol/commands.ts),
 * each recorded in the transaction of the request's first write, with its answer once it was given. A retry
 * carrying the key finds the first write instead of writing again. Kept a day.
 */
export const requests = pgTable(
  'requests',
  {
    key: text('key').primaryKey(),
    command: text('command').notNull(),
    /** Where the first write went (its first op's operation and thread), to name when the answer was lost. */
    operation: text('operation'),
    thread: text('thread'),
    /** The answer the first attempt gave; null while, or if, it never gave one. */
    result: jsonb('result'),
    /** When it was recorded (ISO time). */
    at: text('at').notNull(),
  },
  (t) => [index('requests_at_idx').on(t.at)],
);
