// `nxs agent run`: a person runs a persona on the built-in runtime from the CLI, against the fake provider.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RUN_NOT_COMPLETED_EXIT, RunStateFileSchema } from '../../../protocol/runs.js';
import { startFakeProvider, type FakeProvider } from '../../helpers/fake-provider/index.js';
import { makeWorkspace, runCli, type TestWorkspace } from '../../helpers/workspace.js';
import { unusedPort } from '../../helpers/ports.js';

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

describe('nxs agent run (the built CLI): a provider failure names the base URL it tried, coded, and never the key', () => {
  // A key that would show if any message carried it; the provider below even sends it back.
  const KEY = 'sk-nexus-test-secret-7f3a9c';
  const keys = { OPENAI_API_KEY: KEY, ANTHROPIC_API_KEY: KEY };
  let status = 500;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    // A provider that answers every request with `status`, echoing the key it was sent, as a careless one might.
    server = createServer((req, res) => {
      req.resume();
      const sent = String(req.headers['x-api-key'] ?? req.headers['authorization'] ?? '');
      const body = JSON.stringify({ type: 'error', error: { type: status === 401 ? 'authentication_error' : 'api_error', message: `no entry for ${sent}` } });
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  /** `nxs agent run ROLE` by bin/nxs, as a child process, once in words and once with --json. */
  async function run(role: string): Promise<{ words: Awaited<ReturnType<typeof runCli>>; json: Awaited<ReturnType<typeof runCli>> }> {
    const words = await runCli('nxs', ['agent', 'run', role, 'anyone there?'], ws.root, { env: keys });
    const json = await runCli('nxs', ['agent', 'run', role, 'anyone there?', '--json'], ws.root, { env: keys });
    return { words, json };
  }

  function expectNamed(r: Awaited<ReturnType<typeof run>>, url: string, code: string): void {
    expect(r.words.code, r.words.stderr).toBe(RUN_NOT_COMPLETED_EXIT);
    expect(r.words.stderr).toContain(url);
    expect(r.words.stderr).toContain(code);
    expect(r.json.code, r.json.stderr).toBe(RUN_NOT_COMPLETED_EXIT);
    expect(r.json.json).toMatchObject({ status: 'failed', error: { code, url } });
    expect(r.json.json.reason).toContain(url);
    expect(r.json.json.error.message).toContain(url);
    for (const out of [r.words.stdout, r.words.stderr, r.json.stdout, r.json.stderr]) expect(out).not.toContain(KEY);
  }

  it.each(['openai', 'anthropic'] as const)('%s: a closed loopback port is PROVIDER_UNREACHABLE, naming the URL on stderr and in --json', async (provider) => {
    const url = `http://127.0.0.1:${await unusedPort()}${provider === 'openai' ? '/v1' : ''}`;
    declare(`closed-${provider}`, 'budget:\n  retries: 0\n', `runtime:\n  builtin: { provider: ${provider}, base_url: "${url}" }\n`);
    expectNamed(await run(`closed-${provider}`), url, 'PROVIDER_UNREACHABLE');
  });

  it.each([
    ['openai', 500],
    ['openai', 401],
    ['anthropic', 500],
    ['anthropic', 401],
  ] as const)('%s: a provider that answers HTTP %i is PROVIDER_ERROR, naming the URL and the status, and not the key it echoes', async (provider, code) => {
    status = code;
    const url = provider === 'openai' ? `${base}/v1` : base;
    declare(`http-${provider}`, 'budget:\n  retries: 0\n', `runtime:\n  builtin: { provider: ${provider}, base_url: "${url}" }\n`);
    const r = await run(`http-${provider}`);
    expectNamed(r, url, 'PROVIDER_ERROR');
    expect(r.json.json.reason).toContain(`HTTP ${code}`);
  });
});

