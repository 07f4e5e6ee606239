// The trust capability's command: the trusted workspaces, each with the key chain this store verified for it.
import type { Handlers } from '../../kernel/index.js';
import type { WorkspaceContext } from '../context.js';
import { keyChain } from '../keys/index.js';
import { listTrust } from './entries.js';

export const trustHandlers: Handlers<WorkspaceContext, 'trust.list'> = {
  'trust.list': async ({ deps }) => {
    const trusted = [];
    for (const e of listTrust(deps.workspace.paths)) {
      // The trusted genesis key heads the chain; rotations come from the signed ops this store took in.
      const history = [{ key: e.key.x, signed_by: null, op: null, lamport: null, ts: null }, ...(await keyChain(deps.db, e.workspace))];
      trusted.push({ workspace: e.workspace, name: e.name, key: e.key, added_at: e.added_at, history });
    }
    return { workspace: deps.workspace.id, trusted };
  },
};
