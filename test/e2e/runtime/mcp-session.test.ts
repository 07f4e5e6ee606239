// The real claude, as a session on runtime: claude-code against the fake provider, commissions through the
// Nexus MCP tools: the commission is the session's, at its depth; a reply-only persona is offered none of them.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider, type RecordedRequest } from '../../helpers/fake-provider/index.js';
import { REPO, makeWorkspace, type TestWorkspace } from '../../helpers/workspace.js';

let fake: FakeProvider;
let ws: TestWorkspace;
let env: Record<string, string>;

function declare(role: string, lines: string[]): void {
  mkdirSync(join(ws.root, '.nxs-personas'), { recursive: true });
  writeFileSync(join(ws.root, '.nxs-personas', `${role}.yaml`), ['model: fake-model', `system_prompt: You are ${role}.`, ...lines].join('\n') + '\n');
}

const text = (req: RecordedRequest) => JSON.stringify(req.body);
/** The tools a request offered the model, by name. */
const offered = (req: RecordedRequest): string[] => ((req.body.tools ?? []) as Array<{ name: string }>).map((t) => t.name);
const asks = (role: string) => (req: RecordedRequest) => JSON.stringify(req.body.system ?? '').includes(`You are ${role}.`);

beforeAll(async () => {
  fake = await startFakeProvider();
  ws = await makeWorkspace({ real: true });
  ws.cliInProcess = true;
  const home = join(ws.root, '..', 'claude-home');
  mkdirSync(home, { recursive: true });
  env = {
    HOME: home,
    ANTHROPIC_BASE_URL: fake.anthropicUrl,
    ANTHROPIC_API_KEY: 'test-key',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    NXS_CLAUDE_BIN: join(REPO, 'node_modules', '.bin', 'claude'),
  };
  declare('lead', ['tools: [nxc]', 'runtime: claude-code']);
  declare('quiet', ['tools: []', 'runtime: claude-code']);
  declare('worker', ['tools: []', 'runtime:', '  builtin:', '    provider: anthropic', `    base_url: ${fake.anthropicUrl}`]);
});
afterAll(async () => {
  await fake.close();
  await ws.cleanup();
});

describe('a claude-code session with the Nexus MCP tools', () => {
  // Inside the session's sandbox the MCP server reaches nothing but the session's socket, which runs the tool's
  // command as the session: the commission is the session's whatever the server's environment says.
  it('commissions through the send tool: the commission is attributed to the session, one hop below it', async () => {
    fake.requests.length = 0;
    fake.setScript((req) => {
      if (asks('worker')(req)) return { reply: { text: 'one, two, three' } };
      if (text(req).includes('one, two, three')) return { reply: { text: 'The worker counted.' } };
      if (text(req).includes('tool_result')) return { reply: { text: 'Commissioned the worker; waiting.' } };
      return { reply: { tool_calls: [{ name: 'mcp__nexus__send', input: { to: 'worker', subject: 'count', text: 'Count to three.' } }] } };
    });
    const sent = await ws.nxc(['send', 'lead', '--subject', 'lead', '--json', 'Get the worker to count.'], { env });
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    await ws.waitIdle(360_000);
    const status = await ws.status();
    const rows = status.operations.flatMap((o: any) => o.threads);
    const lead = rows.find((r: any) => r.thread === sent.json.thread);
    const worker = rows.find((r: any) => r.parent === sent.json.thread);
    expect(lead).toMatchObject({ opener: 'alice', to: `${ws.short}/lead`, session: { depth: 1 } });
    // The send tool spoke for the lead's session: its handle opened the thread, one hop deeper, under its thread.
    expect(worker, JSON.stringify(rows)).toMatchObject({ opener: `${ws.short}/lead`, to: `${ws.short}/worker`, subject: 'count', state: 'answered', session: { depth: 2 } });
    const view = await ws.nxc(['threads', 'show', worker.thread, '--json']);
    expect(view.json.messages[0]).toMatchObject({ author: `${ws.short}/lead`, session: lead.session.id, text: 'Count to three.' });
    // The model was offered every Nexus tool from its first request on.
    const first = fake.requests.find(asks('lead'))!;
    expect(offered(first).filter((n) => n.startsWith('mcp__')).sort()).toEqual(['guide_personas', 'reply', 'send', 'status', 'threads_show', 'wait'].map((t) => `mcp__nexus__${t}`));
  }, 480_000);

  it('offers a tools: [] persona no Nexus tool, so it stays reply-only', async () => {
    fake.requests.length = 0;
    fake.setScript(() => ({ reply: { text: 'Nothing I may do but answer.' } }));
    const sent = await ws.nxc(['send', 'quiet', '--subject', 'quiet', '--json', 'Commission someone.'], { env });
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    await ws.waitIdle(360_000);
    const first = fake.requests.find(asks('quiet'));
    expect(first).toBeDefined();
    expect(offered(first!).filter((n) => n.startsWith('mcp__'))).toEqual([]);
    const view = await ws.nxc(['threads', 'show', sent.json.thread, '--json']);
    expect(view.json.messages.at(-1)).toMatchObject({ author: `${ws.short}/quiet`, text: 'Nothing I may do but answer.' });
  }, 480_000);
});
