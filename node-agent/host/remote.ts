// Chooses the host for a command: the running node over its socket when it serves the workspace,
// otherwise the store opened directly. This module must not load PGlite: the direct host is imported lazily.
import type { Receipt, StatusReport, ThreadView, Warning } from '../../protocol/receipts.js';
import type { CallerClaim, ReplyInput, SendInput, TurnEnd } from '../capabilities/threads/index.js';
import { isRegistered, nodePaths, runningNode } from './node/files.js';
import { isUnreachable, rpc } from './rpc/client.js';
import type { Workspace } from '../adapters/workspace/index.js';

export type { CallerClaim };

/** The commands every host answers, whichever way it reaches the engine. */
export type Commands = {
  send(input: SendInput): Promise<Receipt>;
  reply(input: ReplyInput): Promise<Receipt>;
  status(opts: { all: boolean }): Promise<StatusReport>;
  thread(id: string): Promise<ThreadView>;
  finishTurn(end: TurnEnd): Promise<{ outcome: string; woke: number }>;
  tick(): Promise<{ settled: number }>;
};

function viaSocket(socket: string, id: string): Commands {
  const base = `/v1/w/${encodeURIComponent(id)}`;
  return {
    send: (input) => rpc(socket, 'POST', `${base}/send`, input),
    reply: (input) => rpc(socket, 'POST', `${base}/reply`, input),
    status: (opts) => rpc(socket, 'GET', `${base}/status${opts.all ? '?all=1' : ''}`),
    thread: (thread) => rpc(socket, 'GET', `${base}/threads/${encodeURIComponent(thread)}`),
    finishTurn: (end) => rpc(socket, 'POST', `${base}/turns/finish`, end),
    tick: () => rpc(socket, 'POST', `${base}/tick`, {}),
  };
}

async function direct<T>(workspace: Workspace, fn: (c: Commands) => Promise<T>): Promise<T> {
  const { withDirectHost } = await import('./direct.js');
  return withDirectHost(workspace, (h) =>
    fn({
      send: (i) => h.engine.send(i),
      reply: (i) => h.engine.reply(i),
      status: (o) => h.status(o),
      thread: (t) => h.thread(t),
      finishTurn: (e) => h.engine.finishTurn(e),
      tick: () => h.tick(),
    }),
  );
}

export type Routed<T> = { result: T; via: 'node' | 'direct'; serviceWarning: Warning | null };

/**
 * Runs one command on the workspace: through the node when it serves it, directly otherwise.
 * A registered workspace with no node running gets the service_not_running warning to carry.
 */
export async function routed<T>(workspace: Workspace, fn: (c: Commands) => Promise<T>, env: NodeJS.ProcessEnv = process.env): Promise<Routed<T>> {
  const paths = nodePaths(env['NEXUS_HOME'] ? env['NEXUS_HOME'] : undefined);
  const node = runningNode(paths);
  const registered = isRegistered(paths, workspace.id);
  // A pid record whose socket does not answer (a node killed with its files left behind) is no node.
  let nodeAnswers = node !== null;
  if (node !== null && registered) {
    try {
      return { result: await fn(viaSocket(node.socket, workspace.id)), via: 'node', serviceWarning: null };
    } catch (err) {
      const notServed = (err as { code?: string }).code === 'NOT_SERVED';
      if (!isUnreachable(err) && !notServed) throw err;
      if (isUnreachable(err)) nodeAnswers = false;
    }
  }
  const serviceWarning: Warning | null =
    registered && !nodeAnswers
      ? {
          class: 'service_not_running',
          message: `this workspace is registered with the node, but no node is running: deadlines do not fire and nothing syncs. Start it with \`nxs node start\``,
        }
      : null;
  return { result: await direct(workspace, fn), via: 'direct', serviceWarning };
}
