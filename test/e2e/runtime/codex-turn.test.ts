// A commissioned persona on runtime: codex, end to end: nxc send, the sidecar, nxs-runtime, the real `codex exec`, the fake provider's Responses API.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RunStateFileSchema } from '../../../protocol/runs.js';
import { startFakeProvider, type FakeProvider, type RecordedRequest } from '../../helpers/fake-provider/index.js';
import { REPO, makeWorkspace, type TestWorkspace } from '../../helpers/workspace.js';
import { codexConfig } from '../../helpers/codex-config.js';

let fake: FakeProvider;
let ws: TestWorkspace;
let env: Record<string, string>;

function declare(role: string, extra: string[], on = ws): void {
  mkdirSync(join(on.root, '.nxs-personas'), { recursive: true });
  const lines = ['model: fake-model', `system_prompt: You are ${role}.`, 'runtime: codex', ...extra];
  writeFileSync(join(on.root, '.nxs-personas', `${role}.yaml`), lines.join('\n') + '\n');
}

async function commission(role: string, text: string, on = ws) {
  const ws = on;
  const r = await ws.nxc(['send', role, '--subject', role, '--json', text], { env });
  expect(r.code, r.stdout + r.stderr).toBe(0);
  await ws.waitIdle();
  const view = await ws.nxc(['threads', 'show', r.json.thread, '--json']);
  const spec = (s: string) => join(ws.root, '.nxs', 'sessions', s, 'turn-1.spec.json');
  const session = ws.sessionDirs().find((s) => existsSync(spec(s)) && JSON.parse(readFileSync(spec(s), 'utf8')).thread === r.json.thread)!;
  const stateFile = join(ws.root, '.nxs', 'sessions', session, 'turn-1.run.json');
  return { thread: r.json.thread as string, messages: view.json.messages as any[], state: RunStateFileSchema.parse(JSON.parse(readFileSync(stateFile, 'utf8'))) };
}

/** What the model was sent, as text: codex's Responses input items. */
const sent = (req: RecordedRequest) => JSON.stringify(req.body.input);

beforeAll(async () => {
  fake = await startFakeProvider();
  // On disk: codex's read-only sandbox shows the root file system but not /dev/shm, where the suite's scratch is.
  ws = await makeWorkspace({ real: true, onDisk: true });
  // Codex, its sandbox and its nxc calls are real processes; the test's own commands run in this one.
  ws.cliInProcess = true;
  const home = join(ws.root, '..', 'codex-home'); // the real HOME and ~/.codex are never seen
  mkdirSync(join(home, '.codex'), { recursive: true });
  writeFileSync(join(home, '.codex', 'config.toml'), codexConfig(fake.openaiUrl));
  // Anything that would leave the machine is sent to the fake as a proxy, which refuses it and lists it.
  const proxy = { HTTPS_PROXY: fake.proxyUrl, HTTP_PROXY: fake.proxyUrl, ALL_PROXY: fake.proxyUrl, NO_PROXY: '127.0.0.1,localhost' };
  env = {
    HOME: home,
    CODEX_HOME: join(home, '.codex'),
    OPENAI_API_KEY: 'test-key',
    NXS_CODEX_BIN: join(REPO, 'node_modules', '.bin', 'codex'),
    ...proxy,
    ...Object.fromEntries(Object.entries(proxy).map(([k, v]) => [k.toLowerCase(), v])),
  };
});
afterAll(async () => {
  await fake.close();
  await ws.cleanup();
});
beforeEach(() => {
  fake.requests.length = 0;
  fake.proxied.length = 0;
});

