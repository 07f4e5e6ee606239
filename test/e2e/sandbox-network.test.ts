// A persona's `network:` as its sandbox enforces it: a host list reaches the declared hosts through the filtering
// proxy the supervisor runs outside, and nothing else; `none` reaches nothing. Real sessions (the sidecar, bubblewrap,
// the bridge inside, the proxy outside) against two HTTP servers on this machine's loopback.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PersonaDeclarationSchema } from '../../protocol/persona.js';
import { hostAllowed, hostRules, NETWORK_LOG, providerNetwork, startFilteringProxy } from '../../node-agent/adapters/sandbox/index.js';
import { codexConfig } from '../helpers/codex-config.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider/index.js';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';

let ws: TestWorkspace;
let fake: FakeProvider;
let allowed: Server;
let other: Server;
const hits = { allowed: 0, other: 0 };

function serve(name: keyof typeof hits): Promise<Server> {
  const s = createServer((_req, res) => {
    hits[name]++;
    res.end(`hello from ${name}\n`);
  });
  return new Promise((r) => s.listen(0, '127.0.0.1', () => r(s)));
}
const portOf = (s: Server) => (s.address() as { port: number }).port;

/** What the session's script found: one line per attempt, `name: <http status> <CONNECT status>` (000: no answer). */
const SCRIPT = `#!/bin/bash
. ./net.env
out="net-$1.txt"
[ -s "$out" ] && exit 0
: > "$out"
get() { # name url [curl options]
  local name=$1 url=$2; shift 2
  echo "$name: $(curl -s -o /dev/null -w '%{http_code} %{http_connect}' --max-time 10 "$@" "$url" 2>/dev/null)" >> "$out"
}
get declared "http://127.0.0.1:$ALLOWED/"
get declared-tunnel "http://127.0.0.1:$ALLOWED/" --proxytunnel
get other-port "http://127.0.0.1:$OTHER/"
get other-port-tunnel "http://127.0.0.1:$OTHER/" --proxytunnel
get other-name "http://localhost:$ALLOWED/"
get around-proxy "http://127.0.0.1:$ALLOWED/" --noproxy '*'
if (exec 3<>"/dev/tcp/127.0.0.1/$OTHER") 2>/dev/null; then echo "tcp: connected" >> "$out"; else echo "tcp: refused" >> "$out"; fi
echo "proxy: \${HTTPS_PROXY:-none}" >> "$out"
`;

beforeAll(async () => {
  fake = await startFakeProvider();
  allowed = await serve('allowed');
  other = await serve('other');
  ws = await makeWorkspace({ real: true });
  writeFileSync(join(ws.root, 'net.sh'), SCRIPT);
  writeFileSync(join(ws.root, 'net.env'), `ALLOWED=${portOf(allowed)}\nOTHER=${portOf(other)}\n`);
  const declare = (role: string, network: string) =>
    writeFileSync(
      join(ws.root, '.nxs-personas', `${role}.yaml`),
      ['model: fake-model', `system_prompt: You are ${role}.`, 'tools: [Bash]', 'permissions: acceptEdits', `network: ${network}`, 'runtime:', `  command: ["bash", "net.sh", "${role}"]`].join('\n') + '\n',
    );
  mkdirSync(join(ws.root, '.nxs-personas'), { recursive: true });
  declare('listed', `["127.0.0.1:${portOf(allowed)}"]`);
  declare('offline', 'none');
  // The builtin runtime calls the model itself, outside; its tools run in the sandbox, behind the proxy.
  writeFileSync(
    join(ws.root, '.nxs-personas', 'builtin.yaml'),
    ['model: fake-model', 'system_prompt: You are builtin.', 'tools: [Bash]', 'permissions: acceptEdits', `network: ["127.0.0.1:${portOf(allowed)}"]`, 'runtime:', '  builtin:', '    provider: anthropic', `    base_url: ${fake.anthropicUrl}`].join('\n') + '\n',
  );
}, 120_000);

afterAll(async () => {
  await ws?.cleanup();
  await fake?.close();
  allowed?.close();
  other?.close();
});

function found(role: string): Record<string, string> {
  const file = join(ws.root, `net-${role}.txt`);
  expect(existsSync(file), `the session of ${role} left no report`).toBe(true);
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
  return Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]));
}

async function run(role: string): Promise<string> {
  const sent = await ws.nxc(['send', role, '--subject', `net ${role}`, '--json', 'Try the network.'], { env: { ANTHROPIC_API_KEY: 'test-key' } });
  expect(sent.code, sent.stdout + sent.stderr).toBe(0);
  expect(sent.json.woke, JSON.stringify(sent.json.warnings)).not.toBeNull();
  await ws.waitIdle(120_000);
  return sent.json.woke.session as string;
}

