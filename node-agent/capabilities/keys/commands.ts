// The keys capability's commands: showing the workspace's key chain, and rotating its signing key.
import type { Handlers } from '../../kernel/index.js';
import type { WorkspaceContext } from '../context.js';
import { keyReport, rotateKey } from './rotate.js';

export const keyHandlers: Handlers<WorkspaceContext, 'keys.show' | 'keys.rotate'> = {
  'keys.show': (c) => keyReport(c.deps),
  'keys.rotate': (c) => rotateKey(c.deps),
};
