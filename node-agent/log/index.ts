// The op log's public door: append, ingest, and read folds.
export * from './fold.js';
export {
  appendOps,
  ingestOps,
  lastDeclaration,
  loadOperation,
  operationOfSession,
  operationOfThread,
  threadOps,
  type Author,
  type Exec,
  type OpDraft,
  type Tx,
} from './log.js';
