// Trust as one record: the list of trusted workspaces with the key chains this store verified for them.
import type { AnyCapability } from '../../kernel/index.js';
import type { WorkspaceContext } from '../context.js';
import { trustHandlers } from './commands.js';

export const trustCapability = {
  name: 'trust',
  opKinds: [],
  projections: [],
  handlers: trustHandlers,
  appendPolicies: [],
  afterCommit: [],
  tick: [],
} as const satisfies AnyCapability<WorkspaceContext, never, never>;
