// `nxs mcp`: the session tools (nxc's verbs) as an MCP server on stdio, for agent clients that load MCP
// servers; `--list` prints the generated tool table instead.
import type { CallerClaim } from '../../protocol/commands.js';
import { NexusError } from '../../protocol/errors.js';
import { MCP_TOOL_NAMES, mcpTools, mcpToolTable } from '../../protocol/mcp.js';
import { findWorkspace } from '../adapters/workspace/index.js';
import { packageVersion } from '../paths.js';
import { callerFromEnv, printJson, routerOf, type Io } from './io.js';
import { bool, str, type Verb } from './spec.js';

/**
 * Who the server's tools speak for: exactly what `nxc` decides in the same environment. Inside a session
 * the session's client starts this server with the session's identity, as it starts `nxc`; outside one it
 * is the person running it. The single place to change when a session presents a credential instead.
 */
export function callerOf(io: Io): CallerClaim {
  return callerFromEnv(io.env);
}

/** `--tools a,b`: the tools to offer (default: all of them). */
function toolsOption(raw: string | undefined): string[] {
  if (raw === undefined) return [...MCP_TOOL_NAMES];
  const names = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const unknown = names.filter((n) => !MCP_TOOL_NAMES.includes(n));
  if (unknown.length > 0) throw new NexusError('USAGE', `--tools: no tool named ${unknown.join(', ')} (there are ${MCP_TOOL_NAMES.join(', ')})`);
  return MCP_TOOL_NAMES.filter((n) => names.includes(n));
}

export const MCP_VERBS: readonly Verb[] = [
  {
    path: ['mcp'],
    summary: "serve nxc's session verbs as MCP tools on stdio (send, reply, status, threads_show, wait, guide_personas)",
    flags: {
      tools: { type: 'string', value: 'A,B', help: 'offer only these tools (a session gets what its persona declares)' },
      list: { type: 'boolean', help: 'print the tool table instead of serving (with --json: names, descriptions, input schemas)' },
    },
    details:
      'The tools run the same commands as nxc, through the node when it serves the workspace, the store otherwise,\n' +
      'as the same caller: inside a session, that session; outside one, the person running it (NXC_ACTOR, else the login).\n' +
      'A refusal is a tool error whose JSON carries the code ({"ok": false, "error": {"code": ...}}).',
    run: async (io, a) => {
      const offered = toolsOption(str(a, 'tools'));
      if (bool(a, 'list')) {
        if (a.json) return printJson(io, mcpTools().filter((t) => offered.includes(t.name)).map((t) => ({ name: t.name, command: t.command, description: t.description, inputSchema: t.inputSchema })));
        return io.stdout(mcpToolTable());
      }
      // Loaded here only: the MCP SDK is no cost to nxs's other verbs.
      const { serveMcpStdio } = await import('../host/mcp/index.js');
      await serveMcpStdio({ caller: () => callerOf(io), workspace: () => findWorkspace(io.cwd, io.env), router: routerOf(io), env: io.env, offered }, packageVersion());
    },
  },
];
