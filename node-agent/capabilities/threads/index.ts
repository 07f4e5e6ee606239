// The threads capability's public door: the chat engine, its batches and the context every capability's hooks
// run against, its pure operation fold, status rows and views.
export type { CallerClaim, EngineDeps } from '../context.js';
export { createEngine, MAX_MESSAGE_BYTES, type Engine, type ReplyInput, type SendInput, type ThreadsCapability, type ThreadsContext, type TurnEnd } from './engine.js';
export { newOutcome, type Batch, type Cause, type Intent, type KernelContext, type Outcome } from './batch.js';
export { threadsCapability, THREAD_OP_KINDS } from './record.js';
export { effectiveOps } from './react.js';
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
export { operationReport, operationUsage, statusRow } from './status.js';
export { decideRefusal, refusalRepeats, REFUSAL_WINDOW_MS, REFUSALS_PER_WINDOW, type RefusalCount } from './refusals.js';
export { authorOf, checkText, resolveCaller, type Caller } from './core.js';
export { emptyPlan, messageDraft, planRequesterWake, planTurn, startTurns, type Plan, type PlannedTurn, type TurnReason } from './turns.js';
export { BUDGET_REASON, budgetOf, DAILY_BUDGET_REASON, exhaustedBudget, isBudgetRefusal, operationBudget, spendToday } from './brakes.js';
export { callerDepth, commissionDepth, parseHopClaim } from './depth.js';
