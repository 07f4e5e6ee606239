// `nxs agent run`: a person runs a persona on the built-in runtime from the CLI, against the fake provider.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RUN_NOT_COMPLETED_EXIT, RunStateFileSchema } from '../../../protocol/runs.js';
import { startFakeProvider, type FakeProvider } from '../../helpers/fake-provider/index.js';
import { makeWorkspace, runCli, type TestWorkspace } from '../../helpers/workspace.js';

let fake: FakeProvider;
let ws: TestWorkspace;
const env = { OPENAI_API_KEY: 'test-key' };

function declare(role: string, extra = '', runtime = `runtime:\n  builtin: { provider: openai, base_url: "${fake.openaiUrl}" }\n`): void {
  mkdirSync(join(ws.root, '.nxs-personas'), { recursive: true });
  writeFileSync(join(ws.root, '.nxs-personas', `${role}.yaml`), `model: fake-model\nsystem_prompt: You help.\ntools: [Read]\n${runtime}${extra}`);
}

beforeAll(async () => {
  fake = await startFakeProvider();
  ws = await makeWorkspace();
});
afterAll(async () => {
  await fake.close();
  await ws.cleanup();
});
afterEach(() => {
  fake.requests.length = 0;
});

describe('nxs agent run', () => {
  it('streams the model\'s text to stdout and tool calls to stderr, refuses an ungranted call when nobody can approve, and exits 0', async () => {
    declare('helper');
    fake.setScript([
      { reply: { text: 'Looking. ', tool_calls: [{ name: 'Write', input: { path: 'notes.txt', content: 'hello' } }] } },
      { reply: { text: 'I could not write it.' } },
    ]);
    const r = await ws.nxs(['agent', 'run', 'helper', 'Write a note.'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('Looking. I could not write it.');
    expect(r.stderr).toMatch(/▸ Write notes\.txt\n  ✗ refused: .*nobody is here to approve it/);
    expect(r.stderr).toMatch(/run ([0-9A-Z]{26}) ended completed \(2 model call\(s\), 0 tool call\(s\)\)/);
    // stdin was not a terminal: the call was refused to the model, and nothing was written.
    expect(JSON.stringify(fake.requests[1]!.body.messages)).toContain('nobody is here to approve it');
    expect(existsSync(join(ws.root, 'notes.txt'))).toBe(false);
    const id = /run ([0-9A-Z]{26}) ended/.exec(r.stderr)![1]!;
    const state = RunStateFileSchema.parse(JSON.parse(readFileSync(join(ws.root, '.nxs', 'runs', id, 'run.json'), 'utf8')));
    expect(state).toMatchObject({ status: 'completed', role: 'helper', session: null });
  });

  it('--json prints only the result, and the task may come from stdin', async () => {
    declare('helper');
    fake.setScript([{ reply: { text: 'Done.' } }]);
    const r = await ws.nxs(['agent', 'run', 'helper', '-', '--json'], { env, input: 'a task from stdin' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({ status: 'completed', output: 'Done.', escalate: false, usage: { model_calls: 1 } });
    expect(JSON.stringify(fake.requests[0]!.body.messages)).toContain('a task from stdin');
  });

  it(`exits ${RUN_NOT_COMPLETED_EXIT} when the run ends other than completed, saying how`, async () => {
    declare('busy', 'budget:\n  max_model_calls: 2\n');
    fake.setScript(() => ({ reply: { tool_calls: [{ name: 'LS', input: {} }] } }));
    const r = await ws.nxs(['agent', 'run', 'busy', 'list forever'], { env });
    expect(r.code).toBe(RUN_NOT_COMPLETED_EXIT);
    expect(r.stderr).toMatch(/ended budget_exhausted/);
  });

  it('names the address it tried when the provider cannot be reached', async () => {
    // Port 9 (discard) on loopback: nothing listens, so every attempt is refused at once.
    declare('lost', 'budget:\n  max_model_calls: 2\n', 'runtime:\n  builtin: { provider: openai, base_url: "http://127.0.0.1:9/v1" }\n');
    const r = await ws.nxs(['agent', 'run', 'lost', 'anyone there?'], { env });
    expect(r.code).toBe(RUN_NOT_COMPLETED_EXIT);
    expect(r.stderr).toContain('http://127.0.0.1:9/v1');
  });

  it.each<[string, string[], Record<string, string>, string]>([
    ['a persona on another runtime', ['agent', 'run', 'other', 'x'], env, 'RUNTIME_UNCONFIGURED'],
    ['a missing key', ['agent', 'run', 'helper', 'x'], {}, 'RUNTIME_UNCONFIGURED'],
    ['no such persona', ['agent', 'run', 'nobody', 'x'], env, 'UNKNOWN_RECIPIENT'],
    ['an empty task', ['agent', 'run', 'helper', '   '], env, 'EMPTY_MESSAGE'],
    ['--resume with something not a run id', ['agent', 'run', 'helper', '--resume', '../../etc'], env, 'USAGE'],
    ['--resume of a run that is not there', ['agent', 'run', 'helper', '--resume', '01ARZ3NDEKTSV4RRFFQ69G5FAV'], env, 'USAGE'],
    ['no role', ['agent', 'run'], env, 'USAGE'],
  ])('refuses %s with a code and exit 2, before any request', async (_name, args, e, code) => {
    declare('helper');
    declare('other', '', 'runtime: claude-code\n');
    const r = await ws.nxs([...args, '--json'], { env: { OPENAI_API_KEY: undefined, ...e } });
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.json?.error?.code ?? r.stderr).toBe(code);
    expect(fake.requests).toHaveLength(0);
  });

  it('is listed by the built nxs and answers --help', async () => {
    const help = await runCli('nxs', ['agent', 'run', '--help'], ws.root);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('nxs agent run <role> [TASK | -]');
    expect(help.stdout).toContain('--resume RUN_ID');
    const all = await runCli('nxs', ['--help'], ws.root);
    expect(all.stdout).toContain('agent run');
  });
});
