// The storage door: the StreamStore port and its PGlite and PostgreSQL implementations.
export type { AppendResult, OpToAppend, StoredOp, StreamRow, StreamStore } from './port.js';
export { openPgliteStore, type PgliteStoreOptions } from './pglite.js';
export { NOTIFY_CHANNEL, openPostgresStore, type PostgresStoreOptions } from './postgres.js';
