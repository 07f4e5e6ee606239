// Runs one admitted tool call: inspection without any lock, each acting command under its own revision-checked lease.
import { isNexusError, NexusError } from '../../../../protocol/errors.js';
import { withCommandLease, type CommandLeases } from '../lease.js';
import { inlineOrStore } from './artifacts.js';
import { ToolFailure } from './files.js';
import { performHere, type ToolHost, type ToolRun } from './host.js';
import { isReadOnlyTool, type ToolName } from './policy.js';
import { TOOL_INPUTS } from './specs.js';

export { ALL_TOOLS, decide, isReadOnlyCommand, isReadOnlyTool, offeredTools, policyFor, READ_ONLY_TOOLS, ACTING_TOOLS, type CallDecision, type ToolName, type ToolPolicy } from './policy.js';
export { ESCALATE_TOOL, EscalateInput, TOOL_INPUTS, toolSpecs } from './specs.js';
export { ARTIFACT_DIR } from './artifacts.js';
export { sandboxedTools, serveTools, type ToolHost } from './host.js';

export type ToolContext = {
  root: string;
  env: NodeJS.ProcessEnv;
  signal: AbortSignal;
  maxChars: number;
  leases: CommandLeases;
  owner: string;
  /** The working copy's revision now. */
  revision: () => Promise<string>;
  /** The revision the model last inspected; inspection and the runtime's own commands move it. */
  expected: { value: string };
  heartbeatMs?: number | undefined;
  /** The turn's sandboxed tool host: every call's effect runs there. */
  host?: ToolHost | undefined;
};

export type ToolOutcome = { content: string; is_error: boolean; artifact: string | null; lease: string | null };

type Run = ToolRun;

async function perform(name: ToolName, input: any, ctx: ToolContext): Promise<Run> {
  // Inside the turn's sandbox when it has one; here only when the workspace runs sessions without one.
  if (ctx.host !== undefined) return ctx.host.perform(name, input, ctx.signal);
  return performHere(name, input, ctx.root, ctx.env, ctx.signal, ctx.maxChars);
}

function withNotes(message: string, err: unknown): string {
  const notes = (err as { notes?: string[] } | null)?.notes ?? [];
  return [message, ...notes.map((n) => `note: ${n}`)].join('\n');
}

/**
 * Executes one call whose input already passed its schema and the policy.
 * A refusal or failure the model can act on is an error result; a lost lease is thrown
 * (NexusError LEASE_LOST), because what holds the working copy is then unknown.
 */
export async function executeTool(name: ToolName, input: unknown, ctx: ToolContext): Promise<ToolOutcome> {
  const parsed = TOOL_INPUTS[name].parse(input);
  let lease: string | null = null;
  let run: Run;
  try {
    if (isReadOnlyTool(name)) {
      // Read the revision first: if the tree moves during the read, the next act is refused, never let through on a stale view.
      const before = await ctx.revision();
      run = await perform(name, parsed, ctx);
      ctx.expected.value = before;
    } else {
      run = await withCommandLease(
        ctx.leases,
        { owner: ctx.owner, expectedRevision: ctx.expected.value },
        async (l) => {
          lease = l.id;
          try {
            return await perform(name, parsed, ctx);
          } finally {
            // What this command did is the runtime's own change: the model's view moves with it.
            ctx.expected.value = await ctx.revision();
          }
        },
        ctx.heartbeatMs,
      );
    }
  } catch (err) {
    if (err instanceof ToolFailure) return { content: withNotes(err.message, err), is_error: true, artifact: null, lease };
    if (isNexusError(err) && (err.code === 'REVISION_CONFLICT' || err.code === 'LEASE_HELD')) {
      return { content: `${err.code}: ${err.message}. Nothing was run.`, is_error: true, artifact: null, lease };
    }
    if (isNexusError(err) && err.code === 'LEASE_LOST') throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
      return { content: withNotes(`${name} failed: ${(err as Error).message}`, err), is_error: true, artifact: null, lease };
    }
    throw err instanceof Error ? err : new NexusError('INTERNAL', String(err));
  }
  const { content, artifact } = await inlineOrStore(ctx.root, run.text, ctx.maxChars);
  return { content, is_error: run.failed, artifact, lease };
}
