// The threads capability's public door: the chat engine, its pure operation fold, status and views.
export type { CallerClaim, EngineDeps } from '../context.js';
export { createEngine, MAX_MESSAGE_BYTES, type Engine, type ReplyInput, type SendInput, type TurnEnd } from './engine.js';
export * from './fold.js';
export {
  inertCounts,
  inertIds,
  lastDeclaration,
  loadOperation,
  operationOfSession,
  operationOfThread,
  operationsProjection,
  personaRunsProjection,
  threadOps,
  withParts,
} from './operations.js';
export { operationReport, statusReport, threadView } from './status.js';
export { decideRefusal, refusalRepeats, REFUSAL_WINDOW_MS, REFUSALS_PER_WINDOW, type RefusalCount } from './refusals.js';
