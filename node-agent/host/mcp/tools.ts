// Running one Nexus tool: its arguments parsed once, its command run through the router nxc uses (the
// node when it serves the workspace, the store otherwise), its answer or refusal as an MCP tool result.
import { COMMANDS, type CallerClaim, type WorkspaceCommand } from '../../../protocol/commands.js';
import { internalError, NexusError } from '../../../protocol/errors.js';
import { mcpTools, type McpTool } from '../../../protocol/mcp.js';
import { waitOutcome, type StatusRow, type Warning } from '../../../protocol/receipts.js';
import type { RoundStatus } from '../../../protocol/round.js';
import type { Workspace } from '../../adapters/workspace/index.js';
import { windowUnscheduled } from '../../capabilities/channels/warnings.js';
import { isRegistered, nodePaths, runningNode } from '../node/files.js';
import type { Router } from '../remote.js';

/**
 * Runs one command as the tools' caller and answers its result (with the receipt warnings nxc adds) and the way
 * it went. Outside a session: the router nxc uses, as the person running it (`localExec`). Inside a session's
 * sandbox: the session's socket, which runs it as the session whatever this process claims (`cli/session-socket.ts`).
 */
export type Exec = (command: WorkspaceCommand, input: Record<string, unknown>) => Promise<{ result: Record<string, unknown>; via: 'node' | 'direct' }>;

/** What the tools need from whoever serves them. */
export type ToolDeps = {
  exec: Exec;
  /** The tool names offered; any other is neither listed nor run. */
  offered: readonly string[];
  /** How often `wait` asks again; the default follows nxc wait (sooner through a node). */
  pollMs?: (via: 'node' | 'direct') => number;
};

/** Whether a command's input names its caller (which is never the model's, nor a client's, to say). */
const takesCaller = (command: WorkspaceCommand) => 'caller' in ((COMMANDS[command].input as unknown as { shape: Record<string, unknown> }).shape ?? {});

/** The pieces an nxc verb gets from its Io, from which a command runs here. */
export type LocalDeps = {
  /** Who is calling: decided by whoever serves, never taken from the input. */
  caller: () => CallerClaim;
  /** The workspace the commands act on, found as nxc finds it (a failure is the call's NOT_A_WORKSPACE). */
  workspace: () => Workspace;
  router: Router;
  env: NodeJS.ProcessEnv;
};

/** Runs a command here, through the router, as `deps.caller()`: any `caller` in the input is dropped first. */
export function localExec(deps: LocalDeps): Exec {
  return async (command, raw) => {
    const { caller: _claimed, ...args } = raw;
    const input = takesCaller(command) ? { ...args, caller: deps.caller() } : args;
    const ws = deps.workspace();
    // The command's own schema checks the input again where it runs (node or store), as for nxc.
    const r = await deps.router(ws, (run) => (run as (n: WorkspaceCommand, i: unknown) => Promise<unknown>)(command, input), deps.env);
    return { result: withWarnings(r.result, ws, r.serviceWarning, deps.env), via: r.via };
  };
}

/** An MCP tool result: JSON text for any client, the same object as structured content. */
export type ToolResult = { content: Array<{ type: 'text'; text: string }>; structuredContent: Record<string, unknown>; isError?: boolean };

const ok = (value: Record<string, unknown>): ToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value });

/** A refusal as a tool error: `{ok: false, error: {code, message}}`, the shape `nxc --json` prints. */
export function refusal(err: unknown): ToolResult {
  const value = { ok: false, error: internalError(err).toJSON() };
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value, isError: true };
}

/** The tools offered, in listing order. */
export function offeredTools(offered: readonly string[]): McpTool[] {
  return mcpTools().filter((t) => offered.includes(t.name));
}

function parseArgs(t: McpTool, raw: unknown): Record<string, unknown> {
  const parsed = t.input.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length > 0 ? ` (${issue.path.join('.')})` : '';
  throw new NexusError('BAD_REQUEST', `bad arguments for ${t.name}${where}: ${issue?.message ?? 'invalid'}`);
}

/** The receipt warnings nxc adds after the command: no node running for a registered workspace, a round window with no clock. */
function withWarnings(result: unknown, ws: Workspace, service: Warning | null, env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out = result as Record<string, unknown> & { warnings?: Warning[]; round?: RoundStatus };
  if (!Array.isArray(out.warnings)) return out;
  const warnings = [...out.warnings, ...(service ? [service] : [])];
  if (out.round !== undefined) {
    const paths = nodePaths(env['NEXUS_HOME'] ? env['NEXUS_HOME'] : undefined);
    const w = windowUnscheduled(out.round, { registered: isRegistered(paths, ws.id), running: runningNode(paths) !== null });
    if (w !== null) warnings.push(w);
  }
  return { ...out, warnings };
}

const sleep = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/** `threads.show` asked again until the thread is answered, the time is up or the client cancels the call. */
async function wait(deps: ToolDeps, thread: string, timeoutS: number, signal: AbortSignal | undefined): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutS * 1000;
  const every = deps.pollMs ?? ((via) => (via === 'node' ? 500 : 2_000));
  for (;;) {
    const r = await deps.exec('threads.show', { thread });
    const row = (r.result as { thread: StatusRow }).thread;
    const outcome = waitOutcome(row);
    if (outcome !== null) return { outcome, thread: row };
    if (Date.now() >= deadline || signal?.aborted === true) return { outcome: 'timed_out', thread: row };
    await sleep(Math.min(every(r.via), Math.max(0, deadline - Date.now())), signal);
  }
}

/** Runs tool `name` with the model's arguments. Every failure, ours or the engine's, comes back as a coded tool error. */
export async function callTool(deps: ToolDeps, name: string, raw: unknown, signal?: AbortSignal): Promise<ToolResult> {
  try {
    const t = mcpTools().find((x) => x.name === name);
    if (t === undefined || !deps.offered.includes(name)) throw new NexusError('BAD_REQUEST', `no tool named ${JSON.stringify(name)} is offered here`);
    const args = parseArgs(t, raw);
    if (t.waits) {
      const { timeout_s, ...show } = args as { timeout_s: number; thread: string };
      return ok(await wait(deps, show.thread, timeout_s, signal));
    }
    return ok((await deps.exec(t.command, args)).result);
  } catch (err) {
    return refusal(err);
  }
}
