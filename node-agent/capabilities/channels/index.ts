// The channels capability's only public door: declarations, the board fold, its decisions and words.
export {
  allRecords,
  applyBoardOp,
  askMessage,
  currentPass,
  foldBoard,
  inFlight,
  isSettled,
  ownerRecord,
  passesUsed,
  runRecord,
  runRecords,
  stepKey,
  stepOfSession,
  stepOfThread,
  type AuthoredOp,
  type Board,
  type BoardOp,
  type Completed,
  type PassRecord,
  type StepRecord,
  type StepState,
} from './board.js';
export {
  completion,
  decide,
  holdsForHandBack,
  lapsedAt,
  nextDeadline,
  nextStartable,
  onHoldAtBoundary,
  outstandingWindows,
  pendingRework,
  type Completion,
  type Decision,
  type StepRef,
} from './decide.js';
export { channelAddress, channelHash, listChannels, loadChannel, parseChannel } from './load.js';
export { briefMessages, pickBoundary, renderResult, resultMessages, stepBrief, wrap, type RandomSource, type Texts } from './render.js';
export { renderRoundLine, roundStatus } from './status.js';
export {
  needsRework,
  openRound,
  reask,
  reasked,
  resultEffect,
  roundCompleted,
  snapshotOf,
  stepAdmitted,
  stepAnswered,
  stepDepth,
  stepEnded,
  stepStarted,
  wantsExclusive,
  windowFor,
  type ReaskVerdict,
} from './verdicts.js';
export { stepSkippedWarning, tickUnscheduled, windowUnscheduled } from './warnings.js';
export { createRounds, type Rounds, type RoundReply } from './rounds.js';
export type { RoundEffects } from './drive.js';
export type { StepGate } from './start.js';
export { channelsCapability } from './record.js';
export { dueRounds, loadRound, roundsOfOperations, roundsProjection } from './projection.js';
export { withRound, withRounds } from './rows.js';
export { channelHandle, roundDraft } from './records.js';
export * from '../../../protocol/channel.js';
export * from '../../../protocol/round.js';
