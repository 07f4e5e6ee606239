// The tools `nxs mcp` offers, derived from protocol/commands.ts: the nxc verbs a session may use, each
// with its name, description and input JSON schema generated from its command, so the list cannot drift.
import { z } from 'zod';
import { COMMANDS, type CommandName, type WorkspaceCommand } from './commands.js';
import type { NormalisedPersona } from './persona.js';

/** The name agent clients give the server: claude calls its tools `mcp__nexus__<tool>`. */
export const MCP_SERVER_NAME = 'nexus';

/** What a persona's `tools:` names to allow every Nexus tool (like `Bash` for the shell). */
export const MCP_ALL_TOOLS = 'nxc';

/** A persona allows one Nexus tool by the name claude gives it. */
export const MCP_TOOL_PREFIX = `mcp__${MCP_SERVER_NAME}__`;

/** Longest a `wait` call may block before it answers `timed_out`: agent clients give up on a tool call long before a day. */
export const WAIT_MAX_SECONDS = 600;
const WAIT_DEFAULT_SECONDS = 120;

/** The commands a session may run as tools; `wait` is `threads.show` asked again until the thread is answered. */
const SESSION_COMMANDS = ['send', 'reply', 'status', 'threads.show', 'guide.personas'] as const satisfies readonly WorkspaceCommand[];

type Shape = Record<string, z.ZodType>;

/**
 * A command's input as a tool takes it: `caller` is never the model's to say (the server fills it in
 * with who is calling); a boolean left out is false and a nullable value left out is null, so a model
 * writes only what it means.
 */
function toolInput(command: CommandName, extra: Shape = {}): z.ZodObject {
  const shape = (COMMANDS[command].input as unknown as z.ZodObject).shape as Shape;
  const out: Shape = {};
  for (const [key, schema] of Object.entries(shape)) {
    if (key === 'caller') continue;
    if (schema instanceof z.ZodBoolean) out[key] = schema.default(false);
    else if (schema instanceof z.ZodNullable) out[key] = schema.default(null);
    else out[key] = schema;
  }
  return z.strictObject({ ...out, ...extra });
}

/** One tool: the command it runs, and how it is described to a model. */
export type McpTool = {
  name: string;
  command: WorkspaceCommand;
  /** True for `wait`: the command is asked again until the thread is answered or the time is up. */
  waits: boolean;
  /** Whether the tool takes `caller` (filled in by the server). */
  takesCaller: boolean;
  /** It writes nothing (its command is not applied once per request): clients may run it without asking. */
  readOnly: boolean;
  description: string;
  input: z.ZodObject;
  inputSchema: Record<string, unknown> & { type: 'object' };
};

function describe(summary: string, command: CommandName): string {
  const errors = COMMANDS[command].errors;
  return `${summary}.${errors.length > 0 ? ` Refusals come back as tool errors whose JSON names the code: ${errors.join(', ')}.` : ''}`;
}

function tool(name: string, command: WorkspaceCommand, summary: string, extra?: Shape): McpTool {
  const input = toolInput(command, extra);
  const { $schema: _drop, ...schema } = z.toJSONSchema(input, { io: 'input' }) as Record<string, unknown>;
  return {
    name,
    command,
    waits: name === 'wait',
    readOnly: COMMANDS[command].once !== true,
    takesCaller: 'caller' in ((COMMANDS[command].input as unknown as z.ZodObject).shape as Shape),
    description: describe(summary, command),
    input,
    inputSchema: { ...schema, type: 'object' },
  };
}

/** The tool a command becomes: its name with `_` for `.` (`threads.show` -> `threads_show`). */
export function toolNameOf(command: CommandName): string {
  return command.replaceAll('.', '_');
}

let tools: readonly McpTool[] | undefined;

/** Every tool, in the order they are listed (made on first use: generating the schemas costs a command that needs none). */
export function mcpTools(): readonly McpTool[] {
  return (tools ??= [
    ...SESSION_COMMANDS.map((c) => tool(toolNameOf(c), c, COMMANDS[c].summary)),
    tool('wait', 'threads.show', `wait until a thread is answered (at most timeout_s seconds, ${WAIT_MAX_SECONDS} at most): outcome is answered, escalated, refused or timed_out, beside the thread's status row`, {
      timeout_s: z.number().positive().max(WAIT_MAX_SECONDS).default(WAIT_DEFAULT_SECONDS),
    }),
  ]);
}

export const MCP_TOOL_NAMES: readonly string[] = [...SESSION_COMMANDS.map(toolNameOf), 'wait'];

/**
 * The Nexus tools a persona's declaration allows, or null for none (no server is offered). Like any
 * tool: no `tools:` key (the default toolset) or bypassPermissions allows all; `nxc` names them all;
 * `mcp__nexus__<tool>` names one. `tools: []` stays reply-only, and plan mode acts with nothing.
 */
export function mcpToolsFor(persona: Pick<NormalisedPersona, 'tools' | 'permissions'>): string[] | null {
  if (persona.permissions === 'bypassPermissions' || persona.tools === undefined) return [...MCP_TOOL_NAMES];
  if (persona.permissions === 'plan') return null;
  const names = new Set<string>();
  for (const raw of persona.tools) {
    const t = raw.trim();
    if (t === MCP_ALL_TOOLS || t === `mcp__${MCP_SERVER_NAME}`) MCP_TOOL_NAMES.forEach((n) => names.add(n));
    else if (t.startsWith(MCP_TOOL_PREFIX) && MCP_TOOL_NAMES.includes(t.slice(MCP_TOOL_PREFIX.length))) names.add(t.slice(MCP_TOOL_PREFIX.length));
  }
  return names.size === 0 ? null : MCP_TOOL_NAMES.filter((n) => names.has(n));
}

/** The tool list as a Markdown table (`nxs mcp --list`, and the README's copy a test compares with it). */
export function mcpToolTable(): string {
  const rows = mcpTools().map((t) => {
    const args = Object.keys(t.input.shape).join(', ') || '(none)';
    return `| \`${t.name}\` | \`${t.command}\`${t.waits ? ' (until answered)' : ''} | ${args} |`;
  });
  return ['| tool | command | arguments |', '| --- | --- | --- |', ...rows].join('\n') + '\n';
}
