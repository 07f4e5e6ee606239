// The threads capability's commands: what each name of protocol/commands.ts does on a workspace.
import type { ThreadsCapability } from './engine.js';

export const threadHandlers: ThreadsCapability<'send' | 'reply' | 'done' | 'turns.finish' | 'tick' | 'whoami'>['handlers'] = {
  send: (c, input) => c.engine.send(input),
  reply: (c, input) => c.engine.reply(input),
  done: (c, input) => c.engine.done(input),
  'turns.finish': (c, input) => c.engine.finishTurn(input),
  tick: (c) => c.engine.tick(),
  whoami: async (c, input) => {
    const caller = await c.engine.resolveCaller(c.deps.db, input.caller);
    return {
      workspace: c.deps.workspace.id,
      handle: caller.handle,
      session: caller.session?.id ?? null,
      operation: caller.operation?.id ?? null,
      depth: caller.depth,
      reply_only: caller.replyOnly,
    };
  },
};
