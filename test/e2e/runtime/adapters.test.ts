// The claude-code and codex adapters: every flag they emit exists in the installed CLI, and their event streams are read right.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PERMISSION_MODES, type Persona } from '../../../protocol/persona.js';
import { claudeArgs, claudeReader, codexArgs, codexReader, runAdapterTurn, type Answer } from '../../../node-agent/capabilities/runtime/index.js';
import { startFakeProvider, type FakeProvider } from '../../helpers/fake-provider/index.js';
import { REPO } from '../../helpers/workspace.js';
import { makeWorkingCopy } from '../../runtime/fixture.js';

const CLAUDE = path.join(REPO, 'node_modules', '.bin', 'claude');
const CLAUDE_BINARY = path.join(REPO, 'node_modules', '@anthropic-ai', 'claude-code-linux-x64', 'claude');
const CODEX = path.join(REPO, 'node_modules', '@openai', 'codex', 'bin', 'codex.js');

/** The CLI's own --help; when it cannot run here, the strings of its shipped binary, and the test says which. */
function help(kind: 'claude' | 'codex'): { text: string; source: string } {
  try {
    const text = kind === 'claude' ? execFileSync(CLAUDE, ['--help'], { encoding: 'utf8', timeout: 60_000 }) : execFileSync(process.execPath, [CODEX, 'exec', '--help'], { encoding: 'utf8', timeout: 60_000 });
    return { text, source: `${kind} --help` };
  } catch (err) {
    const binary = kind === 'claude' ? CLAUDE_BINARY : path.join(REPO, 'node_modules', '@openai', 'codex-linux-x64', 'vendor', 'x86_64-unknown-linux-musl', 'bin', 'codex');
    console.warn(`${kind} --help could not run (${String(err)}); checking against the strings of ${binary}`);
    return { text: readFileSync(binary).toString('latin1'), source: `strings of ${binary}` };
  }
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const flagsOf = (args: string[]) => args.filter((a) => a.startsWith('-') && a !== '-');
const valueOf = (args: string[], flag: string) => args[args.indexOf(flag) + 1];

const persona = (over: Partial<Persona> = {}): Persona =>
  ({ model: 'claude-sonnet-4-5', system_prompt: 'You review code.', permissions: 'default', working_tree: 'shared', addressable: { external: false }, runtime: { kind: 'claude-code', command: ['nxs-runtime'] }, timeout_ms: null, role: 'r', file: 'f', hash: 'h', ...over }) as Persona;

describe('every flag an adapter emits is one the installed CLI has', () => {
  const variants: Array<[string, Partial<Persona>, string[] | null]> = [
    ['the default toolset', {}, null],
    ['a reply-only persona', { tools: [] }, ['Bash(nxc reply:*)']],
    ['a persona with Bash rules', { tools: ['Read', 'Bash(npm test:*)'] }, ['Read', 'Bash(npm test:*)']],
    ...PERMISSION_MODES.map((m) => [`permissions: ${m}`, { permissions: m }, null] as [string, Partial<Persona>, null]),
  ];

  it.each(variants)('claude -p for %s', (_n, over, allowed) => {
    const { text, source } = help('claude');
    const args = claudeArgs(persona(over), allowed);
    for (const flag of flagsOf(args)) expect(text, `${flag} in ${source}`).toMatch(new RegExp(`(^|[\\s,])${escape(flag)}(?=[\\s,=]|$)`, 'm'));
    expect(text).toMatch(new RegExp(`--permission-mode[\\s\\S]*?"${escape(valueOf(args, '--permission-mode')!)}"`));
    expect(text).toMatch(/--output-format[\s\S]*?"stream-json"/);
    if (allowed !== null) expect(valueOf(args, '--allowedTools')).toBe(allowed.join(','));
  });

  it.each(variants)('codex exec for %s', (_n, over) => {
    const { text, source } = help('codex');
    const args = codexArgs(persona(over), '/work/x');
    expect(args[0]).toBe('exec');
    for (const flag of flagsOf(args)) expect(text, `${flag} in ${source}`).toMatch(new RegExp(`(^|[\\s,])${escape(flag)}(?=[\\s,=]|$)`, 'm'));
    if (args.includes('--sandbox')) expect(text).toMatch(new RegExp(`possible values: [^\\]]*\\b${escape(valueOf(args, '--sandbox')!)}\\b`));
    expect(text).toMatch(new RegExp(`possible values: [^\\]]*\\b${escape(valueOf(args, '--color')!)}\\b`));
  });

  it('maps the declaration onto the flags that carry it', () => {
    expect(codexArgs(persona({ tools: [] }), '/w')).toEqual(expect.arrayContaining(['--sandbox', 'read-only']));
    expect(codexArgs(persona({ permissions: 'bypassPermissions' }), '/w')).toContain('--dangerously-bypass-approvals-and-sandbox');
    expect(codexArgs(persona(), '/w')).toEqual(expect.arrayContaining(['--sandbox', 'workspace-write', '--model', 'claude-sonnet-4-5', '--cd', '/w']));
    // Not a login shell: /etc/profile would reset the PATH that carries nxc.
    expect(valueOf(codexArgs(persona(), '/w'), '-c')).toBe('allow_login_shell=false');
    const c = claudeArgs(persona({ permissions: 'acceptEdits' }), null);
    expect(c).toEqual(expect.arrayContaining(['--model', 'claude-sonnet-4-5', '--permission-mode', 'acceptEdits', '--append-system-prompt', 'You review code.']));
    expect(c).not.toContain('--allowedTools');
  });
});

describe('reading the event streams', () => {
  it('reads claude usage, its own reply and its final answer from stream-json', () => {
    const r = claudeReader();
    const events = [
      { type: 'system', subtype: 'init' },
      { type: 'assistant', message: { id: 'm1', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: "nxc reply --thread t-1 - <<'EOF'\ndone\nEOF" } }], usage: { input_tokens: 100, output_tokens: 1 } } },
      { type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 't1', is_error: false, content: 'posted' }] } },
      { type: 'assistant', message: { id: 'm2', content: [{ type: 'text', text: 'Replied.' }], usage: { input_tokens: 120, output_tokens: 3 } } },
      { type: 'result', subtype: 'success', is_error: false, num_turns: 2, result: 'Replied.', total_cost_usd: 0.0123, usage: { input_tokens: 220, cache_read_input_tokens: 30, output_tokens: 40 } },
    ];
    for (const e of events) r.feed(e);
    expect(r.tally).toEqual({ model_calls: 2, tool_calls: 1, tokens_in: 250, tokens_out: 40, cost_usd: 0.0123, replied: true, final: 'Replied.', error: null, done: true });
  });

  it('does not count a refused reply command as the session\'s answer, and reads claude\'s failure', () => {
    const r = claudeReader();
    r.feed({ type: 'assistant', message: { id: 'm1', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'nxc reply --thread t hi' } }] } });
    r.feed({ type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 't1', is_error: true }] } });
    r.feed({ type: 'result', subtype: 'error_max_turns', is_error: true, num_turns: 1 });
    expect(r.tally).toMatchObject({ replied: false, error: 'claude ended with error_max_turns', done: true });
  });

  it('reads codex items, usage per turn and its failures from --json', () => {
    const r = codexReader();
    for (const e of [
      { type: 'thread.started', thread_id: 'th' },
      { type: 'turn.started' },
      { type: 'item.completed', item: { id: 'i1', type: 'command_execution', command: 'bash -lc "nxc reply --thread t ok"', exit_code: 0, status: 'completed' } },
      { type: 'item.completed', item: { id: 'i2', type: 'agent_message', text: 'All done.' } },
      { type: 'turn.completed', usage: { input_tokens: 900, cached_input_tokens: 100, output_tokens: 70 } },
    ]) r.feed(e);
    expect(r.tally).toEqual({ model_calls: 2, tool_calls: 1, tokens_in: 900, tokens_out: 70, cost_usd: null, replied: true, final: 'All done.', error: null, done: true });
    const f = codexReader();
    f.feed({ type: 'turn.failed', error: { message: 'stream disconnected' } });
    expect(f.tally.error).toBe('codex turn failed: stream disconnected');
  });

  // The sequences below are what codex exec 0.171 printed against the fake provider.
  it('counts a request per round of tool results, parallel calls as one round, and ignores codex\'s own notices', () => {
    const r = codexReader();
    const cmd = (id: string, phase: 'item.started' | 'item.completed') => ({ type: phase, item: { id, type: 'command_execution', command: "/bin/bash -c 'ls'", exit_code: phase === 'item.completed' ? 0 : null, status: phase === 'item.completed' ? 'completed' : 'in_progress' } });
    for (const e of [
      { type: 'thread.started', thread_id: 'th' },
      { type: 'item.completed', item: { id: 'item_0', type: 'error', message: 'Model metadata for `fake-model` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.' } },
      { type: 'turn.started' },
      { type: 'item.completed', item: { id: 'item_1', type: 'agent_message', text: 'Looking first.' } },
      cmd('item_2', 'item.started'),
      cmd('item_2', 'item.completed'),
      // The second request asked for two commands at once.
      cmd('item_3', 'item.started'),
      cmd('item_4', 'item.started'),
      cmd('item_3', 'item.completed'),
      cmd('item_4', 'item.completed'),
      { type: 'item.completed', item: { id: 'item_5', type: 'agent_message', text: 'Done.' } },
      { type: 'turn.completed', usage: { input_tokens: 133, cached_input_tokens: 0, cache_write_input_tokens: 0, output_tokens: 50, reasoning_output_tokens: 0 } },
    ]) r.feed(e);
    expect(r.tally).toMatchObject({ model_calls: 3, tool_calls: 3, tokens_in: 133, tokens_out: 50, replied: false, final: 'Done.', error: null, done: true });
    // A turn whose last request, after a tool result, answered nothing still made that request.
    const q = codexReader();
    for (const e of [{ type: 'turn.started' }, cmd('a', 'item.started'), cmd('a', 'item.completed'), { type: 'turn.completed', usage: {} }]) q.feed(e);
    expect(q.tally.model_calls).toBe(2);
  });

  it('counts a reconnect as a request and does not fail a turn codex got over it to complete', () => {
    const r = codexReader();
    for (const e of [
      { type: 'turn.started' },
      { type: 'error', message: 'Reconnecting... 1/1 (stream disconnected before completion: error sending request)' },
      { type: 'item.completed', item: { id: 'item_1', type: 'agent_message', text: 'Recovered.' } },
      { type: 'turn.completed', usage: { input_tokens: 10, output_tokens: 5 } },
    ]) r.feed(e);
    expect(r.tally).toMatchObject({ model_calls: 2, final: 'Recovered.', error: null, done: true });
    const gaveUp = codexReader();
    for (const e of [{ type: 'turn.started' }, { type: 'error', message: 'Reconnecting... 1/1 (stream disconnected)' }, { type: 'error', message: 'stream disconnected' }]) gaveUp.feed(e);
    expect(gaveUp.tally).toMatchObject({ model_calls: 2, error: 'codex error: stream disconnected', done: false });
  });
});

