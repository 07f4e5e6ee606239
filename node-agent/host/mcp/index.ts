// The MCP host's door: `nxs mcp` serves the session tools over stdio.
export { createMcpServer, serveMcpStdio } from './server.js';
export { callTool, offeredTools, refusal, type ToolDeps, type ToolResult } from './tools.js';
