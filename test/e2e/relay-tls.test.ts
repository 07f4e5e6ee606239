// The relay over TLS: real certificates made by openssl, a real relay serving https:// and wss://, real nodes
// binding with a private CA or a pin, and `nxs relay serve` reloading its certificate on SIGHUP.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, existsSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { WebSocket } from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SYNC_PROTOCOL, pinOf, syncUrl } from '../../protocol/sync.js';
import { createLogger, silentLog, startRelay, type Relay } from '../../server/index.js';
import { certFolder, type CertFiles } from '../helpers/certs.js';
import { OPERATOR, relayFolders } from '../helpers/relay.js';
import { until } from '../helpers/until.js';
import { makeWorkspace, REPO, type TestWorkspace } from '../helpers/workspace.js';

const certs = certFolder();
let signed: { ca: CertFiles; relay: CertFiles };
let relay: Relay;
let token: string;
let folders: Awaited<ReturnType<typeof relayFolders>>;
const logged: Array<Record<string, unknown>> = [];
const started: TestWorkspace[] = [];

/** An HTTPS request to the relay trusting `ca`; resolves to status and parsed body. */
function httpsJson(url: string, ca: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { method: init.method ?? 'GET', headers: init.headers ?? {}, ca }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** The pin of the certificate a TLS handshake with 127.0.0.1:`port` is given now. */
function presentedPin(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      resolve(pinOf(s.getPeerCertificate().fingerprint256));
      s.end();
    });
    s.on('error', reject);
  });
}

async function syncStatus(w: TestWorkspace): Promise<any> {
  const r = await w.nxs(['sync', 'status', '--json']);
  if (r.code !== 0) throw new Error(`nxs sync status failed: ${r.stdout}${r.stderr}`);
  return r.json;
}

beforeAll(async () => {
  signed = certs.caSigned();
  folders = await relayFolders();
  relay = await startRelay({
    port: 0,
    dataDir: folders.fresh(),
    operatorToken: OPERATOR,
    tls: { cert: signed.relay.certPem, key: signed.relay.keyPem },
    log: createLogger({ component: 'relay', level: 'debug', sink: (line) => void logged.push(JSON.parse(line) as Record<string, unknown>) }),
  });
  const made = await httpsJson(`${relay.url}/v1/streams`, signed.ca.certPem, { method: 'POST', headers: { authorization: `Bearer ${OPERATOR}` }, body: JSON.stringify({ name: 'team' }) });
  expect(made.status).toBe(200);
  token = made.body.token as string;
});

afterEach(async () => {
  await Promise.all(started.splice(0).map((w) => w.cleanup().catch(() => undefined)));
});

afterAll(async () => {
  await relay?.close();
  folders?.cleanup();
  certs.cleanup();
});