describe('the claude-code adapter running the real claude against the fake provider', () => {
  let fake: FakeProvider;
  let wc: ReturnType<typeof makeWorkingCopy>;
  beforeAll(async () => {
    fake = await startFakeProvider();
  });
  afterAll(async () => {
    await fake.close();
  });
  afterEach(() => wc?.cleanup());

  async function turn(p: Persona, allowed: string | undefined) {
    wc = makeWorkingCopy();
    const home = path.join(wc.root, '.nxs', 'home');
    mkdirSync(home, { recursive: true });
    const posted: Array<{ text: string; escalate: boolean }> = [];
    const answer: Answer = async (text, o) => {
      posted.push({ text, escalate: o.escalate });
      return { posted: true };
    };
    const env: NodeJS.ProcessEnv = {
      PATH: process.env['PATH'],
      HOME: home,
      ANTHROPIC_BASE_URL: fake.anthropicUrl,
      ANTHROPIC_API_KEY: 'test-key',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      NXS_CLAUDE_BIN: CLAUDE,
      ...(allowed !== undefined ? { NXC_ALLOWED_TOOLS: allowed } : {}),
    };
    const sessionDir = path.join(wc.root, '.nxs', 'sessions', 's-1');
    mkdirSync(sessionDir, { recursive: true });
    const outcome = await runAdapterTurn({
      kind: 'claude-code',
      turn: { session: 's-1', turn: 1, thread: 't-1', role: 'r', workspace_dir: wc.root, written_at: new Date().toISOString(), sessionDir },
      persona: p,
      prompt: 'Push the branch, then say what you did.',
      env,
      answer,
    });
    return { outcome, posted, state: JSON.parse(readFileSync(outcome.files.state, 'utf8')) };
  }

  it('refuses a command outside the allowed tools in print mode, and posts the final answer for it', async () => {
    fake.setScript([{ reply: { tool_calls: [{ name: 'Bash', input: { command: 'touch pushed.txt', description: 'push' } }] } }, { reply: { text: 'I could not push: not allowed.' } }]);
    const { outcome, posted, state } = await turn(persona({ model: 'fake-model', tools: [] }), 'Bash(nxc reply:*)');
    expect(outcome.result).toMatchObject({ status: 'completed', output: 'I could not push: not allowed.' });
    expect(posted).toEqual([{ text: 'I could not push: not allowed.', escalate: false }]);
    expect(state).toMatchObject({ status: 'completed', runtime: 'claude-code', usage: { model_calls: 2, tool_calls: 1 } });
    expect(state.usage.tokens_in).toBeGreaterThan(0);
    // The refusal was told to the model, and the file was never made.
    expect(JSON.stringify(fake.requests[1]!.body.messages)).toMatch(/tool_result/);
    expect(readFileSync(outcome.files.journal, 'utf8')).toMatch(/"type":"result"/);
  }, 120_000);

  it('stops claude at the deadline and escalates the turn as timed_out', async () => {
    fake.setScript([{ stall: true }]);
    const { outcome, posted } = await turn(persona({ model: 'fake-model', timeout_ms: 6_000 }), undefined);
    expect(outcome.result.status).toBe('timed_out');
    expect(posted).toHaveLength(1);
    expect(posted[0]).toMatchObject({ escalate: true, text: expect.stringMatching(/ended timed_out: the 6 s deadline passed/) });
  }, 120_000);
});
