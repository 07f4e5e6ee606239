// The status capability's only door: the workspace as people read it (`nxc status`, `nxc threads show`),
// the chat engine's fold with what the working-copy lease and the channel rounds add to it.
import type { ThreadsCapability } from '../threads/index.js';
import { statusReport, threadView } from './views.js';

export { spendFigures, statusReport, threadView, workspaceSpendToday } from './views.js';

export const statusCapability: ThreadsCapability<'status' | 'threads.show'> = {
  name: 'status',
  opKinds: [],
  projections: [],
  handlers: {
    // A read settles dead turns first, so nothing shows as running that is not.
    status: async (c, input) => {
      await c.engine.reap();
      return statusReport(c.deps, input);
    },
    'threads.show': (c, input) => threadView(c.deps, input.thread),
  },
  appendPolicies: [],
  afterCommit: [],
  tick: [],
};
