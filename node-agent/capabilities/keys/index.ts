// Workspace keys' public door: the signing key the engine holds, and showing or rotating it. The key files
// themselves are the key folder adapter's (adapters/keys).
export { KeyRing } from './ring.js';
export { certifiedKeys, keyChain, keyReport, rotateKey, type KeyDeps, type KeyHistoryEntry, type KeyReport, type RotateResult } from './rotate.js';
export { keysCapability } from './record.js';
