// The lease capability's commands: what each name of protocol/commands.ts does on a workspace.
import type { Handlers } from '../../kernel/index.js';
import type { WorkspaceContext } from '../context.js';

export const leaseHandlers: Handlers<WorkspaceContext, 'withdraw'> = {
  withdraw: (c, input) => c.engine.withdraw(input),
};
