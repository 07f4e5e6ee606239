// The relay's door: start one, run its CLI, or open its stream storage directly.
export { main, DEFAULT_RELAY_PORT, type RelayIo } from './cli.js';
export { createLogger, silentLogger as silentLog, type Logger, type LogLevel } from '../infra/index.js';
export { defaultRelayDataDir, packageVersion } from './paths.js';
export { startRelay, type Relay, type RelayOptions } from './relay.js';
export type { HistoryGate, HistoryRead } from './connection.js';
export {
  makeRelayTemplate,
  NOTIFY_CHANNEL,
  openPgliteStore,
  packagedRelayTemplateDir,
  openPostgresStore,
  type AppendResult,
  type OpToAppend,
  type PgliteStoreOptions,
  type PostgresStoreOptions,
  type StoredOp,
  type StreamRow,
  type StreamStore,
} from './storage/index.js';
