// The sessions' public door: launching turns, their specs, prompts, run journals and process liveness.
export { baseEnvironment, doneMarker, launchTurn, sidecarScript, startedMarker, stopTurn, type LaunchResult, type TurnLaunch } from './launch.js';
export { PID_NAMESPACE_VARIABLE, pidNamespace, processAlive, seesSessionProcesses } from './liveness.js';
export { buildPrompt, pickBoundary, wrapUntrusted, type PromptInput, type PromptMessage, type PromptRound } from './prompt.js';
export { readSpec, readSpecFile, recordedOperationEnv, recordOperationEnv, REPLY_ONLY_TOOL, sessionDir, SessionSpecSchema, type SessionSpec } from './spec.js';
export { readLastRun, readTurnReport } from './run-state.js';
export { appendStream, JournalFile, readJournalFile } from './journal.js';
export { isSessionFolder, readTranscriptTail, transcriptFile, transcriptTurns } from './transcript.js';
