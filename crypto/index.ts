// The crypto folder's only public door: import workspace-key functions from here, never from keys.ts.

export {
  generateWorkspaceKey,
  parsePublicJwk,
  readWorkspaceKey,
  sha256Hex,
  signBytes,
  verifyBytes,
  workspaceIdFromPublicJwk,
  writeWorkspaceKey,
  WORKSPACE_KEY_FILE,
  WORKSPACE_PUB_FILE,
} from './keys.js';
export type { PublicJwk, WorkspaceKey } from './keys.js';
