// Sync's commands on the direct host: with no node there is no client, so status is read from the store.
import { NexusError } from '../../../protocol/errors.js';
import type { WorkspaceContext } from '../../capabilities/context.js';
import { inertCounts, refusalRepeats } from '../../capabilities/threads/index.js';
import { pendingCount, type Handlers } from '../../kernel/index.js';
import { readBinding, relayUrls } from './binding.js';
import { historyReport, outboxSize, positionKey, readPosition } from './state.js';

export const directSyncHandlers: Handlers<WorkspaceContext, 'sync.status' | 'sync.reload'> = {
  'sync.status': async ({ deps }) => {
    const binding = readBinding(deps.workspace.paths);
    if (binding === null) return { bound: false as const, inert: await inertCounts(deps.db), refusals_unsigned: await refusalRepeats(deps.db) };
    const pos = await readPosition(deps.db, positionKey(binding.relay, binding.stream));
    return {
      bound: true as const,
      relay: binding.relay,
      relays: relayUrls(binding),
      stream: binding.stream,
      connected: false,
      cursor: pos.cursor,
      outbox: await outboxSize(deps.db, deps.origin, pos.acked),
      rejected: pos.rejected,
      pending: await pendingCount(deps.db),
      inert: await inertCounts(deps.db),
      refusals_unsigned: await refusalRepeats(deps.db),
      last_error: null,
      node_running: false,
      history: historyReport(pos.history),
    };
  },
  'sync.reload': async ({ deps }) => {
    throw new NexusError('NOT_SERVED', `no node serves ${deps.workspace.id}, so there is no sync client to restart`);
  },
};
