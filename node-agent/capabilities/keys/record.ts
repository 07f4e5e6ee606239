// Workspace keys as one record: the rotation's op kind and the key chain it keeps, and showing or rotating the key.
import type { AnyCapability } from '../../kernel/index.js';
import type { WorkspaceContext } from '../context.js';
import { keyHandlers } from './commands.js';
import { keysProjection } from './projection.js';

export const keysCapability = {
  name: 'keys',
  opKinds: ['workspace.key_rotated'],
  projections: [keysProjection],
  handlers: keyHandlers,
  appendPolicies: [],
  afterCommit: [],
  tick: [],
} as const satisfies AnyCapability<WorkspaceContext, never, never>;
