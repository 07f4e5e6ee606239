// A commissioned persona on the built-in runtime, end to end: nxc send, the sidecar, nxs-runtime, the fake provider, nxc reply.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunStateFileSchema } from '../../../protocol/runs.js';
import { startFakeProvider, type FakeProvider } from '../../helpers/fake-provider/index.js';
import { REPO, makeWorkspace, type TestWorkspace } from '../../helpers/workspace.js';
import { until } from '../../helpers/until.js';

let fake: FakeProvider;
let ws: TestWorkspace;

function declare(role: string, extra: string[], runtime = ['runtime:', '  builtin:', '    provider: anthropic', `    base_url: ${fake.anthropicUrl}`]): void {
  mkdirSync(join(ws.root, '.nxs-personas'), { recursive: true });
  const lines = ['model: fake-model', `system_prompt: You are ${role}.`, 'tools: []', ...runtime, ...extra];
  writeFileSync(join(ws.root, '.nxs-personas', `${role}.yaml`), lines.join('\n') + '\n');
}

async function commission(role: string, text: string, env: Record<string, string | undefined>, whileRunning?: (stateFile: string) => Promise<void>) {
  const r = await ws.nxc(['send', role, '--subject', role, '--json', text], { env });
  expect(r.code, r.stdout + r.stderr).toBe(0);
  if (whileRunning) {
    const file = await until('the turn\'s run state', async () => {
      for (const s of ws.sessionDirs()) {
        const spec = join(ws.root, '.nxs', 'sessions', s, 'turn-1.spec.json');
        if (existsSync(spec) && JSON.parse(readFileSync(spec, 'utf8')).thread === r.json.thread) {
          const f = join(ws.root, '.nxs', 'sessions', s, 'turn-1.run.json');
          return existsSync(f) ? f : undefined;
        }
      }
      return undefined;
    });
    await whileRunning(file);
  }
  await ws.waitIdle();
  const view = await ws.nxc(['threads', 'show', r.json.thread, '--json']);
  const session = ws.sessionDirs().find((s) => existsSync(join(ws.root, '.nxs', 'sessions', s, 'turn-1.spec.json')) && JSON.parse(readFileSync(join(ws.root, '.nxs', 'sessions', s, 'turn-1.spec.json'), 'utf8')).thread === r.json.thread)!;
  const stateFile = join(ws.root, '.nxs', 'sessions', session, 'turn-1.run.json');
  return { thread: r.json.thread, messages: view.json.messages as any[], state: RunStateFileSchema.parse(JSON.parse(readFileSync(stateFile, 'utf8'))) };
}

