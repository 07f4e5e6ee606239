// The transcripts capability's command: a session turn's transcript on this machine.
import type { Handlers } from '../../kernel/index.js';
import type { WorkspaceContext } from '../context.js';
import { showTranscript } from './show.js';

export const transcriptHandlers: Handlers<WorkspaceContext, 'transcripts.show'> = {
  'transcripts.show': (c, input) => showTranscript(c.deps.workspace.paths, input.session, input.turn),
};
