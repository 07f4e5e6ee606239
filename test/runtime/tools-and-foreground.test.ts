// The built-in tools' confinement to the working directory, and a person's foreground run with live progress and approvals.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isNexusError } from '../../protocol/errors.js';
import { RunStateFileSchema } from '../../protocol/runs.js';
import { runForeground } from '../../node-agent/capabilities/runtime/index.js';
import { useFakeProvider } from '../helpers/fake-provider/index.js';
import { makeWorkingCopy, runAgainst } from './fixture.js';

let wc: ReturnType<typeof makeWorkingCopy>;
const fake = useFakeProvider(() => wc?.cleanup());

describe('tools act inside the working directory only', () => {
  it.each<[string, string, unknown, RegExp, boolean]>([
    ['reads a file in the working directory', 'Read', { path: 'src/a.txt' }, /^alpha$/, false],
    ['pages a long file by character offset', 'Read', { path: 'src/a.txt', offset: 1, length: 2 }, /^\(characters 1-3 of 5; read on with offset=3\)\nlp$/, false],
    ['refuses a path leading out of it', 'Read', { path: '../outside.txt' }, /outside the working directory/, true],
    ['refuses an absolute path elsewhere', 'Read', { path: '/etc/hostname' }, /outside the working directory/, true],
    ['refuses a symlink that leads out', 'Read', { path: 'escape' }, /outside the working directory/, true],
    ['refuses the workspace keys in .nxs/', 'Read', { path: '.nxs/keys/secret' }, /private \.nxs\/ folder/, true],
    ['lists a folder, folders marked', 'LS', { path: '.' }, /^\.git\/\n\.nxs\/\nREADME\.md\nescape\nsrc\/$/, false],
    ['searches line by line and skips .nxs/', 'Grep', { pattern: 'alp' }, /^src\/a\.txt:1:alpha$/, false],
    ['refuses to write into .git/', 'Write', { path: '.git/hooks/pre-commit', content: 'x' }, /inside \.git/, true],
    ['refuses an edit whose text is not unique', 'Edit', { path: 'src/b.txt', old_string: 'x', new_string: 'y' }, /occurs 2 times/, true],
    ['reports a failing command with its exit code', 'Bash', { command: 'echo oops >&2; exit 3' }, /^exit code 3\noops\n$/, true],
  ])('%s', async (_name, tool, input, expected, isError) => {
    wc = makeWorkingCopy({ 'README.md': 'readme\n', 'src/a.txt': 'alpha', 'src/b.txt': 'x x' });
    mkdirSync(path.join(wc.root, '.nxs', 'keys'), { recursive: true });
    writeFileSync(path.join(wc.root, '.nxs', 'keys', 'secret'), 'alpha secret');
    writeFileSync(path.join(wc.root, '..', 'outside.txt'), 'no');
    symlinkSync('/etc', path.join(wc.root, 'escape'));
    const results: Array<{ content: string; is_error: boolean }> = [];
    fake.setScript([{ reply: { tool_calls: [{ name: tool, input }] } }, { reply: { text: 'ok' } }]);
    const r = await runAgainst(fake, wc.root, { onEvent: (e) => e.type === 'tool_end' && results.push({ content: e.content, is_error: e.is_error }) });
    expect(r.status).toBe('completed');
    expect(results).toHaveLength(1);
    expect(results[0]!.content).toMatch(expected);
    expect(results[0]!.is_error).toBe(isError);
  });
});

// A commit can carry a link to a FIFO (or a FIFO made in the working copy): a tool reading it must
// not wait on it, and the run goes on.
describe('tools read regular files only', () => {
  it.each<[string, string, unknown, RegExp, boolean]>([
    ['Read refuses a FIFO without waiting on it', 'Read', { path: 'pipe' }, /^pipe: is not a regular file$/, true],
    ['Read refuses a link to a FIFO inside the working directory', 'Read', { path: 'to-pipe' }, /^to-pipe: is not a regular file$/, true],
    ['Grep passes over a FIFO it is pointed at', 'Grep', { pattern: 'x', path: 'pipe' }, /^\(no matches\)$/, false],
    ['Edit refuses a FIFO without waiting on it', 'Edit', { path: 'pipe', old_string: 'x', new_string: 'y' }, /not a regular file/, true],
  ])('%s', { timeout: 20_000 }, async (_name, tool, input, expected, isError) => {
    wc = makeWorkingCopy({ 'README.md': 'readme\n' });
    execFileSync('mkfifo', [path.join(wc.root, 'pipe')]);
    symlinkSync('pipe', path.join(wc.root, 'to-pipe'));
    const results: Array<{ content: string; is_error: boolean }> = [];
    fake.setScript([{ reply: { tool_calls: [{ name: tool, input }] } }, { reply: { text: 'ok' } }]);
    const r = await runAgainst(fake, wc.root, { onEvent: (e) => e.type === 'tool_end' && results.push({ content: e.content, is_error: e.is_error }) });
    expect(r.status).toBe('completed');
    expect(results).toHaveLength(1);
    expect(results[0]!.content).toMatch(expected);
    expect(results[0]!.is_error).toBe(isError);
  });
});

