// `nxs sync bind` asks the relay before it binds: a relay that does not answer, an unknown stream and a
// wrong token each get their own code and bind nothing; --offline binds anyway and says so. A real
// relay on port 0, real workspaces, the real CLI code in process.
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createConnection, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pendingWords } from '../node-agent/cli/sync-cmd.js';
import { connectCause, refusalCode } from '../node-agent/cli/sync-probe.js';
import { silentLog, startRelay, type Relay } from '../server/index.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';
import { unusedPort } from './helpers/ports.js';
import { Forger, rawPeer } from './helpers/forge.js';

const OPERATOR = 'operator-token-for-the-bind-tests';
const base = mkdtempSync(join(tmpdir(), 'nexus-bind-'));
let relay: Relay;
let token: string;
let ws: TestWorkspace;
let notNexus: HttpServer;

async function bound(): Promise<boolean> {
  const r = await ws.nxs(['sync', 'status', '--json']);
  expect(r.code, r.stderr).toBe(0);
  return r.json.bound as boolean;
}

beforeAll(async () => {
  relay = await startRelay({ port: 0, dataDir: join(base, 'relay'), operatorToken: OPERATOR, log: silentLog });
  const res = await fetch(`${relay.url}/v1/streams`, { method: 'POST', headers: { authorization: `Bearer ${OPERATOR}` }, body: JSON.stringify({ name: 'team' }) });
  expect(res.status).toBe(200);
  token = ((await res.json()) as { token: string }).token;
  notNexus = createHttpServer((_req, res) => res.writeHead(404).end('not here'));
  notNexus.listen(0, '127.0.0.1');
  await once(notNexus, 'listening');
  ws = await makeWorkspace({ git: false });
});

afterAll(async () => {
  await ws?.cleanup();
  await relay?.close();
  await new Promise((r) => notNexus.close(r));
  rmSync(base, { recursive: true, force: true });
});

describe('nxs sync bind refuses what cannot work, and binds nothing', () => {
  it('a relay that does not answer is RELAY_UNREACHABLE (exit 1), naming the URL and the cause', async () => {
    const url = `http://127.0.0.1:${await unusedPort()}`;
    const r = await ws.nxs(['sync', 'bind', url, '--stream', 'team', '--token', token, '--json']);
    expect(r.code).toBe(1);
    expect(r.json.error.code).toBe('RELAY_UNREACHABLE');
    expect(r.json.error.message).toContain(url);
    expect(r.json.error.message).toContain('ECONNREFUSED');
    expect(r.json.error.message).toContain('--offline');
    expect(await bound()).toBe(false);
  });

  it('an HTTP server that is not a relay is RELAY_UNREACHABLE, saying what answered', async () => {
    const url = `http://127.0.0.1:${(notNexus.address() as { port: number }).port}`;
    const r = await ws.nxs(['sync', 'bind', url, '--stream', 'team', '--token', token, '--json']);
    expect(r.code).toBe(1);
    expect(r.json.error).toMatchObject({ code: 'RELAY_UNREACHABLE' });
    expect(r.json.error.message).toContain('HTTP 404');
    expect(await bound()).toBe(false);
  });

  it('an unknown stream is UNKNOWN_STREAM (exit 2), not an authorisation failure', async () => {
    const r = await ws.nxs(['sync', 'bind', relay.url, '--stream', 'nosuch', '--token', token, '--json']);
    expect(r.code).toBe(2);
    expect(r.json.error.code).toBe('UNKNOWN_STREAM');
    expect(r.json.error.message).toContain(relay.url);
    expect(await bound()).toBe(false);
  });

  it('a wrong token is UNAUTHORIZED (exit 2), and --offline does not bind a refusal either', async () => {
    for (const extra of [[], ['--offline']]) {
      const r = await ws.nxs(['sync', 'bind', relay.url, '--stream', 'team', '--token', 'not-the-token', ...extra, '--json']);
      expect(r.code).toBe(2);
      expect(r.json.error.code).toBe('UNAUTHORIZED');
    }
    expect(await bound()).toBe(false);
  });

  it('the token is given once: --token and --token-file together, or an empty one, are USAGE', async () => {
    const file = join(base, 'both.token');
    writeFileSync(file, token);
    const both = await ws.nxs(['sync', 'bind', relay.url, '--stream', 'team', '--token', token, '--token-file', file, '--json']);
    expect(both.json.error.code).toBe('USAGE');
    const empty = await ws.nxs(['sync', 'bind', relay.url, '--stream', 'team', '--token', '-', '--json'], { input: '\n' });
    expect(empty.json.error.code).toBe('USAGE');
    const missing = await ws.nxs(['sync', 'bind', relay.url, '--stream', 'team', '--token-file', join(base, 'absent'), '--json']);
    expect(missing.json.error.code).toBe('USAGE');
    expect(await bound()).toBe(false);
  });
});

