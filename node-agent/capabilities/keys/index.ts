// Workspace keys' public door: the signing key the engine holds, and showing or rotating it.
export { KeyRing } from './ring.js';
export { certifiedKeys, keyReport, rotateKey, type KeyDeps, type KeyHistoryEntry, type KeyReport, type RotateResult } from './rotate.js';
