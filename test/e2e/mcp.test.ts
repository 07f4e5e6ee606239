// `nxs mcp` driven by the MCP SDK's own client over stdio: the tools it lists are generated from
// protocol/commands.ts, each runs the command nxc runs (as the same caller), and a refusal is a coded tool error.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { COMMANDS } from '../../protocol/commands.js';
import { MCP_TOOL_NAMES, mcpToolsFor, mcpToolTable } from '../../protocol/mcp.js';
import { REPO, makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';

type Result = { isError?: boolean; structuredContent?: any; content: Array<{ type: string; text?: string }> };

let ws: TestWorkspace;

/** A client connected to `nxs mcp` started in the workspace, as an agent client would start it. */
async function connect(env: Record<string, string> = {}, args: string[] = []): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(REPO, 'bin', 'nxs'), 'mcp', ...args],
    cwd: ws.root,
    env: { PATH: `${join(REPO, 'bin')}:${process.env['PATH'] ?? ''}`, HOME: process.env['HOME'] ?? '/tmp', NEXUS_HOME: ws.home ?? inject('nexusHome'), NXC_ACTOR: 'alice', AGENT_LOG: ws.log, ...env },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Result> {
  return (await client.callTool({ name, arguments: args })) as Result;
}

/** The JSON a result carries, as text (any client) and structured: the two must agree. */
function json(r: Result): any {
  const text = JSON.parse(r.content[0]!.text!);
  expect(r.structuredContent).toEqual(text);
  return text;
}

beforeAll(async () => {
  ws = await makeWorkspace({ real: true });
  ws.cliInProcess = true;
  ws.persona('worker', { mode: 'reply' });
});
afterAll(async () => {
  await ws.cleanup();
});

describe('the tool list', () => {
  it('is generated from protocol/commands.ts: a tool per session command, its summary, refusals and input without the caller', async () => {
    const client = await connect();
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['send', 'reply', 'status', 'threads_show', 'guide_personas', 'wait']);
      for (const t of tools) {
        const command = t.name === 'wait' ? 'threads.show' : (t.name.replace('_', '.') as keyof typeof COMMANDS);
        const spec = COMMANDS[command];
        expect(t.description).toContain(t.name === 'wait' ? 'wait until a thread is answered' : spec.summary);
        for (const code of spec.errors) expect(t.description).toContain(code);
        const fields = Object.keys((spec.input as any).shape).filter((k) => k !== 'caller');
        expect(Object.keys(t.inputSchema.properties ?? {}).sort()).toEqual([...fields, ...(t.name === 'wait' ? ['timeout_s'] : [])].sort());
        // Only what the command cannot default is required: text and its address, never the caller or a flag.
        for (const r of t.inputSchema.required ?? []) expect((spec.input as any).shape[r].safeParse(undefined).success).toBe(false);
      }
      const send = tools.find((t) => t.name === 'send')!;
      expect(send.inputSchema.required).toEqual(['to', 'text']);
      expect(send.inputSchema.properties).toMatchObject({ to: { type: 'string', maxLength: 256 } });
    } finally {
      await client.close();
    }
  });

  it('offers only the tools named by --tools', async () => {
    const client = await connect({}, ['--tools', 'status,wait']);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['status', 'wait']);
      const r = await call(client, 'send', { to: 'worker', text: 'hi' });
      expect(r.isError).toBe(true);
      expect(json(r).error.code).toBe('BAD_REQUEST');
    } finally {
      await client.close();
    }
  });

  // The page's table is generated: between its markers stands exactly what `nxs mcp --list` prints.
  // UPDATE_DOCS=1 writes it there.
  it('is the table docs/protocols.md shows', () => {
    const file = join(REPO, 'docs', 'protocols.md');
    const page = readFileSync(file, 'utf8');
    const block = /(<!-- mcp-tools: generated, do not edit -->\n)([\s\S]*?)(<!-- \/mcp-tools -->)/;
    if (process.env['UPDATE_DOCS'] === '1') writeFileSync(file, page.replace(block, (_m, open: string, _old: string, close: string) => `${open}${mcpToolTable()}${close}`));
    expect(block.exec(readFileSync(file, 'utf8'))?.[2]).toBe(mcpToolTable());
  });
});