describe('a command session with network: [host:port]', () => {
  it('reaches the declared host through the proxy, and is refused for another port, another name and the bare network', async () => {
    const before = { ...hits };
    const session = await run('listed');
    const r = found('listed');
    expect(r['proxy']).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // A plain request for an absolute URL, and a CONNECT tunnel: both reach the declared server.
    expect(r['declared']).toBe('200 000');
    expect(r['declared-tunnel']).toBe('200 200');
    // The same machine on another port, or the same port under another name: 403 from the proxy.
    expect(r['other-port']).toBe('403 000');
    expect(r['other-port-tunnel']).toBe('000 403');
    expect(r['other-name']).toBe('403 000');
    // Around the proxy there is no network at all.
    expect(r['around-proxy']).toBe('000 000');
    expect(r['tcp']).toBe('refused');
    expect(hits.allowed - before.allowed).toBe(2);
    expect(hits.other).toBe(0);
    // Every refusal is in the session's network log.
    const log = readFileSync(join(ws.root, '.nxs', 'sessions', session, NETWORK_LOG), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(log.map((l) => l.refused).sort()).toEqual([`127.0.0.1:${portOf(other)}`, `127.0.0.1:${portOf(other)}`, `localhost:${portOf(allowed)}`].sort());
  }, 180_000);
});

describe('a builtin session with network: [host:port]', () => {
  it("runs its Bash tool behind the proxy: the declared host answers, another port is refused", async () => {
    fake.setScript((_req, n) => (n === 0 ? { reply: { tool_calls: [{ name: 'Bash', input: { command: 'bash net.sh builtin' } }] } } : { reply: { text: 'done' } }));
    const before = { ...hits };
    await run('builtin');
    const r = found('builtin');
    expect(r['proxy']).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(r['declared']).toBe('200 000');
    expect(r['declared-tunnel']).toBe('200 200');
    expect(r['other-port']).toBe('403 000');
    expect(r['other-name']).toBe('403 000');
    expect(r['around-proxy']).toBe('000 000');
    expect(r['tcp']).toBe('refused');
    expect(hits.allowed - before.allowed).toBe(2);
    expect(hits.other).toBe(before.other);
  }, 180_000);
});

describe('a command session with network: none', () => {
  it('reaches nothing, declared elsewhere or not, and has no proxy', async () => {
    const before = { ...hits };
    const session = await run('offline');
    const r = found('offline');
    expect(r['proxy']).toBe('none');
    for (const name of ['declared', 'declared-tunnel', 'other-port', 'other-port-tunnel', 'other-name', 'around-proxy']) expect([name, r[name]]).toEqual([name, '000 000']);
    expect(r['tcp']).toBe('refused');
    expect(hits).toEqual(before);
    expect(existsSync(join(ws.root, '.nxs', 'sessions', session, NETWORK_LOG))).toBe(false);
  }, 180_000);
});

describe('the filtering proxy', () => {
  it('matches names as declared: exact, *.domain below it only, with or without a port', () => {
    const rules = hostRules(['api.example.com', '*.pkg.example.org', 'localhost:8080']);
    expect(hostAllowed(rules, 'api.example.com', 443)).toBe(true);
    expect(hostAllowed(rules, 'API.Example.com.', 8443)).toBe(true);
    expect(hostAllowed(rules, 'example.com', 443)).toBe(false);
    expect(hostAllowed(rules, 'evil-api.example.com', 443)).toBe(false);
    expect(hostAllowed(rules, 'api.example.com.evil.net', 443)).toBe(false);
    expect(hostAllowed(rules, 'a.pkg.example.org', 443)).toBe(true);
    expect(hostAllowed(rules, 'a.b.pkg.example.org', 80)).toBe(true);
    expect(hostAllowed(rules, 'pkg.example.org', 443)).toBe(false);
    expect(hostAllowed(rules, 'xpkg.example.org', 443)).toBe(false);
    expect(hostAllowed(rules, 'localhost', 8080)).toBe(true);
    expect(hostAllowed(rules, 'localhost', 8081)).toBe(false);
    expect(hostAllowed(rules, '127.0.0.1', 8080)).toBe(false);
  });

  it("gives claude-code and codex their provider's host by default", () => {
    const dir = mkdtempSync(join(tmpdir(), 'nxs-provider-'));
    try {
      expect(providerNetwork('claude-code', { ANTHROPIC_BASE_URL: 'http://127.0.0.1:4567' })).toEqual(['127.0.0.1:4567']);
      expect(providerNetwork('claude-code', {})).toEqual(['api.anthropic.com:443']);
      expect(providerNetwork('claude-code', { CLAUDE_CODE_USE_BEDROCK: '1' })).toBe('all');
      expect(providerNetwork('codex', { CODEX_HOME: dir })).toEqual(['api.openai.com:443', 'chatgpt.com:443', 'auth.openai.com:443']);
      expect(providerNetwork('codex', { CODEX_HOME: dir, OPENAI_BASE_URL: 'https://llm.example.com/v1' })).toEqual(['llm.example.com:443']);
      writeFileSync(join(dir, 'config.toml'), codexConfig('http://127.0.0.1:7654/v1'));
      expect(providerNetwork('codex', { CODEX_HOME: dir })).toEqual(['127.0.0.1:7654']);
      writeFileSync(join(dir, 'config.toml'), 'model_provider = "oss"\n');
      expect(providerNetwork('codex', { CODEX_HOME: dir })).toBe('all');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is declared as host names, *.domain and :port, and nothing else', () => {
    const parse = (network: unknown) => PersonaDeclarationSchema.safeParse({ model: 'm', system_prompt: 's', runtime: 'codex', network }).success;
    expect(parse(['api.example.com', '*.example.org:443', 'localhost:8080', '127.0.0.1'])).toBe(true);
    for (const bad of ['http://api.example.com', 'api.example.com/v1', '*', '*.', 'a.*.example.com', 'bad_host', 'a.example.com:99999', 'user@host', '']) expect([bad, parse([bad])]).toEqual([bad, false]);
  });

  it('answers a request that is not for a proxy with 400, counts it, and stops with its connections cut', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nxs-proxy-test-'));
    const refused: string[] = [];
    const proxy = await startFilteringProxy({ path: join(dir, 'p.sock'), hosts: ['127.0.0.1'], onRefuse: (r) => refused.push(r.host) });
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = request({ socketPath: proxy.path, path: '/', method: 'GET' }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(400);
      expect(proxy.refused).toBe(1);
      expect(refused).toHaveLength(1);
    } finally {
      await proxy.close();
      expect(existsSync(proxy.path)).toBe(false);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
