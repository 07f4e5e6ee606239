// The threads capability's commands: what each name of protocol/commands.ts does on a workspace.
import type { Handlers } from '../../kernel/index.js';
import type { WorkspaceContext } from '../context.js';
import { statusReport, threadView } from './status.js';

export const threadHandlers: Handlers<WorkspaceContext, 'send' | 'reply' | 'status' | 'threads.show' | 'turns.finish' | 'tick'> = {
  send: (c, input) => c.engine.send(input),
  reply: (c, input) => c.engine.reply(input),
  // A read settles dead turns first, so nothing shows as running that is not.
  status: async (c, input) => {
    await c.engine.reap();
    return statusReport(c.deps, input);
  },
  'threads.show': (c, input) => threadView(c.deps, input.thread),
  'turns.finish': (c, input) => c.engine.finishTurn(input),
  tick: (c) => c.engine.tick(),
};
