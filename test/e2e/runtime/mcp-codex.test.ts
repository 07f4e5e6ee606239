// The real codex, as a session on runtime: codex against the fake provider, commissions through the Nexus MCP tools.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider, type RecordedRequest } from '../../helpers/fake-provider/index.js';
import { REPO, makeWorkspace, type TestWorkspace } from '../../helpers/workspace.js';
import { codexConfig } from '../../helpers/codex-config.js';

let fake: FakeProvider;
let ws: TestWorkspace;
let env: Record<string, string>;

function declare(role: string, lines: string[]): void {
  mkdirSync(join(ws.root, '.nxs-personas'), { recursive: true });
  writeFileSync(join(ws.root, '.nxs-personas', `${role}.yaml`), ['model: fake-model', `system_prompt: You are ${role}.`, ...lines].join('\n') + '\n');
}


const text = (req: RecordedRequest) => JSON.stringify(req.body);
/** The function names a Responses request offered, namespaces included. */
function offered(req: RecordedRequest): string[] {
  const out: string[] = [];
  const walk = (t: any, prefix: string) => {
    if (t?.type === 'namespace' || Array.isArray(t?.tools)) for (const x of t.tools ?? []) walk(x, `${prefix}${t.name ?? ''}`);
    else if (typeof t?.name === 'string') out.push(`${prefix}${t.name}`);
  };
  for (const t of req.body.tools ?? []) walk(t, '');
  return out;
}

beforeAll(async () => {
  fake = await startFakeProvider();
  ws = await makeWorkspace({ real: true, onDisk: true });
  ws.cliInProcess = true;
  const home = join(ws.root, '..', 'codex-home');
  mkdirSync(join(home, '.codex'), { recursive: true });
  writeFileSync(join(home, '.codex', 'config.toml'), codexConfig(fake.openaiUrl));
  const proxy = { HTTPS_PROXY: fake.proxyUrl, HTTP_PROXY: fake.proxyUrl, ALL_PROXY: fake.proxyUrl, NO_PROXY: '127.0.0.1,localhost' };
  env = { HOME: home, CODEX_HOME: join(home, '.codex'), OPENAI_API_KEY: 'test-key', NXS_CODEX_BIN: join(REPO, 'node_modules', '.bin', 'codex'), ...proxy, ...Object.fromEntries(Object.entries(proxy).map(([k, v]) => [k.toLowerCase(), v])) };
  declare('lead', ['tools: [nxc]', 'runtime: codex']);
  declare('worker', ['tools: []', 'runtime:', '  builtin:', '    provider: anthropic', `    base_url: ${fake.anthropicUrl}`]);
});
afterAll(async () => {
  await fake.close();
  await ws.cleanup();
});

describe('a codex session with the Nexus MCP tools', () => {
  // Inside the session's sandbox the MCP server reaches nothing but the session's socket, which runs the tool's
  // command as the session: the commission is the session's whatever the server's environment says.
  it('commissions through the send tool: the commission is attributed to the session, one hop below it', async () => {
    fake.setScript((req) => {
      if (req.api === 'anthropic') return { reply: { text: 'one, two, three' } };
      if (text(req).includes('one, two, three')) return { reply: { text: 'The worker counted.' } };
      if (text(req).includes('function_call_output')) return { reply: { text: 'Commissioned the worker; waiting.' } };
      return { reply: { tool_calls: [{ name: 'send', namespace: 'mcp__nexus', input: { to: 'worker', subject: 'count', text: 'Count to three.' } }] } };
    });
    const sent = await ws.nxc(['send', 'lead', '--subject', 'lead', '--json', 'Get the worker to count.'], { env: { ...env, ANTHROPIC_API_KEY: 'test-key' } });
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    await ws.waitIdle(360_000);
    const rows = (await ws.status()).operations.flatMap((o: any) => o.threads);
    const lead = rows.find((r: any) => r.thread === sent.json.thread);
    const worker = rows.find((r: any) => r.parent === sent.json.thread);
    expect(lead).toMatchObject({ opener: 'alice', to: `${ws.short}/lead`, session: { depth: 1 } });
    expect(worker, JSON.stringify(rows)).toMatchObject({ opener: `${ws.short}/lead`, to: `${ws.short}/worker`, subject: 'count', state: 'answered', session: { depth: 2 } });
    const view = await ws.nxc(['threads', 'show', worker.thread, '--json']);
    expect(view.json.messages[0]).toMatchObject({ author: `${ws.short}/lead`, session: lead.session.id, text: 'Count to three.' });
    // Codex offered the tools in a namespace of their own from the first request, and ran the call without asking.
    const first = fake.requests.find((r) => r.api === 'responses')!;
    expect(offered(first).filter((n) => n.startsWith('mcp__nexus')).sort()).toEqual(['guide_personas', 'reply', 'send', 'status', 'threads_show', 'wait'].map((t) => `mcp__nexus${t}`));
    expect(fake.proxied).toEqual([]);
  }, 480_000);
});
