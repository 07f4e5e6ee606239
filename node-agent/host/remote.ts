// Chooses the host for a command: the running node over its socket when it serves the workspace,
// otherwise the store opened directly. This module must not load PGlite: the direct host is imported lazily.
import { newRequestKey } from '../../protocol/commands.js';
import type { Warning } from '../../protocol/receipts.js';
import type { Workspace } from '../adapters/workspace/index.js';
import type { Runner } from './direct.js';
import { isRegistered, nodePaths, runningNode } from './node/files.js';
import { callNode, isUnreachable } from './rpc/client.js';

export type { Runner };

export type Routed<T> = { result: T; via: 'node' | 'direct'; serviceWarning: Warning | null };

/** How a command reaches a workspace: the default goes through the node or the store; tests run a host in process. */
export type Router = <T>(workspace: Workspace, fn: (run: Runner) => Promise<T>, env: NodeJS.ProcessEnv) => Promise<Routed<T>>;

/**
 * `onWait`: what a command opening the store itself tells whoever waits, a line after about a second of waiting.
 * `keys`: idempotency keys already made for the commands `fn` runs, in order (more are made as needed).
 * `nodeUnreachable`: the caller already found the node not answering; the commands go direct without asking it again.
 */
export type DirectOptions = { onWait?: (line: string) => void; keys?: readonly string[]; nodeUnreachable?: boolean };

export const SERVICE_NOT_RUNNING: Warning = {
  class: 'service_not_running',
  message: `this workspace is registered with the node, but no node is running: deadlines do not fire and nothing syncs. Start it with \`nxs node start\``,
};

/** The socket of the node that serves `workspace`, or null when none does (or none runs). */
export function servingNode(workspace: Workspace, env: NodeJS.ProcessEnv): string | null {
  const paths = nodePaths(env['NEXUS_HOME'] ? env['NEXUS_HOME'] : undefined);
  const node = runningNode(paths);
  return node !== null && isRegistered(paths, workspace.id) ? node.socket : null;
}

/**
 * Runs commands on the workspace: through the node when it serves it, directly otherwise.
 * A registered workspace with no node running gets the service_not_running warning to carry.
 */
/** The environment a command opening an operation records for its sessions: the caller's, less its NXC_* identity. */
function senderEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !k.startsWith('NXC_')) out[k] = v;
  return out;
}

export const routed = async <T>(workspace: Workspace, fn: (run: Runner) => Promise<T>, env: NodeJS.ProcessEnv, opts: DirectOptions = {}): Promise<Routed<T>> => {
  const paths = nodePaths(env['NEXUS_HOME'] ? env['NEXUS_HOME'] : undefined);
  const node = runningNode(paths);
  const registered = isRegistered(paths, workspace.id);
  // One idempotency key per command `fn` runs, by its place in the sequence: the retry below runs the same
  // sequence with the same keys, so a command the node applied before it stopped answering is not applied again.
  const keys: string[] = [...(opts.keys ?? [])];
  const keyed = (run: Runner): Runner => {
    let i = 0;
    return (name, input) => run(name, input, { request: (keys[i++] ??= newRequestKey()) });
  };
  // A pid record whose socket does not answer (a node killed with its files left behind) is no node.
  let nodeAnswers = node !== null && opts.nodeUnreachable !== true;
  if (node !== null && registered && nodeAnswers) {
    try {
      // A send may open an operation: its environment goes with it, to be recorded for the operation's sessions.
      const viaSocket: Runner = (name, input, o) => callNode(node.socket, name, workspace.id, input, name === 'send' ? { ...o, env: senderEnv(env) } : o);
      return { result: await fn(keyed(viaSocket)), via: 'node', serviceWarning: null };
    } catch (err) {
      const notServed = (err as { code?: string }).code === 'NOT_SERVED';
      if (!isUnreachable(err) && !notServed) throw err;
      if (isUnreachable(err)) nodeAnswers = false;
    }
  }
  const { withDirectHost } = await import('./direct.js');
  // The lock records this NEXUS_HOME, so a command of another home waiting for it can say whose it is.
  const result = await withDirectHost(workspace, (h) => fn(keyed(h.run)), { home: paths.home, ...(opts.onWait ? { onWait: opts.onWait } : {}) }, env);
  return { result, via: 'direct', serviceWarning: registered && !nodeAnswers ? SERVICE_NOT_RUNNING : null };
};
