// The node's web dashboard: its public door.
export { startUi, isLoopback, type UiOptions, type UiServer } from './server.js';
export { uiApp, isPersonHandle, loginHandle, type UiAppOptions } from './app.js';
export { snapshot, StatusCache, ViewCache, type Caches, type Snapshot, type UiBackend, type WorkspaceSnapshot } from './data.js';
export { needsOf, syncProblems, type NeedItem, type SyncProblem } from './needs.js';
export { page } from './layout.js';
export { renderNeeds } from './views/needs.js';
export { renderOperations } from './views/operations.js';
export { renderThread, withdrawable } from './views/thread.js';
export { renderSync } from './views/sync.js';
