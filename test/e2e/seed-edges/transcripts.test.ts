// `nxc transcript show` of a turn tells what happened in it: each model message, each tool call with its result
// and the run's status changes, for turns on the built-in runtime, on claude-code and on codex. Real sidecars, real
// runtimes and CLIs, the fake provider in place of the paid model.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from '../../helpers/fake-provider/index.js';
import { REPO, makeWorkspace, type TestWorkspace } from '../../helpers/workspace.js';
import { codexConfig } from '../../helpers/codex-config.js';

let fake: FakeProvider;
let ws: TestWorkspace;
let codexEnv: Record<string, string>;

function declare(role: string, lines: string[]): void {
  mkdirSync(join(ws.root, '.nxs-personas'), { recursive: true });
  writeFileSync(join(ws.root, '.nxs-personas', `${role}.yaml`), ['model: fake-model', `system_prompt: You are ${role}.`, ...lines].join('\n') + '\n');
}

/** Commissions `role`, waits for its turn to end, and returns the session that ran it. */
async function commission(role: string, text: string, env: Record<string, string>): Promise<string> {
  const r = await ws.nxc(['send', role, '--subject', role, '--json', text], { env });
  expect(r.code, r.stdout + r.stderr).toBe(0);
  await ws.waitIdle();
  const spec = (s: string) => join(ws.root, '.nxs', 'sessions', s, 'turn-1.spec.json');
  return ws.sessionDirs().find((s) => existsSync(spec(s)) && JSON.parse(readFileSync(spec(s), 'utf8')).thread === r.json.thread)!;
}

async function transcript(session: string): Promise<string> {
  const r = await ws.nxc(['transcript', 'show', session]);
  expect(r.code, r.stdout + r.stderr).toBe(0);
  return r.stdout;
}


beforeAll(async () => {
  fake = await startFakeProvider();
  // On disk: codex's read-only sandbox shows the root file system but not /dev/shm.
  ws = await makeWorkspace({ real: true, onDisk: true });
  ws.cliInProcess = true;
  const home = join(ws.root, '..', 'codex-home');
  mkdirSync(join(home, '.codex'), { recursive: true });
  writeFileSync(join(home, '.codex', 'config.toml'), codexConfig(fake.openaiUrl));
  const proxy = { HTTPS_PROXY: fake.proxyUrl, HTTP_PROXY: fake.proxyUrl, ALL_PROXY: fake.proxyUrl, NO_PROXY: '127.0.0.1,localhost' };
  codexEnv = {
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

describe('a transcript tells what the turn did', () => {
  it('shows a built-in turn\'s model messages, its Read and Bash calls with their results, and its status changes', async () => {
    declare('reader', ['tools: [Read, Bash]', 'permissions: bypassPermissions', 'runtime:', '  builtin:', '    provider: anthropic', `    base_url: ${fake.anthropicUrl}`]);
    fake.setScript([
      { reply: { text: 'Let me look at the README first.', tool_calls: [{ name: 'Read', input: { path: 'README.md' } }] } },
      { reply: { tool_calls: [{ name: 'Bash', input: { command: 'echo first-bash-output' } }, { name: 'Bash', input: { command: 'echo second-bash-output' } }] } },
      { reply: { text: 'The README is a heading: test repo.' } },
    ]);
    const session = await commission('reader', 'What does the README say?', { ANTHROPIC_API_KEY: 'test-key' });
    const text = await transcript(session);
    expect(text).toContain('Let me look at the README first.');
    expect(text).toContain('The README is a heading: test repo.');
    expect(text).toMatch(/Read.*README\.md/);
    expect(text).toContain('# test repo');
    expect(text).toMatch(/Bash.*echo first-bash-output/);
    expect(text).toMatch(/Bash.*echo second-bash-output/);
    expect(text).toMatch(/^(?!.*echo).*first-bash-output/m);
    expect(text).toMatch(/^(?!.*echo).*second-bash-output/m);
    expect(text).toMatch(/running/);
    expect(text).toMatch(/completed/);
  });

  it('shows a claude-code turn\'s tool call, its result, the model\'s last message and how the run ended', async () => {
    declare('claudette', ['runtime: claude-code']);
    fake.setScript((req, n) => {
      if (n === 0) return { reply: { tool_calls: [{ name: 'Bash', input: { command: 'echo claude-was-here', description: 'say it' } }] } };
      return { reply: { text: 'Claude looked and is done.' } };
    });
    const home = join(ws.root, '..', 'claude-home');
    mkdirSync(home, { recursive: true });
    const session = await commission('claudette', 'Run one command.', {
      HOME: home,
      ANTHROPIC_BASE_URL: fake.anthropicUrl,
      ANTHROPIC_API_KEY: 'test-key',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      NXS_CLAUDE_BIN: join(REPO, 'node_modules', '.bin', 'claude'),
    });
    const text = await transcript(session);
    expect(text).toMatch(/Bash.*echo claude-was-here/);
    expect(text).toMatch(/^(?!.*echo).*claude-was-here/m);
    expect(text).toContain('Claude looked and is done.');
    expect(text).toMatch(/completed/);
  });

  it('shows a codex turn\'s command, its output, the model\'s last message and how the run ended', async () => {
    declare('codexreader', ['runtime: codex', 'tools: []']);
    fake.setScript([
      { reply: { tool_calls: [{ name: 'exec_command', input: { cmd: 'cat README.md' } }], usage: { input: 300, output: 20 } } },
      { reply: { text: 'Codex read the README.', usage: { input: 400, output: 30 } } },
    ]);
    const session = await commission('codexreader', 'What does the README say?', codexEnv);
    const text = await transcript(session);
    expect(text).toMatch(/cat README\.md/);
    expect(text).toContain('# test repo');
    expect(text).toContain('Codex read the README.');
    expect(text).toMatch(/completed/);
  });
});
