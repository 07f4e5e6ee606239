// The capabilities, in order: the one list the kernel and the hosts derive the projections, the command
// handlers and the tick pipeline from. A new capability is its folder and one line here.
import type { CommandName } from '../../protocol/commands.js';
import { createKernel, handlersOf, projectionsOf, type AnyCapability, type Author, type Handlers, type Projection } from '../kernel/index.js';
import { channelsCapability } from './channels/index.js';
import type { EngineDeps } from './context.js';
import { keysCapability } from './keys/index.js';
import { leasesCapability } from './leases/index.js';
import { statusCapability } from './status/index.js';
import { createEngine, newOutcome, threadsCapability, type Batch, type Outcome, type ThreadsContext } from './threads/index.js';
import { transcriptsCapability } from './transcripts/index.js';
import { trustCapability } from './trust/index.js';

/**
 * Every capability, in the order its hooks run: projections over a stored batch, append policies inside each
 * batch's transaction, reactions after a commit, and tick steps within a stage. A command two of them answer
 * goes to the later one, which may hand it down to the earlier.
 */
export const CAPABILITIES = [
  threadsCapability,
  keysCapability,
  trustCapability,
  leasesCapability,
  channelsCapability,
  statusCapability,
  transcriptsCapability,
] as const satisfies readonly AnyCapability<ThreadsContext, Batch, Outcome>[];

/** A list of capabilities a workspace is composed of (tests compose their own). */
export type CapabilityList = readonly AnyCapability<ThreadsContext, Batch, Outcome>[];

/** Every projection of a workspace store, in the order they run over a stored batch. */
export const PROJECTIONS: readonly Projection[] = projectionsOf(CAPABILITIES);

/** Every workspace command the capabilities answer, by name. */
export const CAPABILITY_HANDLERS = handlersOf<ThreadsContext, typeof CAPABILITIES>(CAPABILITIES);

/** The handler table of another list (a host composed of it answers exactly these). */
export function handlersFor(caps: CapabilityList): Partial<Handlers<ThreadsContext, CommandName>> {
  return handlersOf<ThreadsContext, CapabilityList>(caps);
}

/**
 * Composes one open workspace from `caps`: the writer that signs every op it appends, the kernel that appends
 * through the list's policies and runs its reactions and tick, and the chat engine on top.
 */
export function workspaceContext(deps: EngineDeps, caps: CapabilityList = CAPABILITIES): ThreadsContext {
  // The signer is read at each append: a key rotation switches it under a running engine.
  const writer: Author = {
    workspace: deps.workspace.id,
    origin: deps.origin,
    now: deps.now,
    projections: deps.projections,
    get signer() {
      return deps.keys.signer;
    },
  };
  const ctx = { deps, writer } as ThreadsContext;
  ctx.kernel = observed(createKernel(caps, ctx, writer, newOutcome), deps.observe);
  ctx.engine = createEngine(ctx);
  return ctx;
}

/** The kernel, with every outcome it gives back (a commit's, a reaction's, a tick's) also shown to `observe`. */
function observed(kernel: ThreadsContext['kernel'], observe: EngineDeps['observe']): ThreadsContext['kernel'] {
  if (observe === undefined) return kernel;
  const tell = (o: Outcome): Outcome => (observe(o), o);
  return {
    ...kernel,
    settle: async (commit) => tell(await kernel.settle(commit)),
    ingested: async (ops) => tell(await kernel.ingested(ops)),
    tick: async () => tell(await kernel.tick()),
  };
}

export type { ThreadsContext as HostContext };
