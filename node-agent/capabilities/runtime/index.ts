// The agent runtime's one door: the built-in runtime, its budget rules, command leases, and the CLI adapters.
export { account, describeUsage, operationTokensLeft, remainingMs, resolveLimits, toolsOffered, type BudgetEvent, type BudgetState, type Decision, type Verdict } from './budget.js';
export { endingMessage, nxcReply, type Answer, type AnswerOutcome, type Ending } from './answer.js';
export { Journal, readJournal, writeRunState } from './journal.js';
export { addNote, DEFAULT_LEASE_TTL_MS, fileCommandLeases, withCommandLease, type CommandLease, type CommandLeases, type LeaseRecord } from './lease.js';
export { classifyProviderError, ProviderError, type ModelClient, type ModelReply, type ModelRequest, type ToolSpec } from './model.js';
export { createModelClient, KEY_VARIABLES, type ProviderConfig } from './providers/index.js';
export { restore, INTERRUPTED, type Restored } from './resume.js';
export { defaultBackoff, executeRun, type Approver, type RunEvent, type RunIdentity, type RunOptions, type RunResult } from './run.js';
export { DEFAULT_RUN_TIMEOUT_MS, leaseFile, runSessionTurn, systemPrompt, workingCopyRevision, type TurnInput, type TurnOutcome } from './session.js';
export { ARTIFACT_DIR, decide, isReadOnlyCommand, offeredTools, policyFor, type CallDecision, type ToolPolicy } from './tools/index.js';
export { FOREGROUND_TOOL_CALLS, processTerminal, progressPrinter, runForeground, type ForegroundInput, type Terminal } from './foreground.js';
export { adapterCommand, allowedFromEnv, PROGRAM_VARIABLES, runAdapterTurn, type AdapterKind } from './adapters/turn.js';
export { claudeArgs, claudeReader } from './adapters/claude-code.js';
export { codexArgs, codexReader } from './adapters/codex.js';
export { claudeMcp, codexMcpArgs, nexusMcpServer } from './adapters/mcp.js';
