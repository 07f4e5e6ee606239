// The transcripts capability's only door: a session turn's transcript on this machine, as one record.
import type { AnyCapability } from '../../kernel/index.js';
import type { WorkspaceContext } from '../context.js';
import { transcriptHandlers } from './commands.js';

export { showTranscript } from './show.js';

export const transcriptsCapability = {
  name: 'transcripts',
  opKinds: [],
  projections: [],
  handlers: transcriptHandlers,
  appendPolicies: [],
  afterCommit: [],
  tick: [],
} as const satisfies AnyCapability<WorkspaceContext, never, never>;