describe('a session turn on runtime: codex', () => {
  it('runs a reply-only persona read-only, and posts codex\'s final message as the answer', async () => {
    declare('codexreader', ['tools: []']);
    fake.setScript([
      { drop: true }, // codex reconnects, and the turn goes on
      { reply: { tool_calls: [{ name: 'exec_command', input: { cmd: 'cat README.md' } }], usage: { input: 300, output: 20 } } },
      { reply: { text: 'The README is a heading: test repo.', usage: { input: 400, output: 30 } } },
    ]);
    const { messages, state } = await commission('codexreader', 'What does the README say?');
    expect(messages.at(-1)).toMatchObject({ text: 'The README is a heading: test repo.', effect: 'answer', substituted: false });
    expect(state).toMatchObject({
      status: 'completed',
      runtime: 'codex',
      role: 'codexreader',
      output: 'The README is a heading: test repo.',
      usage: { model_calls: 3, tool_calls: 1, tokens_in: 700, tokens_out: 50 },
    });
    // The Responses API was what codex spoke; the prompt reached the model, the key went in its header.
    expect(fake.requests.map((q) => q.api)).toEqual(['responses', 'responses', 'responses']);
    expect(sent(fake.requests[1]!)).toContain('What does the README say?');
    expect(fake.requests[1]!.headers['authorization']).toBe('Bearer test-key');
    // The command ran in the read-only sandbox, and its output went back to the model.
    expect(sent(fake.requests[2]!)).toContain('# test repo');
    const journal = readFileSync(state.journal, 'utf8');
    expect(journal).toMatch(/"type":"command_execution"/);
    expect(journal).toMatch(/"type":"error","message":"Reconnecting/);
    expect(journal).toMatch(/"type":"turn.completed"/);
    // Codex kept its state in the temporary home, and nothing tried to leave the machine.
    expect(existsSync(join(env['CODEX_HOME']!, 'installation_id'))).toBe(true);
    expect(fake.proxied).toEqual([]);
  });

  it('lets codex post its own reply through nxc reply, and posts nothing more', async () => {
    declare('codexer', []);
    fake.setScript((req, n) => {
      const thread = /Thread: (t-[0-9A-Z]+)/.exec(sent(req))?.[1];
      if (n === 0) return { reply: { tool_calls: [{ name: 'exec_command', input: { cmd: `nxc reply --thread ${thread} "Answered from codex."` } }] } };
      return { reply: { text: 'I replied on the thread.' } };
    });
    const { messages, state } = await commission('codexer', 'Say hello on the thread.');
    const fromSession = messages.filter((m) => String(m.author).endsWith('/codexer'));
    expect(fromSession).toHaveLength(1);
    expect(fromSession[0]).toMatchObject({ text: 'Answered from codex.', effect: 'answer', substituted: false });
    expect(state).toMatchObject({ status: 'completed', runtime: 'codex', output: 'I replied on the thread.', usage: { model_calls: 2, tool_calls: 1 } });
    expect(fake.proxied).toEqual([]);
  });

  it('with a node serving the workspace, codex\'s nxc reply reaches it through the session\'s socket, and nothing more is posted', async () => {
    // The node starts the sessions, so it carries codex's environment.
    const served = await makeWorkspace({ real: true, onDisk: true });
    served.cliInProcess = true;
    try {
      await served.startNode([], env);
      declare('codexnode', [], served);
      fake.setScript((req, n) => {
        const thread = /Thread: (t-[0-9A-Z]+)/.exec(sent(req))?.[1];
        if (n === 0) return { reply: { tool_calls: [{ name: 'exec_command', input: { cmd: `nxc reply --thread ${thread} "Answered from codex."` } }] } };
        return { reply: { text: 'My answer, posted for me.' } };
      });
      const { messages, state } = await commission('codexnode', 'Say hello on the thread.', served);
      const fromSession = messages.filter((m) => String(m.author).endsWith('/codexnode'));
      // Inside the sandbox the node's socket and the store are not there; the turn's own socket is, and the
      // supervisor runs the verb as the session, through the node.
      expect(fromSession).toEqual([expect.objectContaining({ text: 'Answered from codex.', effect: 'answer', substituted: false })]);
      expect(state).toMatchObject({ status: 'completed', output: 'My answer, posted for me.', usage: { model_calls: 2, tool_calls: 1 } });
    } finally {
      await served.cleanup();
    }
  });
});