describe('a relay serving TLS', () => {
  it('serves https:// and prints the pin of the certificate it serves', async () => {
    expect(relay.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(relay.fingerprint).toBe(signed.relay.pin);
    expect(await presentedPin(relay.port)).toBe(signed.relay.pin);
    expect((await httpsJson(`${relay.url}/healthz`, signed.ca.certPem)).body).toEqual({ ok: true });
  });

  it('binds one node with the private CA and another with the pin alone; ops pushed by one are caught up by the other over wss', async () => {
    const [a, b] = await Promise.all([makeWorkspace({ git: false, real: true, cliInProcess: true }), makeWorkspace({ git: false, real: true, cliInProcess: true })]);
    started.push(a!, b!);
    await Promise.all([a!.startNode(), b!.startNode()]);
    const boundA = await a!.nxs(['sync', 'bind', relay.url, '--stream', 'team', '--token', token, '--ca-file', signed.ca.cert, '--json']);
    expect(boundA.code, boundA.stderr + boundA.stdout).toBe(0);
    expect(boundA.json).toMatchObject({ bound: true, reachable: true });
    for (let i = 0; i < 5; i++) expect((await a!.nxc(['send', '@bob', '--subject', `over tls ${i}`, `message ${i}`, '--json'])).code).toBe(0);
    const pushed = await until('a pushed everything', async () => {
      const s = await syncStatus(a!);
      return s.connected && s.outbox === 0 && s.in_flight === 0 && s.cursor >= 5 ? s : undefined;
    }, 30_000);
    expect(pushed.last_error).toBeNull();
    const boundB = await b!.nxs(['sync', 'bind', relay.url.replace('https:', 'wss:'), '--stream', 'team', '--token', token, '--relay-fingerprint', signed.relay.pin, '--json']);
    expect(boundB.code, boundB.stderr + boundB.stdout).toBe(0);
    const caught = await until('b caught up', async () => {
      const s = await syncStatus(b!);
      return s.connected && s.cursor >= pushed.cursor ? s : undefined;
    }, 30_000);
    expect(caught.received).toBeGreaterThanOrEqual(5);
    expect(caught.last_error).toBeNull();
  });

  it('refuses a certificate other than the pinned one with RELAY_CERT_MISMATCH, before the token is sent, and binds nothing', async () => {
    const w = await makeWorkspace({ git: false });
    started.push(w);
    const before = logged.filter((r) => r['msg'] === 'node connected').length;
    const wrong = certs.selfSigned().pin;
    const r = await w.nxs(['sync', 'bind', relay.url, '--stream', 'team', '--token', token, '--relay-fingerprint', wrong, '--json']);
    expect(r.code).toBe(1);
    expect(r.json.error.code).toBe('RELAY_CERT_MISMATCH');
    // --offline binds an unreachable relay, never a refused certificate.
    const offline = await w.nxs(['sync', 'bind', relay.url, '--stream', 'team', '--token', token, '--relay-fingerprint', wrong, '--offline', '--json']);
    expect(offline.json.error.code).toBe('RELAY_CERT_MISMATCH');
    expect((await w.nxs(['sync', 'status', '--json'])).json.bound).toBe(false);
    expect(logged.filter((r) => r['msg'] === 'node connected').length).toBe(before);
  });

  it('a certificate no CA it trusts vouches for is not bound (without --ca-file or a pin)', async () => {
    const w = await makeWorkspace({ git: false });
    started.push(w);
    const r = await w.nxs(['sync', 'bind', relay.url, '--stream', 'team', '--token', token, '--json']);
    expect(r.code).toBe(1);
    expect(r.json.error.code).toBe('RELAY_UNREACHABLE');
    expect(r.json.error.message).toMatch(/certificate/i);
  });

  it('a plain ws:// client is refused: the socket never opens', async () => {
    const plain = new WebSocket(syncUrl(relay.url.replace('https:', 'http:')));
    const outcome = await new Promise<string>((resolve) => {
      plain.once('open', () => resolve('opened'));
      plain.once('error', (err) => resolve(`failed: ${err.message}`));
    });
    expect(outcome).toMatch(/^failed/);
    plain.terminate();
  });

  it('--ca-file and --relay-fingerprint on a plain relay URL, or a malformed pin, are USAGE', async () => {
    const w = await makeWorkspace({ git: false });
    started.push(w);
    const plain = await w.nxs(['sync', 'bind', 'http://127.0.0.1:1', '--stream', 'team', '--token', token, '--ca-file', signed.ca.cert, '--json']);
    expect(plain.json.error.code).toBe('USAGE');
    const bad = await w.nxs(['sync', 'bind', relay.url, '--stream', 'team', '--token', token, '--relay-fingerprint', 'sha256:abc', '--json']);
    expect(bad.json.error.code).toBe('USAGE');
  });
});

describe('a relay listening beyond loopback', () => {
  it('without TLS warns at start and in /healthz; with TLS it does not', async () => {
    const lines: string[] = [];
    const plain = await startRelay({ host: '0.0.0.0', port: 0, dataDir: folders.fresh(), operatorToken: OPERATOR, log: createLogger({ component: 'relay', sink: (l) => void lines.push(l) }) });
    try {
      expect(plain.warnings).toHaveLength(1);
      expect(lines.some((l) => JSON.parse(l).level === 'warn' && /without TLS/.test(JSON.parse(l).msg as string))).toBe(true);
      const health = (await (await fetch(`${plain.url}/healthz`)).json()) as { ok: boolean; warnings?: string[] };
      expect(health.ok).toBe(true);
      expect(health.warnings?.[0]).toMatch(/without TLS/);
    } finally {
      await plain.close();
    }
    const tls = await startRelay({ host: '0.0.0.0', port: 0, dataDir: folders.fresh(), operatorToken: OPERATOR, tls: { cert: signed.relay.certPem, key: signed.relay.keyPem }, log: silentLog });
    try {
      expect(tls.warnings).toEqual([]);
      expect((await httpsJson(`${tls.url}/healthz`, signed.ca.certPem)).body).toEqual({ ok: true });
    } finally {
      await tls.close();
    }
  });
});

describe('nxs relay serve with --tls-cert and --tls-key', () => {
  let child: ChildProcess | null = null;
  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('prints the pin, and on SIGHUP serves a new certificate to new connections while an open one keeps going', async () => {
    const first = certs.selfSigned();
    const second = certs.selfSigned();
    const live = join(certs.dir, 'live');
    copyFileSync(first.cert, `${live}.crt`);
    copyFileSync(first.key, `${live}.key`);
    child = spawn(process.execPath, [join(REPO, 'bin', 'nxs'), 'relay', 'serve', '--port', '0', '--data-dir', folders.fresh(), '--tls-cert', `${live}.crt`, '--tls-key', `${live}.key`, '--json'], {
      env: { ...process.env, NEXUS_RELAY_TOKEN: OPERATOR },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const [line] = (await once(child.stdout!, 'data')) as [Buffer];
    const banner = JSON.parse(line.toString().split('\n')[0]!) as { url: string; fingerprint: string };
    expect(banner.fingerprint).toBe(first.pin);
    const url = banner.url;
    const port = Number(new URL(url).port);
    const made = await httpsJson(`${url}/v1/streams`, first.certPem, { method: 'POST', headers: { authorization: `Bearer ${OPERATOR}` }, body: JSON.stringify({ name: 'hup' }) });
    const streamToken = made.body.token as string;

    // An open, admitted connection made with the first certificate.
    const ws = new WebSocket(syncUrl(url), { ca: first.certPem });
    const frames: Array<{ type: string; [k: string]: unknown }> = [];
    ws.on('message', (d: Buffer) => frames.push(JSON.parse(d.toString())));
    const closed = once(ws, 'close');
    await once(ws, 'open');
    ws.send(JSON.stringify({ type: 'hello', protocol: SYNC_PROTOCOL, stream: 'hup', token: streamToken, node: 'test-node', since: 0 }));
    await until('welcome', async () => (frames.some((f) => f.type === 'welcome') ? true : undefined), 10_000, 20);

    copyFileSync(second.cert, `${live}.crt`);
    copyFileSync(second.key, `${live}.key`);
    child.kill('SIGHUP');
    await until('the new certificate served', async () => ((await presentedPin(port)) === second.pin ? true : undefined), 10_000, 50);

    // The old connection is still the same socket, and still answered.
    ws.send(JSON.stringify({ type: 'ping', t: 42 }));
    await until('pong on the old connection', async () => (frames.some((f) => f.type === 'pong' && f['t'] === 42) ? true : undefined), 10_000, 20);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    expect(child.exitCode).toBeNull();
    expect(existsSync(`${live}.crt`)).toBe(true);
    ws.close(1000);
    await closed;
    expect(stderr).not.toMatch(/"level":"error"/);
  });
});
