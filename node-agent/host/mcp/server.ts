// `nxs mcp`: an MCP server over stdio whose tools are the nxc verbs a session may use (protocol/mcp.ts).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { MCP_SERVER_NAME } from '../../../protocol/mcp.js';
import { callTool, offeredTools, type ToolDeps } from './tools.js';

const INSTRUCTIONS =
  'Nexus: commission personas (send), answer or hand back your thread (reply), read operations and threads, and wait for an answer. ' +
  'The brakes are the same as for nxc: depth, loops and reply-only declarations are refused with a code.';

/** The server, its tools bound to `deps`; connect it to a transport. */
export function createMcpServer(deps: ToolDeps, version: string): Server {
  const server = new Server({ name: MCP_SERVER_NAME, version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: offeredTools(deps.offered).map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, annotations: { readOnlyHint: t.readOnly } })),
  }));
  server.setRequestHandler(CallToolRequestSchema, (req, extra) => callTool(deps, req.params.name, req.params.arguments, extra.signal));
  return server;
}

/** Serves on this process's stdin and stdout until the client closes them. */
export async function serveMcpStdio(deps: ToolDeps, version: string): Promise<void> {
  const server = createMcpServer(deps, version);
  const closed = new Promise<void>((resolve) => (server.onclose = resolve));
  await server.connect(new StdioServerTransport());
  // The client ends the session by closing our stdin; the transport does not notice that by itself.
  process.stdin.once('end', () => void server.close());
  await closed;
}
