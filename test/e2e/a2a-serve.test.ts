// `nxs a2a serve`: a persona declared addressable: {a2a: true}, answered by the fake model provider, reached with the
// A2A SDK's own client: its card, a message streamed to completed with the persona's answer, a wrong token refused.
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Role, TaskState, type Message, type Part } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { a2aClientHandle } from '../../protocol/a2a.js';
import { listPersonas } from '../../node-agent/adapters/personas/index.js';
import { findWorkspace } from '../../node-agent/adapters/workspace/index.js';
import { serveA2a, type A2aServer } from '../../node-agent/host/a2a/index.js';
import { routed } from '../../node-agent/host/remote.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider/index.js';
import { REPO, makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';

let fake: FakeProvider;
let ws: TestWorkspace;
let server: A2aServer;
let token: string;

function declare(role: string, lines: string[]): void {
  mkdirSync(join(ws.root, '.nxs-personas'), { recursive: true });
  writeFileSync(join(ws.root, '.nxs-personas', `${role}.yaml`), ['model: fake-model', `system_prompt: You are ${role}.`, 'tools: []', ...lines].join('\n') + '\n');
}

/** The SDK's client for the agent at `card`, sending `token` as its bearer token. */
async function clientFor(card: string, bearer: string) {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${bearer}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl })] }));
  // The card's full address, and no path to add to it.
  return factory.createFromUrl(card, '');
}

const message = (text: string): Message => ({
  messageId: `m-${Math.random().toString(36).slice(2)}`,
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});
const textOf = (parts: readonly Part[]) => parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

beforeAll(async () => {
  fake = await startFakeProvider();
  ws = await makeWorkspace({ real: true });
  ws.cliInProcess = true;
  const runtime = ['runtime:', '  builtin:', '    provider: anthropic', `    base_url: ${fake.anthropicUrl}`];
  declare('helper', ['addressable: { a2a: true }', 'description: answers questions', ...runtime]);
  declare('private', runtime);
  const added = await ws.nxs(['a2a', 'token', 'add', 'tester', '--json']);
  expect(added.code, added.stdout + added.stderr).toBe(0);
  token = added.json.token;
  const env: NodeJS.ProcessEnv = { ...process.env, NEXUS_HOME: ws.home ?? inject('nexusHome'), PATH: `${join(REPO, 'bin')}:${process.env['PATH'] ?? ''}`, ANTHROPIC_API_KEY: 'test-key' };
  for (const k of Object.keys(env)) if (k.startsWith('NXC_')) delete env[k];
  const workspace = findWorkspace(ws.root, env);
  const personas = (await listPersonas(ws.root)).personas.filter((p) => p.addressable.a2a === true);
  server = await serveA2a({ workspace, personas, router: (w, fn, e) => routed(w, fn, e, {}), env, host: '127.0.0.1', port: 0, pollMs: 200, version: '0.0.0-test' });
});
afterAll(async () => {
  await server?.close();
  await fake?.close();
  await ws?.cleanup();
});

describe('nxs a2a serve', () => {
  it('publishes only the personas declared addressable: {a2a: true}, each with an Agent Card that asks for a bearer token', async () => {
    expect(server.agents.map((a) => a.role)).toEqual(['helper']);
    const card = (await (await fetch(server.agents[0]!.card)).json()) as any;
    expect(card).toMatchObject({ name: `${ws.short}/helper`, description: 'answers questions', capabilities: { streaming: true } });
    expect(JSON.stringify(card.securitySchemes)).toContain('Bearer');
    expect((await fetch(`${server.url}/a2a/private/.well-known/agent-card.json`)).status).toBe(404);
    // The token is kept only as its hash, in a file only its owner reads.
    const file = join(ws.root, '.nxs', 'a2a-clients.json');
    expect(readFileSync(file, 'utf8')).not.toContain(token);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it("streams a task to completed with the persona's answer: a commission from the client at depth 0 of a new operation, read as untrusted", async () => {
    fake.requests.length = 0;
    fake.setScript(() => ({ reply: { text: 'Forty-two.' } }));
    const client = await clientFor(server.agents[0]!.card, token);
    const states: TaskState[] = [];
    let answer = '';
    let thread = '';
    for await (const event of client.sendMessageStream({ tenant: '', message: message('What is the answer?'), configuration: undefined, metadata: undefined })) {
      const p = event.payload;
      if (p?.$case === 'task') {
        states.push(p.value.status!.state);
        thread = String(p.value.metadata?.['nexus_thread'] ?? thread);
      } else if (p?.$case === 'statusUpdate') states.push(p.value.status!.state);
      else if (p?.$case === 'artifactUpdate') answer += textOf(p.value.artifact!.parts);
    }
    expect(states[0]).toBe(TaskState.TASK_STATE_SUBMITTED);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(answer).toBe('Forty-two.');
    // In Nexus: a thread opened by the client's handle, the persona's session one hop below it.
    const row = (await ws.status()).operations.flatMap((o: any) => o.threads).find((t: any) => t.thread === thread);
    expect(row).toMatchObject({ opener: a2aClientHandle('tester'), to: `${ws.short}/helper`, parent: null, state: 'answered', session: { depth: 1 } });
    // What the client wrote reached the model as untrusted content, attributed to the client.
    const asked = JSON.stringify(fake.requests.at(-1)!.body);
    expect(asked).toMatch(/<untrusted-content boundary=\\"nx-[0-9a-f]+\\" from=\\"a2a-tester\\">\\nWhat is the answer\?/);
  });

  it('lets no person of the workspace act under a client\'s handle', async () => {
    const r = await ws.nxc(['send', 'helper', '--json', 'I am the client.'], { env: { NXC_ACTOR: a2aClientHandle('tester') } });
    expect(r.json?.error).toMatchObject({ code: 'BAD_ENVIRONMENT' });
  });

  it('refuses a wrong token, and a revoked one', async () => {
    const wrong = await clientFor(server.agents[0]!.card, 'nxa_not-a-token');
    await expect(wrong.sendMessage({ tenant: '', message: message('hello'), configuration: undefined, metadata: undefined })).rejects.toThrow(/401|UNAUTHORIZED/);
    const revoked = await ws.nxs(['a2a', 'token', 'revoke', 'tester', '--json']);
    expect(revoked.json).toMatchObject({ client: 'tester', revoked: true });
    const old = await clientFor(server.agents[0]!.card, token);
    await expect(old.sendMessage({ tenant: '', message: message('hello'), configuration: undefined, metadata: undefined })).rejects.toThrow(/401|UNAUTHORIZED/);
  });
});
