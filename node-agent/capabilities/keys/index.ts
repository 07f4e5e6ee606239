// Workspace keys' public door: the signing key the engine holds, and showing or rotating it.
export { KeyRing } from './ring.js';
export { certifiedKeys, keyChain, keyReport, rotateKey, type KeyDeps, type KeyHistoryEntry, type KeyReport, type RotateResult } from './rotate.js';
export {
  archivedKeyFiles,
  commitNextKey,
  discardNextKey,
  NEXT_KEY_FILE,
  readNextKey,
  readWorkspaceKey,
  WORKSPACE_KEY_FILE,
  WORKSPACE_PUB_FILE,
  writeNextKey,
  writeWorkspaceKey,
} from './files.js';
export { keysCapability } from './record.js';
