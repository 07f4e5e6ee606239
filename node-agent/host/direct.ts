// The direct host: with no node serving the workspace, a command opens the store itself, under its lock.
import { nexusHome } from '../paths.js';
import { COMMANDS, parseOutput, type CommandInput, type CommandOutput, type RunOptions, type WorkspaceCommand } from '../../protocol/commands.js';
import { CAPABILITIES, CAPABILITY_HANDLERS, handlersFor, PROJECTIONS, workspaceContext, type CapabilityList, type HostContext } from '../capabilities/index.js';
import type { EngineDeps } from '../capabilities/context.js';
import { KeyRing } from '../capabilities/keys/index.js';
import { readWorkingCopy } from '../adapters/git/index.js';
import { loadPersona } from '../adapters/personas/index.js';
import { baseEnvironment, launchTurn, processAlive, seesSessionProcesses, stopTurn } from '../adapters/sessions/index.js';
import { openStore, tables, type OpenOptions } from '../adapters/store/index.js';
import { and, eq, like } from 'drizzle-orm';
import { THREAD_ID_RE } from '../../protocol/ids.js';
import { NexusError } from '../../protocol/errors.js';
import type { Workspace } from '../adapters/workspace/index.js';
import { applyOnce, invoke, projectionsOf, requestProjection, RequestScope, type Handlers } from '../kernel/index.js';
import { nodePaths, originId, readRegistry } from './node/files.js';
import { directSyncHandlers } from './sync/commands.js';

/**
 * Every workspace command, as a host with the store open in this process answers it: the capabilities'
 * handlers (derived from their list), and sync's, which the host answers from what it holds.
 */
export const WORKSPACE_HANDLERS: Handlers<HostContext, WorkspaceCommand> = { ...CAPABILITY_HANDLERS, ...directSyncHandlers };

/**
 * Runs one workspace command; its answer is checked against the command's output schema. `opts.request` is
 * the request's idempotency key: a command declared `once` is applied once per key (kernel/requests.ts).
 */
export type Runner = <K extends WorkspaceCommand>(name: K, input: CommandInput<K>, opts?: RunOptions) => Promise<CommandOutput<K>>;

export type Host = HostContext & { run: Runner };

/** Asks a turn's sidecar to stop its runtime (it reports the turn's end as usual): a channel step whose window ran out. */
function stopSidecar(pid: number): void {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    // Already gone: its end is reported, or reaped.
  }
}

/**
 * The engine's real dependencies for a workspace whose store is open in this process. `env` is the
 * command's environment: its NEXUS_HOME names the origin written on ops and the node registry read for
 * peers, and sessions start from it (the process's own, unless commands run beside others in one process).
 */
export function realDeps(workspace: Workspace, db: EngineDeps['db'], overrides: Partial<EngineDeps> = {}, env: NodeJS.ProcessEnv = process.env): EngineDeps {
  const home = nexusHome(env);
  return {
    db,
    workspace,
    origin: originId(home),
    keys: new KeyRing(workspace.paths.keys, workspace.id),
    now: () => new Date(),
    projections: PROJECTIONS,
    launch: launchTurn,
    baseEnv: () => baseEnvironment(env),
    alive: processAlive,
    // A session's command run in a sandbox's own PID namespace sees no session process: it must not settle them as dead.
    ...(seesSessionProcesses(process.env) ? {} : { answersLiveness: false }),
    stopSession: stopTurn,
    stop: stopSidecar,
    readWorkingCopy,
    loadPersona,
    // This machine's node registry, read when asked: a workspace registered since is found too.
    peerRoot: (id) => readRegistry(nodePaths(home)).workspaces.find((w) => w.id === id)?.root ?? null,
    ...overrides,
  };
}

/** The shortest start of a thread id taken for the whole id (`t-` and four characters). */
const MIN_THREAD_PREFIX = 6;

/**
 * A command's input with a thread id given by its start (`t-01JX4Q`, as status prints ids) made whole, when
 * exactly one thread of the workspace starts so; several are UNKNOWN_THREAD naming them, none is left for
 * the command to refuse as it always did.
 */
export async function withWholeThreadId<I>(db: EngineDeps['db'], input: I): Promise<I> {
  const given = (input as { thread?: unknown } | null)?.thread;
  if (typeof given !== 'string' || THREAD_ID_RE.test(given) || !/^t-[0-9A-Za-z]+$/.test(given) || given.length < MIN_THREAD_PREFIX) return input;
  const rows = await db
    .selectDistinct({ thread: tables.ops.thread })
    .from(tables.ops)
    .where(and(eq(tables.ops.kind, 'thread.opened'), like(tables.ops.thread, `${given.toUpperCase().replace(/^T-/, 't-')}%`)))
    .limit(6);
  const found = rows.map((r) => r.thread).filter((t): t is string => t !== null);
  if (found.length === 1) return { ...input, thread: found[0] };
  if (found.length > 1) throw new NexusError('UNKNOWN_THREAD', `${given} is the start of several threads (${found.slice(0, 5).join(', ')}${found.length > 5 ? ', ...' : ''}): give more of the id`);
  return input;
}

/**
 * A host over `deps`. `opts.capabilities` composes the workspace from another list (its projections, handlers,
 * policies, reactions and tick steps all come from it); `opts.handlers` replaces the handler table.
 */
export function hostFor(deps: EngineDeps, opts: { capabilities?: CapabilityList; handlers?: Handlers<HostContext, WorkspaceCommand> } = {}): Host {
  const caps = opts.capabilities ?? CAPABILITIES;
  const handlers = opts.handlers ?? (caps === CAPABILITIES ? WORKSPACE_HANDLERS : ({ ...handlersFor(caps), ...directSyncHandlers } as Handlers<HostContext, WorkspaceCommand>));
  // A keyed request's key is recorded with its first write, in that write's transaction.
  const scope = new RequestScope(deps.workspace.id, deps.now);
  const projections = caps === CAPABILITIES ? deps.projections : projectionsOf(caps);
  const withRequests = { ...deps, projections: [...projections, requestProjection(scope)] };
  const ctx = workspaceContext(withRequests, caps);
  return {
    ...ctx,
    run: async (name, given, opts) => {
      const input = await withWholeThreadId(deps.db, given);
      const once = (COMMANDS[name] as { once?: true }).once === true;
      if (!once || opts?.request === undefined) return invoke(handlers, ctx, name, input);
      return applyOnce(withRequests.db, scope, name, opts.request, (raw) => parseOutput(name, raw), () => invoke(handlers, ctx, name, input));
    },
  };
}

/**
 * Opens the workspace's store, runs `fn` against the engine, and always closes the store. Sessions it
 * starts inherit `env`, the command's environment (the process's own, unless the command runs beside others in one process).
 */
export async function withDirectHost<T>(workspace: Workspace, fn: (host: Host) => Promise<T>, opts: OpenOptions = {}, env: NodeJS.ProcessEnv = process.env): Promise<T> {
  const store = await openStore(workspace.paths.store, opts);
  try {
    return await fn(hostFor(realDeps(workspace, store.db, {}, env)));
  } finally {
    await store.close();
  }
}