describe('a foreground run for a person', () => {
  function declare(root: string, extra = ''): void {
    mkdirSync(path.join(root, '.nxs-personas'), { recursive: true });
    writeFileSync(
      path.join(root, '.nxs-personas', 'helper.yaml'),
      `model: fake-model\nsystem_prompt: You help.\ntools: [Read]\nruntime:\n  builtin: { provider: openai, base_url: "${fake.openaiUrl}" }\n${extra}`,
    );
  }

  it('streams progress to the terminal, asks before an ungranted command, and keeps its files under .nxs/runs', async () => {
    wc = makeWorkingCopy();
    declare(wc.root);
    fake.setScript([{ reply: { text: 'Writing it.', tool_calls: [{ name: 'Write', input: { path: 'notes.txt', content: 'hello' } }] } }, { reply: { text: 'Wrote notes.txt.' } }]);
    const out: string[] = [];
    const err: string[] = [];
    const questions: string[] = [];
    const r = await runForeground({
      workspaceRoot: wc.root,
      role: 'helper',
      task: 'Write a note.',
      env: { OPENAI_API_KEY: 'test-key', PATH: process.env['PATH'] },
      terminal: { out: (s) => out.push(s), err: (s) => err.push(s), ask: async (q) => (questions.push(q), true) },
    });
    expect(r).toMatchObject({ status: 'completed', output: 'Wrote notes.txt.', limits: { max_tool_calls: 20, timeout_ms: 300_000 } });
    expect(out.join('')).toBe('Writing it.Wrote notes.txt.');
    expect(err.join('')).toContain('▸ Write notes.txt');
    expect(questions).toEqual([expect.stringMatching(/Write is not among the tools this persona declares\.\nAllow Write notes\.txt\?/)]);
    expect(readFileSync(path.join(wc.root, 'notes.txt'), 'utf8')).toBe('hello');
    const state = RunStateFileSchema.parse(JSON.parse(readFileSync(path.join(wc.root, '.nxs', 'runs', r.run_id, 'run.json'), 'utf8')));
    expect(state).toMatchObject({ status: 'completed', session: null, provider: 'openai' });
    // The persona's model went to the provider, since builtin named none of its own.
    expect(fake.requests[0]!.body.model).toBe('fake-model');
  });

  it('refuses at the start when the key is missing, before any request', async () => {
    wc = makeWorkingCopy();
    declare(wc.root);
    const err = await runForeground({ workspaceRoot: wc.root, role: 'helper', task: 'x', env: {}, terminal: { out: () => undefined, err: () => undefined } }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isNexusError(err) && err.code).toBe('RUNTIME_UNCONFIGURED');
    expect(String((err as Error).message)).toMatch(/OPENAI_API_KEY is not set/);
    expect(fake.requests).toHaveLength(0);
  });

  it('takes the persona\'s own budget over the foreground defaults', async () => {
    wc = makeWorkingCopy();
    declare(wc.root, 'budget:\n  max_tool_calls: 3\n  max_model_calls: 2\n');
    fake.setScript(() => ({ reply: { tool_calls: [{ name: 'LS', input: {} }] } }));
    const r = await runForeground({ workspaceRoot: wc.root, role: 'helper', task: 'x', env: { OPENAI_API_KEY: 'k' }, terminal: { out: () => undefined, err: () => undefined } });
    expect(r).toMatchObject({ status: 'budget_exhausted', usage: { model_calls: 2 }, limits: { max_tool_calls: 3, max_model_calls: 2 } });
  });
});
