// The hosts' public door: how a command reaches the engine.
export { hostFor, realDeps, withDirectHost, WORKSPACE_HANDLERS, type Host, type Runner } from './direct.js';
