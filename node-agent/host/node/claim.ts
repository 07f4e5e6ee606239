// One node per home: the node's lock, whose holder is known by pid, so a node killed a moment ago frees it
// at once and a live one is refused at once (a node still starting gets a few seconds to show up).
import { acquireLock, describeOwner, type LockOwner } from '../../../infra/index.js';
import { NexusError } from '../../../protocol/errors.js';
import { NODE_PURPOSE } from '../../adapters/store/index.js';
import { nodeLockPath, runningNode, type NodePaths } from './files.js';

/** Takes the home's node lock; NODE_RUNNING when another node holds it. Resolves to its release. */
export function claimHome(paths: NodePaths): Promise<() => void> {
  const busy = (owner: LockOwner | null) => {
    const first = runningNode(paths);
    return new NexusError(
      'NODE_RUNNING',
      first
        ? `a node already runs for ${paths.home}: pid ${first.pid}, started ${first.started_at}, socket ${first.socket}`
        : `a node is starting or running for ${paths.home}: ${describeOwner(owner)}`,
      first ? { pid: first.pid, socket: first.socket } : { pid: owner?.pid ?? null },
    );
  };
  return acquireLock(nodeLockPath(paths), {
    waitMs: 3_000,
    purpose: NODE_PURPOSE,
    home: paths.home,
    busy,
    // The holder is up (its node.json names it): waiting could only end in the same refusal.
    refuseEarly: (owner) => (runningNode(paths)?.pid === owner.pid ? busy(owner) : null),
  });
}
