// The dashboard's secret stays with the dashboard: run as the attack was, in real headless Chromium, against
// a real node (in this process) serving a real workspace, with a second loopback server in the same browser.
// And a state-changing request from another origin is refused however it authenticates.
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { inject } from 'vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addToRegistry, nodePaths, startNode, type RunningNode } from '../../../node-agent/host/node/index.js';
import { silentLog } from '../../../server/index.js';
import { makeWorkspace, type TestWorkspace } from '../../helpers/workspace.js';

const CHROMIUM = [process.env['CHROMIUM_PATH'], '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => p !== undefined && p !== '' && existsSync(p));
if (CHROMIUM === undefined) console.log('SKIP test/ui/cookie-isolation.test.ts (browser cases): no chromium binary (apt-get install -y chromium, or set CHROMIUM_PATH)');

let home: string;
let node: RunningNode;
let w: TestWorkspace;
let url: URL;
let secret: string;
let port: number;
let saved: string | undefined;

/** An HTTP request to the dashboard on 127.0.0.1 naming `host` (Node does not resolve *.localhost itself). */
function toDashboard(path: string, init: { method?: string; host?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; text: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: init.method ?? 'GET', headers: { host: init.host ?? url.host, ...init.headers } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

async function messagesOf(thread: string): Promise<number> {
  const r = await w.nxc(['threads', 'show', thread, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return (r.json.messages as unknown[]).length;
}

beforeAll(async () => {
  w = await makeWorkspace({ real: true });
  home = mkdtempSync(join(tmpdir(), 'nexus-ui-cookie-'));
  symlinkSync(join(inject('nexusHome'), 'cache'), join(home, 'cache'));
  addToRegistry(nodePaths(home), w.id, w.root);
  w.home = home;
  saved = process.env['NEXUS_HOME'];
  process.env['NEXUS_HOME'] = home;
  node = await startNode({ home, log: silentLog });
  url = new URL(node.ui()!.url);
  secret = url.searchParams.get('k')!;
  port = Number(url.port);
});

afterAll(async () => {
  await node?.close();
  await w?.cleanup();
  if (saved === undefined) delete process.env['NEXUS_HOME'];
  else process.env['NEXUS_HOME'] = saved;
  if (home) rmSync(home, { recursive: true, force: true });
});

describe('the dashboard on loopback', () => {
  it('is served on a host name of its own under .localhost', () => {
    expect(url.hostname).toMatch(/^nxs-[0-9a-f]{20}\.localhost$/);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43,}$/);
  });

  it('an old URL on 127.0.0.1 sets no cookie there: it is sent to the dashboard name', async () => {
    const r = await toDashboard(`/?k=${secret}`, { host: `127.0.0.1:${port}` });
    expect(r.status).toBe(303);
    expect(r.headers['location']).toBe(`http://${url.host}/?k=${secret}`);
    expect(r.headers['set-cookie']).toBeUndefined();
  });
});

describe.skipIf(CHROMIUM === undefined)('the secret in a browser', () => {
  let browser: Browser;
  let other: Server;
  const seen: Array<{ host: string; cookie: string }> = [];

  beforeAll(async () => {
    // Any other local server: another user's, or a dev server. It records what the browser sends it.
    other = createServer((req, res) => {
      seen.push({ host: req.headers.host ?? '', cookie: req.headers.cookie ?? '' });
      res.end('<!doctype html><title>elsewhere</title>');
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    browser = await chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox'] });
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => other?.close(r));
  });

  it('opening the dashboard URL, then another loopback server in the same session, sends that server no secret', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url.toString());
    expect(new URL(page.url()).host).toBe(url.host);
    expect(new URL(page.url()).searchParams.has('k')).toBe(false);
    const cookies = await context.cookies();
    expect(cookies.filter((c) => c.value === secret)).toEqual([
      expect.objectContaining({ name: '__Host-nxs_ui', domain: url.hostname, secure: true, httpOnly: true, sameSite: 'Strict' }),
    ]);
    // The dashboard works on its cookie alone.
    const again = await page.goto(`${url.origin}/operations`);
    expect(again?.status()).toBe(200);

    const otherPort = (other.address() as AddressInfo).port;
    for (const host of [`127.0.0.1:${otherPort}`, `localhost:${otherPort}`, `127.0.0.1:${otherPort}`]) await page.goto(`http://${host}/`);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    for (const r of seen) expect(r.cookie, r.host).not.toContain(secret);
    await context.close();
  });

  it('an old 127.0.0.1 URL lands on the dashboard name, and leaves no cookie on 127.0.0.1', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${port}/?k=${secret}`);
    expect(new URL(page.url()).host).toBe(url.host);
    expect(await context.cookies(`http://127.0.0.1:${port}/`)).toEqual([]);
    await context.close();
  });
});

describe('a state-changing request from another origin', () => {
  let thread: string;
  beforeAll(async () => {
    const sent = await w.nxc(['send', '@bob', '--subject', 'csrf target', '--json', 'hello']);
    expect(sent.code, sent.stderr).toBe(0);
    thread = sent.json.thread as string;
  });

  const form = () => new URLSearchParams({ text: 'posted from elsewhere', actor: 'alice' }).toString();
  const headers = (extra: Record<string, string>) => ({ 'content-type': 'application/x-www-form-urlencoded', ...extra });

  it.each([
    ['?k=<secret>, Origin of another site', (p: string) => `${p}?k=${secret}`, { origin: 'http://evil.example' }],
    ['?k=<secret>, Sec-Fetch-Site cross-site', (p: string) => `${p}?k=${secret}`, { 'sec-fetch-site': 'cross-site' }],
    ['a bearer secret, Origin of another site', (p: string) => p, { origin: 'http://127.0.0.1:9', authorization: `Bearer ${secret}` }],
  ] as const)('is refused with 403 and posts nothing: %s', async (_name, path, extra) => {
    const before = await messagesOf(thread);
    const r = await toDashboard(path(`/w/${w.id}/t/${thread}/reply`), { method: 'POST', headers: headers(extra), body: form() });
    expect(r.status).toBe(403);
    expect(r.text).toMatch(/cross-origin/);
    expect(await messagesOf(thread)).toBe(before);
  });

  it('the same post from the dashboard itself is taken', async () => {
    const before = await messagesOf(thread);
    const r = await toDashboard(`/w/${w.id}/t/${thread}/reply?k=${secret}`, { method: 'POST', headers: headers({ origin: url.origin, 'sec-fetch-site': 'same-origin' }), body: form() });
    expect(r.status).toBe(303);
    expect(await messagesOf(thread)).toBe(before + 1);
  });
});