/** A loopback port nothing listens on: one the system just gave out and that was closed again. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  fake = await startFakeProvider();
  ws = await makeWorkspace({ real: true });
  // The sidecars, the runtimes and the agents' own nxc calls are real processes; the test's commands run in this one.
  ws.cliInProcess = true;
});
afterAll(async () => {
  await fake.close();
  await ws.cleanup();
});

describe('a session turn on the built-in runtime', () => {
  it('reads the workspace, and its final message is posted as the session\'s answer', async () => {
    declare('reader', ['budget:', '  max_model_calls: 5']);
    fake.setScript([{ reply: { tool_calls: [{ name: 'Read', input: { path: 'README.md' } }] } }, { reply: { text: 'The README is a heading: test repo.' } }]);
    const { messages, state } = await commission('reader', 'What does the README say?', { ANTHROPIC_API_KEY: 'test-key' });
    expect(messages.at(-1)).toMatchObject({ text: 'The README is a heading: test repo.', effect: 'answer', substituted: false });
    expect(state).toMatchObject({ status: 'completed', runtime: 'builtin', role: 'reader', turn: 1, usage: { model_calls: 2, tool_calls: 1 }, limits: { max_model_calls: 5 } });
    expect(existsSync(state.journal)).toBe(true);
    // The prompt the engine wrote reached the model, and the key went in its header.
    expect(JSON.stringify(fake.requests[0]!.body.messages)).toContain('What does the README say?');
    const h = fake.requests[0]!.headers;
    expect(h['x-api-key'] ?? h['authorization']).toMatch(/^(Bearer )?test-key$/);
  });

  it('refuses to start without a key and escalates the turn with that reason', async () => {
    declare('keyless', []);
    fake.setScript([]);
    fake.requests.length = 0;
    const { messages, state } = await commission('keyless', 'anything', { ANTHROPIC_API_KEY: undefined });
    expect(messages.at(-1)).toMatchObject({ effect: 'escalate', substituted: false });
    expect(messages.at(-1).text).toMatch(/ended failed: ANTHROPIC_API_KEY is not set/);
    expect(state).toMatchObject({ status: 'failed', usage: { model_calls: 0 } });
    expect(fake.requests).toHaveLength(0);
  });

  it('escalates naming the provider base URL it tried, coded, when nothing listens there (journal and run state say the same)', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    declare('stranded', ['budget:', '  retries: 0'], ['runtime:', '  builtin:', '    provider: anthropic', `    base_url: ${url}`]);
    const { messages, state } = await commission('stranded', 'anyone there?', { ANTHROPIC_API_KEY: 'test-key' });
    expect(messages.at(-1)).toMatchObject({ effect: 'escalate', substituted: false });
    expect(messages.at(-1).text).toContain(`PROVIDER_UNREACHABLE: the provider failed 1 time in a row (the connection to ${url} failed`);
    expect(state).toMatchObject({ status: 'failed' });
    expect(state.reason).toContain(url);
    const ended = readFileSync(state.journal, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.t === 'status').at(-1);
    expect(ended).toMatchObject({ status: 'failed', reason: state.reason });
    expect(JSON.stringify(messages)).not.toContain('test-key');
  });

  it('escalates with the status and usage in words when the declared timeout ends the run', async () => {
    // The deadline counts from the turn's launch, so on a starved machine it may pass before the first request or
    // the tool call rather than during the stalled request: each ends timed_out, and the check takes any of the three wordings.
    // 5 s: long enough for a starved machine to start the runtime and let it write its state before the deadline.
    declare('slow', ['timeout: 5s']);
    fake.setScript([{ reply: { tool_calls: [{ name: 'LS', input: {} }] } }, { stall: true }]);
    const { messages, state } = await commission('slow', 'take your time', { ANTHROPIC_API_KEY: 'test-key' });
    expect(messages.at(-1)).toMatchObject({ effect: 'escalate', substituted: false });
    expect(messages.at(-1).text).toMatch(/ended timed_out: the 5 s deadline passed( before (a tool call|the next model request))?\. It used \d+ of 20 model calls, \d+ of 10 tool calls, .* of 5 s/);
    expect(state.status).toBe('timed_out');
  });

  it('ends cancelled at its next boundary when the turn is stopped, and escalates saying so', async () => {
    declare('stoppable', []);
    fake.setScript([{ stall: true }]);
    fake.requests.length = 0;
    const { messages, state } = await commission('stoppable', 'wait for it', { ANTHROPIC_API_KEY: 'test-key' }, async (file) => {
      const running = await until('the run to be waiting on the provider', async () => {
        const s = RunStateFileSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
        return s.status === 'running' && fake.requests.some((q) => JSON.stringify(q.body.messages).includes('wait for it')) ? s : undefined;
      });
      process.kill(running.pid, 'SIGTERM');
    });
    expect(messages.at(-1)).toMatchObject({ effect: 'escalate', substituted: false });
    expect(messages.at(-1).text).toMatch(/ended cancelled: the run was cancelled\. It used 1 of 20 model calls/);
    expect(state.status).toBe('cancelled');
  });
});

describe('a session turn on runtime: claude-code', () => {
  it('lets the real claude post its own reply through nxc reply, and posts nothing more', async () => {
    declare('claudette', [], ['runtime: claude-code']);
    fake.requests.length = 0;
    fake.setScript((req, n) => {
      const thread = /Thread: (t-[0-9A-Z]+)/.exec(JSON.stringify(req.body.messages))?.[1];
      if (n === 0) return { reply: { tool_calls: [{ name: 'Bash', input: { command: `nxc reply --thread ${thread} "Answered from claude."`, description: 'reply' } }] } };
      return { reply: { text: 'I replied on the thread.' } };
    });
    const home = join(ws.root, '..', 'claude-home');
    mkdirSync(home, { recursive: true });
    const env = {
      HOME: home,
      ANTHROPIC_BASE_URL: fake.anthropicUrl,
      ANTHROPIC_API_KEY: 'test-key',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      NXS_CLAUDE_BIN: join(REPO, 'node_modules', '.bin', 'claude'),
    };
    const { messages, state } = await commission('claudette', 'Say hello on the thread.', env);
    const fromSession = messages.filter((m) => String(m.author).endsWith('/claudette'));
    expect(fromSession).toHaveLength(1);
    expect(fromSession[0]).toMatchObject({ text: 'Answered from claude.', effect: 'answer', substituted: false });
    expect(state).toMatchObject({ status: 'completed', runtime: 'claude-code', output: 'I replied on the thread.', usage: { tool_calls: 1 } });
  });
});
