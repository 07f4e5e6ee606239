// The key folder adapter's door: the workspace key pair on disk and the file steps of a rotation.
export {
  archivedKeyFiles,
  commitNextKey,
  discardNextKey,
  KEY_FILE_MAX_BYTES,
  NEXT_KEY_FILE,
  readNextKey,
  readWorkspaceKey,
  WORKSPACE_KEY_FILE,
  WORKSPACE_PUB_FILE,
  writeNextKey,
  writeWorkspaceKey,
} from './files.js';
