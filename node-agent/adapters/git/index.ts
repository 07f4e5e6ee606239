// The public door of node-agent/git: import from here, never from the files behind it.
export { mayHoldRepository } from './discovery.js';
export { DIRTY_NOTE, describeTree, describeWorkingCopy, readWorkingCopy, saysOutsideRepository } from './working-copy.js';
export type { WorkingCopy } from '../../../protocol/working-copy.js';
export { LEASE_GIT_IDENTITY, runGit, type GitRun, type RunGitOptions } from './run.js';
export { deleteFromTree, makeFilePrivate, readJournalText, removeOwnFile } from './lease-files.js';
