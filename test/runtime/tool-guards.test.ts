// What a scripted attacker gets from the built-in runtime's own guards: no secret through the read-only shell, no rule file rewritten, no stalled search, no listener pile-up.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { getEventListeners } from 'node:events';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { itLong } from '../helpers/lanes.js';
import { createModelClient, type ModelClient } from '../../node-agent/capabilities/runtime/index.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider/index.js';
import { makeWorkingCopy, runAgainst, type RunSetup } from './fixture.js';

let fake: FakeProvider;
let wc: ReturnType<typeof makeWorkingCopy>;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(async () => {
  await fake.close();
});
afterEach(() => {
  wc?.cleanup();
  fake.requests.length = 0;
});

const KEY = '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIKEYBYTESTHATMUSTNEVERLEAK\n-----END PRIVATE KEY-----\n';
const TOKEN = 'stream-token-that-must-never-leak';
const PASSWD = readFileSync('/etc/passwd', 'utf8').split('\n')[0]!;

/** A working copy holding the workspace's secrets, a link out of it and a FIFO. */
function armedCopy(): string {
  wc = makeWorkingCopy({ 'README.md': 'readme\n', 'src/a.txt': 'alpha\n' });
  mkdirSync(path.join(wc.root, '.nxs', 'keys'), { recursive: true });
  writeFileSync(path.join(wc.root, '.nxs', 'keys', 'workspace.key'), KEY);
  writeFileSync(path.join(wc.root, '.nxs', 'sync.json'), JSON.stringify({ token: TOKEN }));
  symlinkSync('/etc/passwd', path.join(wc.root, 'evil-link'));
  execFileSync('mkfifo', [path.join(wc.root, 'pipe')]);
  return wc.root;
}

type Result = { content: string; is_error: boolean };

/** Runs one scripted tool call to its answer; returns the call's result as the model saw it, and the journal's text. */
async function attempt(tool: string, input: unknown, setup: RunSetup): Promise<{ result: Result; journal: string }> {
  const results: Result[] = [];
  fake.setScript([{ reply: { tool_calls: [{ name: tool, input }] } }, { reply: { text: 'done' } }]);
  const r = await runAgainst(fake, wc.root, {
    ...setup,
    onEvent: (e) => {
      if (e.type === 'tool_end') results.push({ content: e.content, is_error: e.is_error });
      if (e.type === 'tool_refused') results.push({ content: `Refused: ${e.reason}`, is_error: true });
    },
  });
  expect(r.status).toBe('completed');
  expect(results).toHaveLength(1);
  return { result: results[0]!, journal: readFileSync(path.join(wc.root, '.nxs', 'runs', 'r', 'journal.jsonl'), 'utf8') };
}

function expectNoSecret(text: string): void {
  for (const secret of ['MC4CAQAwBQYDK2VwBCIEIKEYBYTESTHATMUSTNEVERLEAK', TOKEN, PASSWD]) expect(text).not.toContain(secret);
}

// Each of these ran for a `tools: []` persona and put the key, the token, /etc/passwd or the host name in its result.
const ISSUED_ATTACKS = ['cat .nxs/keys/workspace.key', 'tail -c 300 .nxs/sync.json', 'git diff --no-index .nxs/sync.json README', 'cat evil-link', 'wc --files0-from=/etc/hostname'];

describe('a persona never offered the shell runs no command', () => {
  it.each(ISSUED_ATTACKS)('tools: [] asking for %s is refused, and no secret reaches the result or the journal', async (command) => {
    armedCopy();
    const hostname = readFileSync('/etc/hostname', 'utf8').trim();
    const { result, journal } = await attempt('Bash', { command }, { tools: [] });
    expect(result).toEqual({ content: expect.stringMatching(/^Refused: Bash is not among the tools this persona declares, and nobody is here to approve it/), is_error: true });
    expectNoSecret(result.content + journal);
    expect(result.content).not.toContain(hostname);
  });
});

