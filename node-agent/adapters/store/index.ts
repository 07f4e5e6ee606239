// The store's public door.
export { acquireStoreLock, createStore, homeTemplateDir, makeTemplate, NODE_PURPOSE, openStore, packagedTemplateDir, storeTemplate, storeTemplateReady, storeDatabase, storeTemplateVersion, templateProblem, type Db, type OpenOptions, type Store } from './open.js';
export * as tables from './schema.js';
export { afterCommit, beforeCommit, hookedStore, keptPerStore, runCommitHooks, type StoreKept } from './commit-hooks.js';
export { pgliteUnder } from './driver.js';
