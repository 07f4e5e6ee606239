// `nxs mcp` in a session's MCP configuration: claude's --mcp-config and codex's mcp_servers, only for
// the Nexus tools the persona's `tools:` allow (none for `tools: []`, which stays reply-only).
import path from 'node:path';
import { MCP_ALL_TOOLS, MCP_SERVER_NAME, MCP_TOOL_PREFIX, mcpToolsFor } from '../../../../protocol/mcp.js';
import type { NormalisedPersona } from '../../../../protocol/persona.js';
import { packageRoot } from '../../../paths.js';

type McpPersona = Pick<NormalisedPersona, 'tools' | 'permissions'>;

/** The server's command line for these tools: this package's `nxs mcp`, started by the same Node. */
export function nexusMcpServer(tools: readonly string[]): { command: string; args: string[] } {
  return { command: process.execPath, args: [path.join(packageRoot(), 'bin', 'nxs'), 'mcp', '--tools', tools.join(',')] };
}

/** A name in `tools:` that speaks of the Nexus server, which claude's --allowedTools gets as the tools' own names. */
const namesServer = (t: string) => t === MCP_ALL_TOOLS || t === `mcp__${MCP_SERVER_NAME}` || t.startsWith(MCP_TOOL_PREFIX);

/**
 * claude: the extra arguments (an --mcp-config of one server) and the --allowedTools list with the offered
 * tools in it, so print mode runs them without asking. Claude starts the server with its own environment,
 * the session's, so the server speaks for the session exactly as the session's `nxc` does.
 */
export function claudeMcp(persona: McpPersona, allowedTools: readonly string[] | null): { args: string[]; allowedTools: string[] | null } {
  const tools = mcpToolsFor(persona);
  const rest = allowedTools === null ? null : allowedTools.filter((t) => !namesServer(t));
  if (tools === null) return { args: [], allowedTools: rest };
  // alwaysLoad: print mode otherwise sends its first request while the server still connects, without its tools.
  const config = { mcpServers: { [MCP_SERVER_NAME]: { type: 'stdio', ...nexusMcpServer(tools), alwaysLoad: true } } };
  return { args: ['--mcp-config', JSON.stringify(config)], allowedTools: [...(rest ?? []), ...tools.map((t) => MCP_TOOL_PREFIX + t)] };
}

const toml = (v: unknown) => JSON.stringify(v);

/**
 * codex: `-c` overrides that declare the server, forward the session's NXC_* variables and NEXUS_HOME by
 * name (codex starts a server with a few variables of its own only), offer the allowed tools and run them
 * without asking (exec has nobody to ask; what they may do is decided by the declaration and the brakes).
 */
export function codexMcpArgs(persona: McpPersona, env: NodeJS.ProcessEnv): string[] {
  const tools = mcpToolsFor(persona);
  if (tools === null) return [];
  const { command, args } = nexusMcpServer(tools);
  const forward = Object.keys(env).filter((k) => (k.startsWith('NXC_') || k === 'NEXUS_HOME') && env[k] !== undefined).sort();
  const key = `mcp_servers.${MCP_SERVER_NAME}`;
  return [
    ['command', command],
    ['args', args],
    ['env_vars', forward],
    ['enabled_tools', tools],
    ['default_tools_approval_mode', 'approve'],
    // Waited for before the first request (codex otherwise adds a server's tools once it has started).
    ['required', true],
  ].flatMap(([k, v]) => ['-c', `${key}.${String(k)}=${toml(v)}`]);
}