describe('calling each tool', () => {
  it('sends as the person running it, waits for the answer, and reads it back through status and threads_show', async () => {
    const client = await connect({ NXC_ACTOR: 'bob' });
    try {
      const sent = json(await call(client, 'send', { to: 'worker', subject: 'mcp', text: 'Do the thing.' }));
      expect(sent).toMatchObject({ posted: true, woke: { role: 'worker', depth: 1 } });
      const waited = await call(client, 'wait', { thread: sent.thread, timeout_s: 120 });
      expect(waited.isError).toBeFalsy();
      expect(json(waited)).toMatchObject({ outcome: 'answered', thread: { thread: sent.thread, state: 'answered' } });
      const view = json(await call(client, 'threads_show', { thread: sent.thread }));
      expect(view.messages.map((m: any) => [m.author, m.text])).toEqual([
        ['bob', 'Do the thing.'],
        [`${ws.short}/worker`, 'done by ' + `${ws.short}/worker` + ' at depth 1'],
      ]);
      const status = json(await call(client, 'status', { all: true }));
      const row = status.operations.flatMap((o: any) => o.threads).find((t: any) => t.thread === sent.thread);
      expect(row).toMatchObject({ opener: 'bob', subject: 'mcp', state: 'answered', session: { depth: 1 } });
      const guide = json(await call(client, 'guide_personas', {}));
      expect(guide.personas.map((p: any) => p.role)).toContain('worker');
      // A person answering the worker's answer: reply runs the same command as nxc reply.
      const replied = json(await call(client, 'reply', { thread: sent.thread, text: 'Thanks.' }));
      expect(replied).toMatchObject({ posted: true, thread: sent.thread });
      await ws.waitIdle();
    } finally {
      await client.close();
    }
  });

  it('refuses with the engine\'s code as a tool error: unknown thread, the depth cap, bad arguments', async () => {
    const client = await connect({ NXC_HOP: '32' });
    try {
      const unknown = await call(client, 'threads_show', { thread: 't-00000000000000000000000000' });
      expect(unknown.isError).toBe(true);
      expect(json(unknown)).toMatchObject({ ok: false, error: { code: 'UNKNOWN_THREAD' } });
      const deep = await call(client, 'send', { to: 'worker', text: 'one more hop' });
      expect(deep.isError).toBe(true);
      expect(json(deep).error).toMatchObject({ code: 'DEPTH_EXCEEDED', details: { caller_depth: 32, cap: 32 } });
      const bad = await call(client, 'reply', { thread: 't-1', escalate: 'yes', text: 'x' });
      expect(bad.isError).toBe(true);
      expect(json(bad).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('escalate') });
      const stranger = await call(client, 'send', { to: 'worker', text: 'hi', caller: { actor: 'mallory', session: null, hop: 0 } });
      expect(json(stranger).error.code).toBe('BAD_REQUEST');
    } finally {
      await client.close();
    }
  });

  it('refuses a malformed identity as nxc does, before anything is written', async () => {
    const client = await connect({ NXC_SESSION: 'not a session' });
    try {
      const r = await call(client, 'send', { to: 'worker', text: 'hi' });
      expect(json(r).error.code).toBe('BAD_ENVIRONMENT');
    } finally {
      await client.close();
    }
  });
});

describe('through a node', () => {
  it('runs the same commands over the node serving the workspace', async () => {
    const served = await makeWorkspace({ real: true });
    served.cliInProcess = true;
    const outer = ws;
    try {
      await served.startNode();
      served.persona('worker', { mode: 'reply' });
      ws = served;
      const client = await connect();
      try {
        const sent = json(await call(client, 'send', { to: 'worker', text: 'Through the node.' }));
        expect(sent).toMatchObject({ posted: true, woke: { role: 'worker' } });
        expect(json(await call(client, 'wait', { thread: sent.thread, timeout_s: 120 }))).toMatchObject({ outcome: 'answered' });
        const bad = await call(client, 'threads_show', { thread: 't-00000000000000000000000000' });
        expect(json(bad).error.code).toBe('UNKNOWN_THREAD');
      } finally {
        await client.close();
      }
    } finally {
      ws = outer;
      await served.cleanup();
    }
  }, 180_000);
});

describe('which personas are offered the tools', () => {
  it.each([
    ['no tools key (the default toolset)', { permissions: 'default' as const }, MCP_TOOL_NAMES],
    ['tools: [nxc]', { tools: ['Read', 'nxc'], permissions: 'default' as const }, MCP_TOOL_NAMES],
    ['tools naming two tools', { tools: ['mcp__nexus__status', 'mcp__nexus__wait', 'mcp__other__x'], permissions: 'default' as const }, ['status', 'wait']],
    ['tools: [] (reply-only)', { tools: [], permissions: 'default' as const }, null],
    ['tools without any of them', { tools: ['Read', 'Bash'], permissions: 'default' as const }, null],
    ['tools: [] with bypassPermissions', { tools: [], permissions: 'bypassPermissions' as const }, MCP_TOOL_NAMES],
    ['plan mode', { tools: ['nxc'], permissions: 'plan' as const }, null],
  ])('%s', (_n, persona, expected) => {
    expect(mcpToolsFor(persona)).toEqual(expected === null ? null : [...expected]);
  });
});
