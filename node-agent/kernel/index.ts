// The kernel's public door: appending and ingesting signed ops, and the projections they feed.
export { appendOps, ingestOps, LAMPORT_AHEAD_LIMIT, opColumns, opsOfThreads, rowToOp, wireTextOf, type Author, type Exec, type IncomingOp, type OpDraft, type Tx } from './log.js';
export { project, type Projection } from './projections.js';
export { ingestChecked, pendingCount, signLegacyOps, type IngestOptions, type IngestReport, type OpRefusal } from './signed.js';
export { invoke, type Handler, type Handlers } from './bus.js';
export { applyOnce, requestProjection, RequestScope, REQUEST_KEEP_MS } from './requests.js';
export {
  checkCapabilities,
  Commit,
  createKernel,
  handlersOf,
  projectionsOf,
  TICK_STAGES,
  type AfterCommit,
  type AnyCapability,
  type AppendPolicy,
  type Batch,
  type Capability,
  type CapabilityKernel,
  type HandledBy,
  type LayeredHandler,
  type TickStage,
  type TickStep,
} from './capability.js';
export { heldOperations, signedOfOperations, signedSince, type SignedEntry } from './delivery.js';
export { realTimers, type Scheduler, type Timer, type Timers } from './scheduler.js';
