// The hosts' public door: how a command reaches the engine.
export { hostFor, realDeps, withDirectHost, type Host } from './direct.js';
