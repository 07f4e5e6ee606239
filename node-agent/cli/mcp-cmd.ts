// `nxs mcp`: the session tools (nxc's verbs) as an MCP server on stdio, for agent clients that load MCP
// servers; `--list` prints the generated tool table instead.
import { existsSync } from 'node:fs';
import { NexusError } from '../../protocol/errors.js';
import { MCP_TOOL_NAMES, mcpTools, mcpToolTable } from '../../protocol/mcp.js';
import { SESSION_SOCKET_PATH } from '../adapters/sandbox/socket-path.js';
import { findWorkspace } from '../adapters/workspace/index.js';
import type { Exec } from '../host/mcp/index.js';
import { packageVersion } from '../paths.js';
import { callerFromEnv, printJson, routerOf, type Io } from './io.js';
import { bool, str, type Verb } from './spec.js';

/**
 * How the server's tools run their commands, and so whom they speak for. Inside a session's sandbox, through the
 * session's socket (its credential), which runs them as that session whatever this process's environment claims;
 * outside one, here, as the person running it (what `nxc` decides in the same environment).
 */
export async function execOf(io: Io, sessionSocket: string | null = existsSync(SESSION_SOCKET_PATH) ? SESSION_SOCKET_PATH : null): Promise<Exec> {
  if (sessionSocket !== null) {
    const { postSessionCommand } = await import('./session-call.js');
    return (command, input) => postSessionCommand(sessionSocket, command, input);
  }
  const { localExec } = await import('../host/mcp/index.js');
  return localExec({ caller: () => callerFromEnv(io.env), workspace: () => findWorkspace(io.cwd, io.env), router: routerOf(io), env: io.env });
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
      "as the same caller: inside a session's sandbox, that session, through its socket (whatever the environment says);\n" +
      'outside one, the person running it (NXC_ACTOR, else the login).\n' +
      'A refusal is a tool error whose JSON carries the code ({"ok": false, "error": {"code": ...}}).',
    run: async (io, a) => {
      const offered = toolsOption(str(a, 'tools'));
      if (bool(a, 'list')) {
        if (a.json) return printJson(io, mcpTools().filter((t) => offered.includes(t.name)).map((t) => ({ name: t.name, command: t.command, description: t.description, inputSchema: t.inputSchema })));
        return io.stdout(mcpToolTable());
      }
      // Loaded here only: the MCP SDK is no cost to nxs's other verbs.
      const { serveMcpStdio } = await import('../host/mcp/index.js');
      await serveMcpStdio({ exec: await execOf(io), offered }, packageVersion());
    },
  },
];
