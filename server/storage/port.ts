// The StreamStore port: what the relay needs from storage, whatever database is behind it.

/**
 * An op to append: its id (for duplicate detection), its exact JSON text, and its author workspace (kept
 * beside it for filtered history reads; read from the text when not given).
 */
export type OpToAppend = { readonly id: string; readonly text: string; readonly workspace?: string | null };

/** One op's fate in an append. A duplicate reports the seq it was first given. */
export type AppendResult = { op: string; seq: number; duplicate: boolean };

/** A stored op: its seq and its exact JSON text, as it was pushed. */
export type StoredOp = { seq: number; op: string };

/** Which authors a history read keeps. */
export type HistoryFilter = { readonly only?: readonly string[]; readonly exclude?: readonly string[] };

/** A stream as stored. */
export type StreamRow = { name: string; tokenHash: string; head: number };

/** A stream as the operator lists it. */
export type StreamSummary = { name: string; head: number; createdAt: string };

/** Storage for streams and their op logs. Every method may be called concurrently. */
export interface StreamStore {
  readonly kind: 'pglite' | 'postgres';
  /**
   * How many appends to one stream may be on their way at once and still take their seqs in the order
   * they were made: 1 where appends could overtake one another on the way (separate connections).
   */
  readonly appendDepth: number;
  /** Creates a stream with head 0; false when one by that name exists. */
  createStream(name: string, tokenHash: string): Promise<boolean>;
  /** The stream, or null. */
  getStream(name: string): Promise<StreamRow | null>;
  /**
   * Appends in one transaction under the stream row's lock: ops already stored (or repeated in
   * `ops`) are duplicates and keep their seq; the rest get head+1, head+2, ... in order. `rows` are
   * the ops this call stored, in seq order, so a caller can hand them on without reading them back.
   * Resolves once the ops are kept: committed, or (PGlite) written to the relay's journal with the
   * transaction already on its way, so every later call sees them (decision 0022).
   * Throws NexusError UNKNOWN_STREAM for a stream that does not exist (or was deleted meanwhile).
   */
  append(stream: string, ops: readonly OpToAppend[]): Promise<{ results: AppendResult[]; head: number; rows: StoredOp[] }>;
  /** Up to `limit` ops with seq > `afterSeq`, in seq order; with `maxBytes`, stops before exceeding it (always at least one op). */
  read(stream: string, afterSeq: number, limit: number, maxBytes?: number): Promise<StoredOp[]>;
  /**
   * History for a joining node: up to `limit` ops with `afterSeq` < seq <= `uptoSeq`, in seq order, only
   * those whose author workspace is in `filter.only` when given and not in `filter.exclude` when given;
   * stops before exceeding `maxBytes` of op text (always at least one op).
   */
  readHistory(stream: string, afterSeq: number, uptoSeq: number, filter: HistoryFilter, limit: number, maxBytes: number): Promise<StoredOp[]>;
  /** Every stream's head, for metrics. */
  heads(): Promise<Array<{ name: string; head: number }>>;
  /** Every stream, by name. */
  listStreams(): Promise<StreamSummary[]>;
  /** Deletes the stream and all its ops, under its row lock; the number of ops it had, or null when there is no such stream. */
  deleteStream(name: string): Promise<number | null>;
  /** Replaces the stream's token hash; false when there is no such stream. */
  setTokenHash(name: string, tokenHash: string): Promise<boolean>;
  /**
   * Calls `listener(stream)` after a stream was deleted or its token replaced, by this process or
   * (PostgreSQL) another relay instance: connections admitted before must be checked again.
   */
  onStreamChanged(listener: (stream: string) => void): () => void;
  /** The stored operator token hash, or null when none was ever stored. */
  operatorTokenHash(): Promise<string | null>;
  /** Stores the operator token hash unless one is stored already; true when this call stored it. */
  initOperatorTokenHash(hash: string): Promise<boolean>;
  /** Resolves when the database answers a query. */
  ping(): Promise<void>;
  /**
   * Calls `listener(head)` whenever ops of `stream` may have been committed up to `head`, by this
   * process or (PostgreSQL) another relay instance. Calls may repeat or arrive late; never early.
   */
  subscribe(stream: string, listener: (head: number) => void): () => void;
  close(): Promise<void>;
}
