// The lease capability's commands: what each name of protocol/commands.ts does on a workspace.
import type { ThreadsCapability } from '../threads/index.js';
import { withdrawOf } from './withdraw.js';

export const leaseHandlers: ThreadsCapability<'withdraw'>['handlers'] = {
  // A session's own refused command is noted on its turn, as for the chat engine's commands.
  withdraw: (c, input) => c.engine.noting(withdrawOf(c))(input),
};
