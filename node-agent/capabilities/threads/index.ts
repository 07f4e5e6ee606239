// The chat engine's public door.
export type { CallerClaim, EngineDeps } from './context.js';
export { createEngine, MAX_MESSAGE_BYTES, type Engine, type ReplyInput, type SendInput, type TurnEnd } from './engine.js';
export { operationReport, statusReport, threadView } from './status.js';
