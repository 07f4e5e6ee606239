// The MCP host's door: `nxs mcp` serves the session tools over stdio.
export { createMcpServer, serveMcpStdio } from './server.js';
export { callTool, localExec, offeredTools, refusal, type Exec, type LocalDeps, type ToolDeps, type ToolResult } from './tools.js';
