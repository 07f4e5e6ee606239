// Records that must tell the truth: a stand-in answer the sidecar wrote carries the working copy like any message;
// a thread's last run shows its state and usage on status and threads show; one field says who wrote a message's
// text (the agent, its runtime, the sidecar); a withdrawn thread and a parked operation are said as they are.
// Real sidecars and runtimes; the builtin runtime speaks to the fake provider.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitCodeOf } from '../../../protocol/receipts.js';
import { startFakeProvider, type FakeProvider } from '../../helpers/fake-provider/index.js';
import { gitEnv } from '../../helpers/git-env.js';
import { makeWorkspace, type TestWorkspace } from '../../helpers/workspace.js';
import { rowOf, waitFor } from '../../channels/scenario.js';

let fake: FakeProvider;
let ws: TestWorkspace;

function builtin(role: string, extra: string[]): void {
  mkdirSync(join(ws.root, '.nxs-personas'), { recursive: true });
  const lines = ['model: fake-model', `system_prompt: You are ${role}.`, 'tools: [LS]', 'runtime:', '  builtin:', '    provider: anthropic', `    base_url: ${fake.anthropicUrl}`, ...extra];
  writeFileSync(join(ws.root, '.nxs-personas', `${role}.yaml`), lines.join('\n') + '\n');
}

async function send(to: string, env: Record<string, string> = {}): Promise<any> {
  const r = await ws.nxc(['send', to, '--subject', to, '--json', 'please'], { env });
  expect(r.code, r.stdout + r.stderr).toBe(r.json?.warnings ? exitCodeOf(r.json.warnings) : 0);
  return r.json;
}

async function lastMessage(thread: string): Promise<any> {
  const view = await ws.nxc(['threads', 'show', thread, '--json']);
  expect(view.code, view.stdout + view.stderr).toBe(0);
  return view.json.messages.at(-1);
}

/** Somewhere in `value`, an object saying a run ended `status` after `calls` model calls. */
function findRun(value: unknown, status: string, calls: number): unknown {
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as Record<string, any>;
  if (v['status'] === status && v['usage']?.model_calls === calls) return v;
  for (const child of Object.values(v)) {
    const found = findRun(child, status, calls);
    if (found !== undefined) return found;
  }
  return undefined;
}

beforeAll(async () => {
  fake = await startFakeProvider();
  ws = await makeWorkspace({ real: true });
  ws.cliInProcess = true;
  writeFileSync(join(ws.root, 'tracked.txt'), 'first version\n');
  execFileSync('git', ['add', '-A'], { cwd: ws.root, env: gitEnv() });
  execFileSync('git', ['commit', '-q', '-m', 'files'], { cwd: ws.root, env: gitEnv() });
});
afterAll(async () => {
  await fake.close();
  await ws.cleanup();
});

describe('a stand-in answer the sidecar wrote', () => {
  it('records the working copy as every other message does, and its status row shows the tree', async () => {
    ws.persona('quiet', { mode: 'exit0' });
    const sent = await send('quiet');
    await ws.waitIdle();
    const m = await lastMessage(sent.thread);
    expect(m.text).toMatch(/^sidecar:/);
    expect(m.refs.working_copy).toMatchObject({ branch: 'main', dirty: false, commit: expect.stringMatching(/^[0-9a-f]{40}$/) });
    const text = await ws.nxc(['threads', 'show', sent.thread]);
    expect(text.stdout).not.toContain('not a git repository');
    const row = rowOf(await ws.status(true), sent.thread);
    expect(row.working_copy).toMatchObject({ branch: 'main' });
  });
});

