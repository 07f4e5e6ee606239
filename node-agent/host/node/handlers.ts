// What a node answers: the `node.*` commands, its own `sync.*` handlers (the live client knows more than
// the store), and the one command path the RPC route, the dashboard and any added route run commands
// through. A command the list marks `reads` announces nothing; every other one announces its workspace.
import { COMMANDS, type AnyCommandSpec, type CommandName, type NodeCommand, type UiInfo, type WorkspaceCommand } from '../../../protocol/commands.js';
import { NexusError } from '../../../protocol/errors.js';
import type { Warning } from '../../../protocol/receipts.js';
import { inertCounts, refusalRepeats } from '../../capabilities/threads/index.js';
import { invoke, type Handlers } from '../../kernel/index.js';
import type { RpcBackend } from '../rpc/server.js';
import { addToRegistry, removeFromRegistry, type NodePaths } from './files.js';
import type { Served, ServedWorkspace } from './served.js';

export type HandlerDeps = {
  paths: NodePaths;
  served: Served;
  startedAt: string;
  /** The dashboard, once it runs (null: off, or it could not start). */
  ui: () => { info(): UiInfo; rebind(host: string | null, port: number | null): Promise<UiInfo> } | null;
  /** Stops the node (soon: the answer goes out first). */
  shutdown: () => void;
  /** A workspace's log may have grown. */
  announce: (workspace: string) => void;
  /** The command list the path reads `reads` from (default: the protocol's). */
  specs?: Readonly<Record<CommandName, AnyCommandSpec>>;
};

/** The node's own commands. */
export function nodeHandlers(d: HandlerDeps): Handlers<null, NodeCommand> {
  const { paths, served } = d;
  return {
    'node.info': async () => ({
      pid: process.pid,
      started_at: d.startedAt,
      home: paths.home,
      socket: paths.socket,
      workspaces: served.all().map((s) => ({ id: s.workspace.id, name: s.workspace.name, root: s.workspace.paths.root })),
    }),
    'node.register': async (_, { root }) => {
      const entry = await served.serve(root);
      addToRegistry(paths, entry.workspace.id, entry.workspace.paths.root);
      return { workspace: entry.workspace.id, serving: true };
    },
    'node.unregister': async (_, { workspace }) => {
      removeFromRegistry(paths, workspace);
      await served.unserve(workspace);
      return { workspace, serving: false };
    },
    'node.ui': async (_, { host, port }) => {
      const ui = d.ui();
      if (ui === null) throw new NexusError('INTERNAL', `the dashboard is not running on this node; see ${paths.log}`);
      return host === null && port === null ? ui.info() : ui.rebind(host, port);
    },
    'node.shutdown': async () => {
      d.shutdown();
      return { stopping: true };
    },
  };
}

/** Sync runs in the node: its status and restart come from the live client, not the store. */
function syncHandlers(served: Served): Handlers<ServedWorkspace, 'sync.status' | 'sync.reload'> {
  // Unbound, ops still arrive by local delivery: the inert ones among them are counted all the same.
  const unbound = (entry: ServedWorkspace) =>
    served.inQueue(entry, async () => ({ bound: false as const, inert: await inertCounts(entry.store.db), refusals_unsigned: await refusalRepeats(entry.store.db) }));
  return {
    'sync.status': async (entry) => (entry.sync ? entry.sync.status() : unbound(entry)),
    'sync.reload': async (entry) => {
      await served.startSync(entry);
      return entry.sync ? entry.sync.status() : unbound(entry);
    },
  };
}

/**
 * A command that wrote, on a workspace whose relay cannot be reached: its answer says so (the command still
 * succeeded; what it wrote waits in the outbox and is pushed when the relay answers).
 */
async function relayWarning(entry: ServedWorkspace, out: unknown): Promise<unknown> {
  const warnings = (out as { warnings?: unknown } | null)?.warnings;
  if (entry.sync === null || !entry.sync.unreachable || !Array.isArray(warnings)) return out;
  const s = await entry.sync.status();
  if (!s.bound) return out;
  const warning: Warning = {
    class: 'relay_unreachable',
    outbox: s.outbox,
    message: `the relay cannot be reached (${s.last_error ?? (s.refused ? 'it refused this binding' : 'not connected')}): ${s.outbox} op(s) written here wait in the outbox and are pushed when it answers; see \`nxs sync status\``,
  };
  return { ...(out as object), warnings: [...(warnings as Warning[]), warning] };
}

/** The one command path: node commands, the node's sync handlers, and workspace commands in their queue. */
export function commandPath(d: HandlerDeps): RpcBackend['run'] {
  const node = nodeHandlers(d);
  const sync = syncHandlers(d.served);
  const specs = d.specs ?? COMMANDS;
  return (name, workspace, input, opts) => {
    if (workspace === null) return invoke(node, null, name as NodeCommand, input as never) as never;
    const entry = d.served.get(workspace);
    if (!entry) return Promise.reject(new NexusError('NOT_SERVED', `this node does not serve workspace ${workspace}`));
    if (name === 'sync.status' || name === 'sync.reload') return invoke(sync, entry, name, input as never) as never;
    // Sessions a node starts run with the node's own environment (its keys, its HOME), whoever's command started them.
    const done = d.served.withHost(workspace, (h) => h.run(name as WorkspaceCommand, input as never, opts));
    if (specs[name].reads === true) return done as never;
    // A refused command may still have written (a start failure it recorded): announce either way.
    void done.then(() => d.announce(workspace), () => d.announce(workspace));
    return done.then((out) => relayWarning(entry, out)) as never;
  };
}
