// Workspace keys' public door: the signing key the engine holds, showing or rotating it, and (from the key
// folder adapter) the key files.
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
} from '../../adapters/keys/index.js';
export { keysCapability } from './record.js';