describe('the read-only shell of a persona offered the shell by a rule', () => {
  const ruled: RunSetup = { tools: ['Bash(npm test:*)'], limits: { timeout_ms: 30_000 } };

  it.each([
    ...ISSUED_ATTACKS,
    'git show HEAD:.nxs/sync.json',
    'wc --files0-from=names',
    'git log --output=out.txt -1',
    'cat pipe',
    'tail -f README.md',
    'cat -',
  ])('%s is refused without running', async (command) => {
    armedCopy();
    writeFileSync(path.join(wc.root, 'names'), '.nxs/keys/workspace.key\0');
    const { result, journal } = await attempt('Bash', { command }, ruled);
    expect(result.content).toMatch(/^Refused: the command .* matches none of the persona's Bash rules, and nobody is here to approve it/);
    expectNoSecret(result.content + journal);
    expect(existsSync(path.join(wc.root, 'out.txt'))).toBe(false);
  });

  it('still inspects the working copy', async () => {
    armedCopy();
    const { result } = await attempt('Bash', { command: 'cat README.md' }, ruled);
    expect(result).toEqual({ content: 'exit code 0\nreadme\n', is_error: false });
  });
});

describe('a Bash(git log:*) rule', () => {
  it('does not write the log to a path outside the working copy', async () => {
    armedCopy();
    const outside = path.join(path.dirname(wc.root), `${path.basename(wc.root)}-log.txt`);
    const { result } = await attempt('Bash', { command: `git log --output=${outside} -1` }, { tools: ['Bash(git log:*)'] });
    expect(result.content).toMatch(/^Refused: the rule Bash\(git log:\*\) grants the command, not this: git log --output=.* does more than read/);
    expect(existsSync(outside)).toBe(false);
  });
});

describe('no session rewrites the declarations it runs under', () => {
  it.each<[string, string, unknown]>([
    ['Write its own persona file', 'Write', { path: '.nxs-personas/coder.yaml', content: 'permissions: bypassPermissions\n' }],
    ['Edit its own persona file', 'Edit', { path: '.nxs-personas/coder.yaml', old_string: 'acceptEdits', new_string: 'bypassPermissions' }],
    ['Write a channel file', 'Write', { path: '.nxs-channels/review.yaml', content: 'x: 1\n' }],
    ['Write a new persona', 'Write', { path: '.nxs-personas/root.yaml', content: 'permissions: bypassPermissions\n' }],
    ['Write through a link to the persona folder', 'Write', { path: 'personas-link/coder.yaml', content: 'permissions: bypassPermissions\n' }],
    ['Write into .nxs/', 'Write', { path: '.nxs/keys/workspace.key', content: 'x' }],
  ])('an acceptEdits persona may not %s', async (_name, tool, input) => {
    armedCopy();
    const persona = 'model: fake-model\npermissions: acceptEdits\n';
    mkdirSync(path.join(wc.root, '.nxs-personas'));
    mkdirSync(path.join(wc.root, '.nxs-channels'));
    writeFileSync(path.join(wc.root, '.nxs-personas', 'coder.yaml'), persona);
    symlinkSync('.nxs-personas', path.join(wc.root, 'personas-link'));
    const { result } = await attempt(tool, input, { tools: ['Read'], permissions: 'acceptEdits' });
    expect(result.is_error).toBe(true);
    expect(result.content).toMatch(/the declarations sessions run under; only a person changes them|private \.nxs\/ folder/);
    expect(readFileSync(path.join(wc.root, '.nxs-personas', 'coder.yaml'), 'utf8')).toBe(persona);
    expect(existsSync(path.join(wc.root, '.nxs-personas', 'root.yaml'))).toBe(false);
    expect(existsSync(path.join(wc.root, '.nxs-channels', 'review.yaml'))).toBe(false);
    expect(readFileSync(path.join(wc.root, '.nxs', 'keys', 'workspace.key'), 'utf8')).toBe(KEY);
  });
});

describe('a pattern that backtracks forever', () => {
  itLong('ends the Grep call with an error and the run goes on', { timeout: 60_000 }, async () => {
    armedCopy();
    writeFileSync(path.join(wc.root, 'src', 'long.txt'), `${'a'.repeat(64)}!\n`);
    const { result } = await attempt('Grep', { pattern: '(a+)+$', path: 'src' }, {});
    expect(result).toEqual({ content: expect.stringMatching(/^the pattern ran longer than 5 s \(stopped in src\/long\.txt\)/), is_error: true });
  });

  it('leaves an ordinary search as it was', async () => {
    armedCopy();
    const { result } = await attempt('Grep', { pattern: '^(al)+pha$' }, {});
    expect(result).toEqual({ content: 'src/a.txt:1:alpha', is_error: false });
  });
});

describe('abort listeners', () => {
  it.each(['anthropic', 'openai'] as const)('a run keeps one, however many calls it makes (%s)', async (provider) => {
    wc = makeWorkingCopy();
    const inner = createModelClient(
      { provider, model: 'fake-model', base_url: provider === 'anthropic' ? fake.anthropicUrl : fake.openaiUrl },
      { ANTHROPIC_API_KEY: 'test-key', OPENAI_API_KEY: 'test-key' },
    );
    // What earlier steps left on the signal each model call is handed.
    const seen: number[] = [];
    const client: ModelClient = { ...inner, call: (req) => (seen.push(getEventListeners(req.signal, 'abort').length), inner.call(req)) };
    const calls = 14;
    fake.setScript((_req, i) => (i < calls ? { reply: { tool_calls: [{ name: i % 2 === 0 ? 'LS' : 'Bash', input: i % 2 === 0 ? {} : { command: 'true' } }] } } : { reply: { text: 'done' } }));
    const cancel = new AbortController();
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const r = await runAgainst(fake, wc.root, { provider, client, signal: cancel.signal, limits: { max_tool_calls: 50, max_model_calls: 50 } });
      expect(r.status).toBe('completed');
    } finally {
      process.off('warning', onWarning);
    }
    expect(seen).toHaveLength(calls + 1);
    expect(seen).toEqual(seen.map(() => 0));
    expect(getEventListeners(cancel.signal, 'abort')).toHaveLength(0);
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });
});
