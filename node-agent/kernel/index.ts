// The op log's public door: append, ingest, and read folds.
export * from './fold.js';
export {
  appendOps,
  ingestOps,
  lastDeclaration,
  loadOperation,
  operationOfSession,
  operationOfThread,
  rowToOp,
  threadOps,
  type Author,
  type Exec,
  type IncomingOp,
  type OpDraft,
  type Tx,
} from './log.js';
export { ingestChecked, pendingCount, signLegacyOps, type IngestReport, type OpRefusal } from './signed.js';
