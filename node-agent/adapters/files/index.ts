// The working-copy files adapter's door: real paths for the runtime tools' confinement, and their file access.
export { realOrAncestor, realOrAncestorSync, realPath, realPathSync } from './real-path.js';
export { listFolder, pathExists, statOrNull, statSyncOrNull, walkFiles, writeAtomic } from './tree.js';
