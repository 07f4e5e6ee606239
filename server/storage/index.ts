// The storage door: the StreamStore port and its PGlite and PostgreSQL implementations.
export type { AppendResult, HistoryFilter, OpToAppend, StoredOp, StreamRow, StreamStore, StreamSummary } from './port.js';
export { makeRelayTemplate, openPgliteStore, packagedRelayTemplateDir, type PgliteStoreOptions } from './pglite.js';
export { NOTIFY_CHANNEL, openPostgresStore, redactDatabaseUrl, type PostgresStoreOptions } from './postgres.js';
