// How the claude-code and codex adapters put `nxs mcp` in a session's MCP configuration, checked against the
// installed CLIs, and how a reply through the Nexus reply tool counts as the session's own.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Persona } from '../../protocol/persona.js';
import { adapterCommand, claudeMcp, claudeReader, codexMcpArgs, codexReader } from '../../node-agent/capabilities/runtime/index.js';
import { REPO } from '../helpers/workspace.js';

const CLAUDE = path.join(REPO, 'node_modules', '.bin', 'claude');
const CODEX = path.join(REPO, 'node_modules', '@openai', 'codex', 'bin', 'codex.js');
const ALL = ['send', 'reply', 'status', 'threads_show', 'guide_personas', 'wait'];

const persona = (over: Partial<Persona> = {}): Persona =>
  ({ model: 'm', system_prompt: 'p', permissions: 'default', working_tree: 'shared', addressable: { external: false }, runtime: { kind: 'claude-code', command: ['nxs-runtime'] }, timeout_ms: null, role: 'r', file: 'f', hash: 'h', ...over }) as Persona;

const valueOf = (args: string[], flag: string) => args[args.indexOf(flag) + 1];

describe('claude: --mcp-config and --allowedTools', () => {
  it('gives a persona allowed the tools one stdio server, started as this package\'s nxs mcp, and pre-approves exactly its tools', () => {
    const { args, allowedTools } = claudeMcp(persona({ tools: ['Read', 'nxc'] }), ['Read', 'nxc']);
    const config = JSON.parse(valueOf(args, '--mcp-config')!);
    expect(config.mcpServers.nexus).toEqual({ type: 'stdio', command: process.execPath, args: [path.join(REPO, 'bin', 'nxs'), 'mcp', '--tools', ALL.join(',')], alwaysLoad: true });
    // `nxc` is not a tool claude knows: it becomes the tools' own names.
    expect(allowedTools).toEqual(['Read', ...ALL.map((t) => `mcp__nexus__${t}`)]);
    expect(claudeMcp(persona({ tools: ['mcp__nexus__status'] }), ['mcp__nexus__status']).allowedTools).toEqual(['mcp__nexus__status']);
  });

  it('adds the tools to the default toolset without narrowing it, and gives tools: [] nothing', () => {
    expect(claudeMcp(persona(), null).allowedTools).toEqual(ALL.map((t) => `mcp__nexus__${t}`));
    expect(claudeMcp(persona({ tools: [] }), ['Bash(nxc reply:*)'])).toEqual({ args: [], allowedTools: ['Bash(nxc reply:*)'] });
    const cmd = adapterCommand('claude-code', { persona: persona({ tools: [] }), env: {}, workspaceDir: '/w', allowedTools: ['Bash(nxc reply:*)'] });
    expect(cmd).not.toContain('--mcp-config');
  });

  it('uses only flags the installed claude has', () => {
    const help = execFileSync(CLAUDE, ['--help'], { encoding: 'utf8', timeout: 60_000 });
    expect(help).toMatch(/--mcp-config/);
    const cmd = adapterCommand('claude-code', { persona: persona({ tools: ['nxc'] }), env: {}, workspaceDir: '/w', allowedTools: ['nxc'] });
    expect(valueOf(cmd, '--allowedTools')).toBe(ALL.map((t) => `mcp__nexus__${t}`).join(','));
  });
});

describe('codex: mcp_servers overrides', () => {
  it('declares the server as the installed codex reads it: forwarding the session\'s variables by name, never their values', () => {
    const env = { NXC_SESSION: 's-1', NXC_HOP: '2', NEXUS_HOME: '/h', SECRET_KEY: 'k' };
    const args = codexMcpArgs(persona({ tools: ['mcp__nexus__send', 'mcp__nexus__wait'] }), env);
    expect(args.join(' ')).not.toContain('s-1');
    const home = mkdtempSync(path.join(tmpdir(), 'codex-home-'));
    try {
      const out = execFileSync(process.execPath, [CODEX, ...args, 'mcp', 'list', '--json'], { encoding: 'utf8', env: { PATH: process.env['PATH'], HOME: home, CODEX_HOME: home }, timeout: 60_000 });
      const nexus = (JSON.parse(out) as any[]).find((s) => s.name === 'nexus');
      expect(nexus).toMatchObject({ enabled: true, transport: { type: 'stdio', command: process.execPath, args: [path.join(REPO, 'bin', 'nxs'), 'mcp', '--tools', 'send,wait'], env_vars: ['NEXUS_HOME', 'NXC_HOP', 'NXC_SESSION'] } });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('offers tools: [] nothing, and keeps the prompt (-) the last argument', () => {
    expect(codexMcpArgs(persona({ tools: [] }), {})).toEqual([]);
    const cmd = adapterCommand('codex', { persona: persona({ tools: ['nxc'] }), env: {}, workspaceDir: '/w', allowedTools: ['nxc'] });
    expect(cmd.at(-1)).toBe('-');
    expect(cmd).toContain('mcp_servers.nexus.default_tools_approval_mode="approve"');
  });
});

describe('a reply through the Nexus reply tool is the session\'s own', () => {
  it('claude: a reply tool call that succeeded, not one that failed', () => {
    const run = (isError: boolean) => {
      const r = claudeReader();
      r.feed({ type: 'assistant', message: { id: 'm1', content: [{ type: 'tool_use', id: 't1', name: 'mcp__nexus__reply', input: { thread: 't', text: 'x' } }] } });
      r.feed({ type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 't1', is_error: isError }] } });
      return r.tally.replied;
    };
    expect(run(false)).toBe(true);
    expect(run(true)).toBe(false);
  });

  it('codex: an mcp_tool_call of nexus/reply that completed, not one that failed or another server\'s', () => {
    const run = (item: Record<string, unknown>) => {
      const r = codexReader();
      r.feed({ type: 'turn.started' });
      r.feed({ type: 'item.completed', item: { id: 'i1', type: 'mcp_tool_call', server: 'nexus', tool: 'reply', status: 'completed', error: null, result: { content: [] }, ...item } });
      return r.tally.replied;
    };
    expect(run({})).toBe(true);
    expect(run({ status: 'failed', error: { message: 'refused' } })).toBe(false);
    expect(run({ result: { content: [], is_error: true } })).toBe(false);
    expect(run({ server: 'other' })).toBe(false);
  });
});