describe('nxs sync bind binds', () => {
  it('with --offline when the relay does not answer, and says so', async () => {
    const url = `http://127.0.0.1:${await unusedPort()}`;
    const r = await ws.nxs(['sync', 'bind', url, '--stream', 'team', '--token', token, '--offline']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('bound OFFLINE');
    expect(r.stdout).toContain('ECONNREFUSED');
    expect(await bound()).toBe(true);
    expect((await ws.nxs(['sync', 'unbind', '--json'])).json.unbound).toBe(true);
  });

  it('with several relay URLs (a comma list and a repeated one): asked in turn, all kept in the binding', async () => {
    const down = `http://127.0.0.1:${await unusedPort()}`;
    const other = `http://127.0.0.1:${await unusedPort()}`;
    const r = await ws.nxs(['sync', 'bind', `${down},${relay.url}`, other, '--stream', 'team', '--token', token, '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json).toMatchObject({ bound: true, reachable: true, relay: down, relays: [down, relay.url, other], answered_by: relay.url });
    const status = await ws.nxs(['sync', 'status', '--json']);
    expect(status.json).toMatchObject({ bound: true, relay: down, relays: [down, relay.url, other] });
    expect((await ws.nxs(['sync', 'unbind', '--json'])).json.unbound).toBe(true);
  });

  it('again, over a binding: says what it replaced, in text and in --json', async () => {
    const first = await ws.nxs(['sync', 'bind', relay.url, '--stream', 'team', '--token', token, '--json']);
    expect(first.json.replaced).toBeNull();
    const down = `http://127.0.0.1:${await unusedPort()}`;
    const text = await ws.nxs(['sync', 'bind', down, '--stream', 'team', '--token', token, '--offline']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`replaced the binding to stream team at ${relay.url}`);
    const json = await ws.nxs(['sync', 'bind', relay.url, '--stream', 'team', '--token', token, '--json']);
    expect(json.json.replaced).toMatchObject({ relay: down, relays: [down], stream: 'team' });
    expect((await ws.nxs(['sync', 'unbind', '--json'])).json.unbound).toBe(true);
  });

  it.each([
    ['--token-file', (file: string) => ['--token-file', file], undefined],
    ['--token - (stdin)', () => ['--token', '-'], 'stdin'],
  ])('with the token from %s', async (_how, args, input) => {
    const file = join(base, 'stream.token');
    writeFileSync(file, token + '\n', { mode: 0o600 });
    const r = await ws.nxs(['sync', 'bind', relay.url, '--stream', 'team', ...args(file), '--json'], input ? { input: token + '\n' } : {});
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json).toMatchObject({ bound: true, reachable: true, offline: false, stream: 'team' });
    expect(await bound()).toBe(true);
    expect((await ws.nxs(['sync', 'unbind', '--json'])).json.unbound).toBe(true);
  });
});

/** The relay's count of ops sent to consumers of `stream`, from its /metrics. */
async function opsOut(stream: string): Promise<number> {
  const text = await (await fetch(`${relay.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`nexus_relay_ops_out_total{stream="${stream}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

/**
 * A TCP proxy to the relay that lets a client's first two writes (the upgrade request and the hello)
 * through at once and holds each later one for `holdMs`: what the relay sees of a check made from a slow
 * or distant machine, whose goodbye comes well after the relay's welcome.
 */
async function slowGoodbyes(holdMs: number): Promise<{ url: string; close: () => Promise<void> }> {
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: relay.port });
    open.add(client).add(upstream);
    let writes = 0;
    client.on('data', (chunk) => {
      writes += 1;
      if (writes <= 2) upstream.write(chunk);
      else setTimeout(() => upstream.writable && upstream.write(chunk), holdMs);
    });
    upstream.on('data', (chunk) => client.writable && client.write(chunk));
    const drop = () => (client.destroy(), upstream.destroy());
    client.on('close', drop).on('error', drop);
    upstream.on('close', drop).on('error', drop);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const s of open) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

describe("nxs sync bind's check of a stream with a history", () => {
  it('is sent none of the history: the relay answers its hello at the head, however late the check says goodbye', async () => {
    const res = await fetch(`${relay.url}/v1/streams`, { method: 'POST', headers: { authorization: `Bearer ${OPERATOR}` }, body: JSON.stringify({ name: 'deep' }) });
    const deep = ((await res.json()) as { token: string }).token;
    // 1,200 ops (more than two pages) of another workspace.
    const forger = new Forger();
    const texts: string[] = [];
    for (let t = 0; t < 12; t++) {
      const { thread, texts: opened } = forger.thread(`backlog ${t}`);
      texts.push(...opened);
      for (let m = 0; m < 98; m++) texts.push(forger.message(thread, thread, `backlog ${t}.${m}`, 'none'));
    }
    const pusher = await rawPeer(relay.url, 'deep', deep);
    for (let i = 0; i < texts.length; i += 300) await pusher.push(texts.slice(i, i + 300));
    pusher.close();
    // What the pusher was sent back of its own pushes is counted before the check starts.
    let before = await opsOut('deep');
    for (;;) {
      await new Promise((r) => setTimeout(r, 100));
      const now = await opsOut('deep');
      if (now === before) break;
      before = now;
    }
    const proxy = await slowGoodbyes(500);
    try {
      const r = await ws.nxs(['sync', 'bind', proxy.url, '--stream', 'deep', '--token', deep, '--json']);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.json).toMatchObject({ bound: true, reachable: true, stream: 'deep' });
      // The check's goodbye reaches the relay 500 ms after its hello: a relay paging the history from 0
      // would have sent pages by then.
      await new Promise((r) => setTimeout(r, 800));
      expect(await opsOut('deep')).toBe(before);
    } finally {
      await proxy.close();
      await ws.nxs(['sync', 'unbind', '--json']);
    }
  });
});

describe('words for what went wrong', () => {
  it('a mistyped subcommand is "unknown subcommand", with the nearest one suggested', async () => {
    const r = await ws.nxs(['node', 'strat']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown subcommand "strat" for nxs node; did you mean "start"?');
    const top = await ws.nxs(['snyc', 'status', '--json']);
    expect(top.json.error.code).toBe('USAGE');
    expect(top.json.error.message).toContain('did you mean "sync"?');
  });

  it.each([
    ['UNKNOWN_STREAM', 'UNKNOWN_STREAM'],
    ['UNAUTHORIZED', 'UNAUTHORIZED'],
    ['BAD_CURSOR', 'UNAUTHORIZED'],
  ])("the relay's refusal %s is reported as %s", (wire, code) => {
    expect(refusalCode(wire)).toBe(code);
  });

  it('a connection failure keeps the OS code and the address', () => {
    const err = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    expect(connectCause(err)).toBe('connect ECONNREFUSED 127.0.0.1:9');
    const dns = Object.assign(new Error('getaddrinfo failed'), { code: 'ENOTFOUND' });
    expect(connectCause(dns)).toBe('ENOTFOUND: getaddrinfo failed');
    const wrapped = new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:7420'), { code: 'ECONNREFUSED' }) });
    expect(connectCause(wrapped)).toBe('fetch failed (connect ECONNREFUSED 10.0.0.1:7420)');
  });

  it.each([
    [0, ''],
    [3, ' · 3 op(s) held: signed by a key not known here yet'],
  ])('%i held op(s) read as "%s..."', (n, start) => {
    const words = pendingWords(n);
    if (start === '') expect(words).toBe('');
    else expect(words.startsWith(start)).toBe(true);
  });
});
