// The infra door: pieces every host shares (relay, node, sync client). infra/ imports only protocol/ and node built-ins (and PGlite's types).
export { acquireLock, acquireLockSync, clearStaleLock, describeOwner, pidNamespace, processAlive, processStartTime, readLockOwner, seesPidsOf, writeFileAtomic, type HeldLock, type LockOptions, type LockOwner, type Release } from './fs.js';
export { createLogger, LOG_LEVELS, parseLogLevel, silentLogger, type LogFields, type Logger, type LoggerOptions, type LogLevel } from './log.js';
export { backoffDelay, type BackoffOptions } from './backoff.js';
export { makePrivateDir, PRIVATE_MODES, SHARED_MODES, tightenTree, treeProblem, withPrivateUmask, type TreeModes } from './private-dir.js';
export { readCapped, readCappedBytes, readCappedSync, readSmallFileSync, READ_TIMEOUT_MS, type CappedBytes, type CappedRead } from './read.js';
export { guardOutput, outputClosed, outputGone, writeOutput } from './pipes.js';
export { packageRoot, packageVersion, pgliteVersion } from './package.js';
export { copyRow, sqlInteger, sqlLiteral, sqlText } from './sql.js';
export { HELPER_GONE, processHelperPid, runFile, runFileHere, stopProcessHelper, useProcessHelper, type RunFileRequest, type RunFileResult } from './spawner.js';
export { copyTemplate, finishTemplate, makeTemplate as makeDataTemplate, removeOtherTemplates, templateProblem } from './data-template.js';
export { chooseWasmTier, wasmTieringSetting, WASM_TIERING_VARIABLE } from './wasm.js';
export { DEFAULT_STORE_CACHE, pgliteStoreSettings, pgliteWasmModule, storeCacheSetting, STORE_CACHE_VARIABLE } from './pglite-wasm.js';
export { cacheFileSizes, type PgliteModule } from './pglite-sizes.js';
export { useNamedStatements, type PgliteProtocol } from './pglite-statements.js';
