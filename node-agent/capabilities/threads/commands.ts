// The threads capability's commands: what each name of protocol/commands.ts does on a workspace.
import type { ThreadsCapability } from './engine.js';

export const threadHandlers: ThreadsCapability<'send' | 'reply' | 'turns.finish' | 'tick'>['handlers'] = {
  send: (c, input) => c.engine.send(input),
  reply: (c, input) => c.engine.reply(input),
  'turns.finish': (c, input) => c.engine.finishTurn(input),
  tick: (c) => c.engine.tick(),
};