describe('who wrote a message\'s text', () => {
  it('is one field: the agent for its own reply, the runtime for a builtin hand-back, the sidecar for a stand-in', async () => {
    ws.persona('speaker', { mode: 'reply' });
    ws.persona('mute', { mode: 'exit0' });
    builtin('broke', ['budget:', '  max_model_calls: 1']);
    fake.setScript(() => ({ reply: { tool_calls: [{ name: 'LS', input: {} }] } }));
    const own = await send('speaker');
    const standIn = await send('mute');
    const handBack = await send('broke', { ANTHROPIC_API_KEY: 'test-key' });
    await ws.waitIdle();
    const [a, s, r] = [await lastMessage(own.thread), await lastMessage(standIn.thread), await lastMessage(handBack.thread)];
    expect(s.text).toMatch(/^sidecar:/);
    expect(r.effect).toBe('escalate');
    expect([a.written_by, r.written_by, s.written_by]).toEqual(['agent', 'runtime', 'sidecar']);
  });
});

describe('a thread\'s last run', () => {
  it('shows its run state and usage on nxc status and nxc threads show, in text and --json', async () => {
    builtin('spender', ['budget:', '  max_model_calls: 3']);
    fake.setScript(() => ({ reply: { tool_calls: [{ name: 'LS', input: {} }] } }));
    const sent = await send('spender', { ANTHROPIC_API_KEY: 'test-key' });
    await ws.waitIdle();
    const status = await ws.status(true);
    const row = rowOf(status, sent.thread);
    expect(row.escalated).toBe(true);
    expect(findRun(row, 'budget_exhausted', 3)).toBeDefined();
    const view = await ws.nxc(['threads', 'show', sent.thread, '--json']);
    const { messages: _messages, ...thread } = view.json;
    expect(findRun(thread, 'budget_exhausted', 3)).toBeDefined();
    const text = await ws.nxc(['status', '--all']);
    const line = text.stdout.split('\n').find((l) => new RegExp(`^\\s+${sent.thread}\\s`).test(l))!;
    expect(line).toContain('budget_exhausted');
    expect(line).toMatch(/3 model calls/);
    const shown = await ws.nxc(['threads', 'show', sent.thread]);
    const head = shown.stdout.split('\n\n')[0]!;
    expect(head).toContain('budget_exhausted');
  });
});

describe('a withdrawn operation', () => {
  let a: any;
  beforeAll(async () => {
    ws.persona('worker', { mode: 'hang-once', extra: 'working_tree: exclusive' });
    ws.persona('rival', { mode: 'reply', extra: 'working_tree: exclusive' });
    a = await send('worker');
    await waitFor('the worker to run', () => ws.agentLog().some((e) => e.cmd === 'start' && e.role === `${ws.short}/worker`));
    writeFileSync(join(ws.root, 'tracked.txt'), 'the worker was here\n');
    const b = await send('rival');
    expect(b.queued).toBeDefined();
    const w = await ws.nxc(['withdraw', '--thread', a.thread, '--json']);
    expect(w.code, w.stdout + w.stderr).toBe(w.json?.warnings ? exitCodeOf(w.json.warnings) : 0);
    await waitFor('the rival to run', () => ws.agentLog().some((e) => e.cmd === 'start' && e.role === `${ws.short}/rival`), 90_000);
    await ws.waitIdle();
  });

  /** The operation's first row in `nxc status --all`. */
  async function row(): Promise<string> {
    const text = (await ws.nxc(['status', '--all'])).stdout;
    return text.split('\n').find((l) => new RegExp(`^\\s+${a.thread}\\s`).test(l))!;
  }

  it('reads as withdrawn, not as answered by its sender with an answer the runtime wrote', async () => {
    const line = await row();
    expect(line).not.toContain('answer written by the runtime');
    expect(line).not.toContain('answered by alice');
    expect(line).toContain('withdrawn');
  });

  it('once parked, its row says the work is on its park branch rather than not saved', async () => {
    const park = `nexus/park/${a.operation}`;
    expect(execFileSync('git', ['show', `${park}:tracked.txt`], { cwd: ws.root, env: gitEnv(), encoding: 'utf8' })).toBe('the worker was here\n');
    const line = await row();
    expect(line).not.toContain('NOT saved');
    expect(line).toContain(park);
  });
});
