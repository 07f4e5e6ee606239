// The node's dashboard in a real browser (headless Chromium via playwright-core): a real node in this
// process serving two real workspaces, real sessions as child processes, a real relay stopped and
// started again, and the real CLI beside the page.
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { inject } from 'vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addToRegistry, nodePaths, startNode, type RunningNode } from '../../../node-agent/host/node/index.js';
import { createLogger, silentLog, startRelay, type Relay } from '../../../server/index.js';
import { until } from '../../helpers/until.js';
import { makeWorkspace, REPO, type TestWorkspace } from '../../helpers/workspace.js';

const CHROMIUM = [process.env['CHROMIUM_PATH'], '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => p !== undefined && p !== '' && existsSync(p));
if (CHROMIUM === undefined) console.log('SKIP test/e2e/ui/dashboard.test.ts: no chromium binary (apt-get install -y chromium, or set CHROMIUM_PATH)');

export const ARTIFACTS = join(REPO, 'test', 'artifacts');
const OPERATOR = 'ui-test-operator-token-0123456789abcdef';

/** Evaluates `js` in the page (written as text: this project compiles without the DOM's types). */
const inPage = <T = unknown>(p: Page, js: string): Promise<T> => p.evaluate(js) as Promise<T>;

describe.skipIf(CHROMIUM === undefined)('the dashboard in a browser', () => {
  let a: TestWorkspace;
  let b: TestWorkspace;
  let home: string;
  let node: RunningNode;
  let saved: Record<string, string | undefined> = {};
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let url: string;
  let base: string;
  /** The dashboard on 127.0.0.1: Node's fetch does not resolve its *.localhost name (browsers do). */
  let direct: string;
  let escalated: string;
  /** The operation holding b's working copy, and the commission queued behind it. */
  let holder: string;
  let queued: string;
  /** The file whose existence lets b's gate persona answer (it gives up on its own after two minutes). */
  const gate = () => join(b.root, '..', 'shared', 'gate-ui');
  const nodeLog: string[] = [];

  const shot = (name: string, p: Page = page) => p.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  const go = async (path: string) => {
    await page.goto(base + path);
    await page.waitForSelector('body[data-live=on]');
  };

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    [a, b] = await Promise.all([makeWorkspace({ real: true }), makeWorkspace({ real: true })]);
    b.persona('boss', { mode: 'escalate' });
    home = mkdtempSync(join(tmpdir(), 'nexus-ui-home-'));
    symlinkSync(join(inject('nexusHome'), 'cache'), join(home, 'cache'));
    for (const w of [a, b]) {
      addToRegistry(nodePaths(home), w.id, w.root);
      w.home = home;
    }
    // Sessions the node starts inherit this environment: they find `nxc` and this node through it.
    // (Put back in afterAll: the worker's next file runs in this same process.)
    saved = { NEXUS_HOME: process.env['NEXUS_HOME'], PATH: process.env['PATH'] };
    process.env['NEXUS_HOME'] = home;
    process.env['PATH'] = `${join(REPO, 'bin')}:${process.env['PATH'] ?? ''}`;
    node = await startNode({ home, log: createLogger({ component: 'node', sink: (l) => nodeLog.push(l) }) });
    url = node.ui()!.url;
    base = new URL(url).origin;
    direct = `http://127.0.0.1:${new URL(url).port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox'] });
    context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    page = await context.newPage();
    await page.goto(url);
  });

  afterAll(async () => {
    // A test that failed half way may leave b's gate persona holding the copy: let it and what waits behind it finish.
    if (b && node) {
      writeFileSync(gate(), '');
      await b.waitIdle().catch(() => undefined);
    }
    await browser?.close();
    await node?.close();
    await Promise.all([a?.cleanup(), b?.cleanup()]);
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('refuses every request without the secret with 403, and one with a wrong secret', async () => {
    for (const path of ['/', '/operations', '/sync', '/events', `/w/${a.id}/t/t-x`, '/?k=wrong-secret']) {
      expect((await fetch(direct + path, { redirect: 'manual' })).status, path).toBe(403);
    }
    for (const action of ['reply', 'withdraw']) {
      const post = await fetch(`${direct}/w/${a.id}/t/t-x/${action}`, { method: 'POST', body: new URLSearchParams({ text: 'hi', actor: 'alice' }) });
      expect(post.status, action).toBe(403);
    }
    const withCookieOfAnother = await fetch(direct + '/', { headers: { cookie: `__Host-nxs_ui=not-the-secret; nxs_ui_${new URL(base).port}=not-the-secret` } });
    expect(withCookieOfAnother.status).toBe(403);
  });

  it('nxs ui prints the URL the node serves; opening it sets an HttpOnly SameSite=Strict __Host- cookie and drops the secret from the address bar', async () => {
    const printed = await a.nxs(['ui', '--json']);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.json).toMatchObject({ url, loopback: true, host: '127.0.0.1', opened: false });
    expect(new URL(url).searchParams.get('k')).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    await context.clearCookies();
    await page.goto(url);
    expect(page.url()).toBe(`${base}/`);
    const cookies = await context.cookies(base);
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ name: '__Host-nxs_ui', secure: true, httpOnly: true, sameSite: 'Strict', value: new URL(url).searchParams.get('k') });
  });

  it('a fresh node with two workspaces: nothing needs you, and Operations lists both', async () => {
    await go('/');
    await expect(page.locator('[data-empty=true]').textContent()).resolves.toContain('2 workspace(s)');
    await go('/operations');
    await expect(page.locator('section[data-workspace]').count()).resolves.toBe(2);
  });

  it('an escalation appears in Needs you without a reload, with its hand-back text', async () => {
    // An answer waiting in the other workspace, so Needs you spans both.
    const review = await a.nxc(['send', '@bob', '--subject', 'review the parser', '--json', 'please review']);
    expect(review.code, review.stderr).toBe(0);
    expect((await a.nxc(['reply', '--thread', review.json.thread, '--json', 'looks good to me'], { env: { NXC_ACTOR: 'bob' } })).code).toBe(0);

    await go('/');
    await page.locator(`li[data-kind=awaiting][data-thread="${review.json.thread}"]`).waitFor();
    // The moment the item enters the page, as the page itself sees it (not when a poll happens to look).
    await page.evaluate(`(() => {
      window.marker = 42;
      new MutationObserver((_, obs) => {
        if (document.querySelector('li[data-kind=escalated]')) {
          window.seenAt = Date.now();
          obs.disconnect();
        }
      }).observe(document.body, { childList: true, subtree: true });
    })()`);
    const sent = await b.nxc(['send', 'boss', '--subject', 'pricing', '--json', 'set the price']);
    expect(sent.code, sent.stderr).toBe(0);
    escalated = sent.json.thread;
    const item = page.locator(`li[data-kind=escalated][data-thread="${escalated}"]`);
    await item.waitFor({ timeout: 60_000 });
    const seenAt = await inPage<number>(page, 'window.seenAt');
    // Still the same document: the item came over the event stream, not a reload.
    expect(await inPage(page, 'window.marker')).toBe(42);
    await expect(item.locator('.text').textContent()).resolves.toBe('I need a decision that is not mine');
    const view = await b.nxc(['threads', 'show', escalated, '--json']);
    const handBack = view.json.messages.find((m: { effect: string }) => m.effect === 'escalate');
    const delay = seenAt - Date.parse(handBack.ts);
    console.log(`escalation shown on the page ${delay} ms after it was appended`);
    expect(delay).toBeLessThan(10_000);
    // The escalation is listed before the answer waiting in the other workspace.
    await expect(page.locator('ol.needs > li').first().getAttribute('data-kind')).resolves.toBe('escalated');
    await shot('needs-you');
  });

  it('refuses a bad answer from the page with the code the CLI gives, and keeps the text', async () => {
    const form = page.locator(`li[data-thread="${escalated}"] form`);
    await form.locator('textarea').fill('   ');
    await form.locator('input[name=actor]').fill('alice');
    // Reply, not the Done beside it.
    const [res] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), form.getByRole('button', { name: 'Reply', exact: true }).click()]);
    expect(res.status()).toBe(400);
    await expect(page.locator('[data-error]').getAttribute('data-error')).resolves.toBe('EMPTY_MESSAGE');
    const cli = await b.nxc(['reply', '--thread', escalated, '--json', '   '], { env: { NXC_ACTOR: 'alice' } });
    expect(cli.code).toBe(2);
    expect(cli.json.error.code).toBe('EMPTY_MESSAGE');

    await page.locator('form.reply textarea').fill('keep this');
    await page.locator('form.reply input[name=actor]').fill('Not A Handle');
    await page.locator('form.reply button').click();
    await expect(page.locator('[data-error]').getAttribute('data-error')).resolves.toBe('BAD_REQUEST');
    await expect(page.locator('form.reply textarea').inputValue()).resolves.toBe('keep this');
    await shot('refused');
  });

  it('answering the escalation from the page, by keyboard only, clears it and the CLI shows the answer', async () => {
    await go('/');
    const textId = await page.locator(`li[data-thread="${escalated}"] textarea`).getAttribute('id');
    // Tab from the top of the page: the skip link comes first, then the form is reached in order.
    await page.locator('body').focus();
    await page.keyboard.press('Tab');
    await expect(inPage(page, 'document.activeElement?.textContent')).resolves.toBe('Skip to content');
    const focused = () => inPage<string>(page, 'document.activeElement?.id');
    for (let i = 0; i < 40 && (await focused()) !== textId; i++) await page.keyboard.press('Tab');
    expect(await focused()).toBe(textId);
    await page.keyboard.type('The price is 10.\nShip it.');
    await page.keyboard.press('Tab');
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('alice');
    await page.keyboard.press('Tab');
    await Promise.all([page.waitForURL(/posted=/), page.keyboard.press('Enter')]);
    await page.locator('[data-posted]').waitFor();
    await expect(page.locator(`li[data-thread="${escalated}"]`).count()).resolves.toBe(0);

    const view = await b.nxc(['threads', 'show', escalated, '--json']);
    expect(view.code).toBe(0);
    expect(view.json.messages.at(-1)).toMatchObject({ author: 'alice', session: null, text: 'The price is 10.\nShip it.' });
    const text = await b.nxc(['threads', 'show', escalated]);
    expect(text.stdout).toContain('The price is 10.');
  });

  /** Every operation and thread on the Operations page against `nxc status --all --json` of both workspaces, field for field. */
  const expectOperationsAsStatus = async () => {
    await go('/operations');
    const rows = await inPage<Array<Record<string, string>>>(page, `[...document.querySelectorAll('li[data-thread]')].map((e) => ({ ...e.dataset }))`);
    const ops = await inPage<Array<Record<string, string>>>(page, `[...document.querySelectorAll('details.op')].map((e) => ({ ...e.dataset }))`);
    const byThread = (x: { thread?: string }, y: { thread?: string }) => (x.thread! < y.thread! ? -1 : 1);
    const byOperation = (x: { operation?: string }, y: { operation?: string }) => (x.operation! < y.operation! ? -1 : 1);
    const text = (v: unknown) => (v === null || v === undefined ? '' : String(v));
    for (const w of [a, b]) {
      const status = await w.status(true);
      const expected = status.operations.flatMap((op: any) =>
        op.threads.map((r: any) => ({
          workspace: w.id,
          thread: r.thread,
          parent: r.parent ?? '',
          state: r.state,
          escalated: String(r.escalated),
          substituted: String(r.substituted),
          waitingOnSubRound: String(r.waiting_on_sub_round),
          awaitingHuman: String(r.awaiting_human),
          answeredBy: r.answered_by ?? '',
          messages: String(r.messages),
          sessionRunning: r.session === null ? '' : String(r.session.running),
          sessionTurn: r.session === null ? '' : String(r.session.turn),
          sessionDepth: r.session === null ? '' : String(r.session.depth),
          sessionDeclaration: r.session === null ? '' : text(r.session.declaration_hash),
          rejectedCode: r.rejected_code ?? '',
          writtenBy: text(r.written_by),
          withdrawn: String(r.withdrawn),
          runStatus: text(r.session?.last_run?.status),
          runModelCalls: text(r.session?.last_run?.usage.model_calls),
          wcCommit: text(r.working_copy?.commit),
          wcBranch: text(r.working_copy?.branch),
          wcDirty: text(r.working_copy?.dirty),
          done: String(r.done),
          openedIn: r.opened_in,
          untrusted: String(r.untrusted),
        })),
      );
      expect(expected.length).toBeGreaterThan(0);
      expect(rows.filter((r) => r['workspace'] === w.id).sort(byThread)).toEqual(expected.sort(byThread));
      const expectedOps = status.operations.map((op: any) => ({
        operation: op.operation,
        finished: String(op.finished),
        untrusted: String(op.untrusted),
        leaseState: text(op.lease?.state),
        leaseToken: text(op.lease?.token),
        leasePosition: text(op.lease?.position),
        leaseBehind: text(op.lease?.behind),
        leaseHeldForHandback: text(op.lease?.held_for_handback),
        leaseParkRefused: text(op.lease?.park_refused),
        leaseWithdrawn: text(op.lease?.withdrawn),
        leaseParkedBranch: text(op.lease?.parked?.branch),
      }));
      const ids = new Set(expectedOps.map((o: { operation: string }) => o.operation));
      expect(ops.filter((o) => ids.has(o['operation']!)).sort(byOperation)).toEqual(expectedOps.sort(byOperation));
    }
  };

  it('Operations shows, field for field, what nxc status --all --json prints', async () => {
    await expectOperationsAsStatus();
    // Sessions ran here, so declarations and working-copy records are on the page, not only empty fields.
    await expect(page.locator('li[data-session-declaration^="sha256:"]').count()).resolves.toBeGreaterThan(0);
    await expect(page.locator('li[data-wc-commit]:not([data-wc-commit=""])').count()).resolves.toBeGreaterThan(0);
    await inPage(page, `document.querySelectorAll('details.op').forEach((d) => (d.open = true))`);
    await shot('operations');
    // A finished operation is folded away: on a fresh page, open it as a person would, then follow its thread's link.
    await go('/operations');
    await expect(inPage(page, `document.getElementById('op-${escalated}').open`)).resolves.toBe(false);
    await page.locator(`#op-${escalated} > summary`).click();
    await page.locator(`a[href="/w/${b.id}/t/${escalated}"]`).click();
    await page.locator('ol.messages > li').nth(2).waitFor();
    await expect(inPage(page, `[...document.querySelectorAll('ol.messages > li')].map((e) => e.dataset.effect)`)).resolves.toEqual([
      'commission',
      'escalate',
      'none',
    ]);
    await shot('thread');
  });

  it('sync trouble shows when the relay stops and clears when it comes back', async () => {
    const relayDir = mkdtempSync(join(tmpdir(), 'nexus-ui-relay-'));
    let relay: Relay = await startRelay({ dataDir: relayDir, operatorToken: OPERATOR, log: silentLog });
    try {
      const made = await fetch(`${relay.url}/v1/streams`, {
        method: 'POST',
        headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'ui-test' }),
      });
      const { token } = (await made.json()) as { token: string };
      const bound = await a.nxs(['sync', 'bind', relay.url, '--stream', 'ui-test', '--token', token, '--json']);
      expect(bound.code, bound.stdout + bound.stderr).toBe(0);
      await go('/sync');
      // When the node never reports the relay, its own sync log says why: it is kept in memory, not on disk.
      await page
        .locator(`section[data-workspace="${a.id}"] [data-sync=ok]`)
        .waitFor({ timeout: 60_000 })
        .catch((err: unknown) => {
          const sync = nodeLog.filter((l) => l.includes('sync')).slice(-40);
          throw new Error(`${String(err)}\nthe node's sync log:\n${sync.join('\n')}`);
        });
      await shot('sync');

      await go('/');
      const port = relay.port;
      await relay.close();
      const item = page.locator(`li[data-kind=sync][data-workspace="${a.id}"]`);
      await item.locator('[data-problem=unreachable]').waitFor({ timeout: 60_000 });
      // Written while the relay is away: it waits in the outbox, and the page says so.
      expect((await a.nxc(['send', '@carol', '--subject', 'while offline', '--json', 'queued'])).code).toBe(0);
      await item.locator('[data-problem=outbox]').waitFor({ timeout: 60_000 });
      await shot('needs-you-sync-trouble');

      relay = await startRelay({ dataDir: relayDir, port, operatorToken: OPERATOR, log: silentLog });
      await item.waitFor({ state: 'detached', timeout: 90_000 });
      const status = await a.nxs(['sync', 'status', '--json']);
      expect(status.json).toMatchObject({ bound: true, connected: true, outbox: 0, lag: 0 });
    } finally {
      await relay.close();
      await a.nxs(['sync', 'unbind', '--json']);
      rmSync(relayDir, { recursive: true, force: true });
    }
  });

  it('reads without JavaScript, reflows at 200% zoom, and follows a dark system scheme', async () => {
    const plain = await browser.newContext({ javaScriptEnabled: false });
    try {
      const p = await plain.newPage();
      await p.goto(url);
      await expect(p.locator('h1').textContent()).resolves.toBe('Needs you');
      await expect(p.locator('li[data-kind=awaiting]').count()).resolves.toBe(1);
      await p.goto(`${base}/operations`);
      await expect(p.locator('li[data-thread]').count()).resolves.toBeGreaterThan(2);
    } finally {
      await plain.close();
    }
    // 200% zoom of a 1280-pixel window is a 640-pixel layout: nothing may need sideways scrolling.
    const zoomed = await browser.newContext({ viewport: { width: 640, height: 800 }, deviceScaleFactor: 2 });
    try {
      const p = await zoomed.newPage();
      await p.goto(url);
      for (const path of ['/', '/operations', '/sync', `/w/${b.id}/t/${escalated}`]) {
        await p.goto(base + path);
        const [scroll, width] = await inPage<number[]>(p, '[document.documentElement.scrollWidth, document.documentElement.clientWidth]');
        expect(scroll, path).toBeLessThanOrEqual(width!);
      }
      await p.goto(`${base}/`);
      await shot('needs-you-200-percent', p);
    } finally {
      await zoomed.close();
    }
    const dark = await browser.newContext({ colorScheme: 'dark', viewport: { width: 1100, height: 800 } });
    try {
      const p = await dark.newPage();
      await p.goto(url);
      const bg = await inPage(p, 'getComputedStyle(document.body).backgroundColor');
      expect(bg).toBe('rgb(19, 20, 24)');
      await shot('needs-you-dark', p);
    } finally {
      await dark.close();
    }
  });

  it('a commission queued for the working copy appears in Needs you with its place in line and the operation holding the copy', async () => {
    b.persona('coder', { mode: 'gate', arg: gate(), extra: 'working_tree: exclusive' });
    b.persona('rival', { mode: 'reply', extra: 'working_tree: exclusive' });
    await go('/');
    const held = await b.nxc(['send', 'coder', '--subject', 'build the parser', '--json', 'build it']);
    expect(held.code, held.stderr).toBe(0);
    holder = held.json.thread;
    const sent = await b.nxc(['send', 'rival', '--subject', 'tidy the docs', '--json', 'when the copy is free']);
    expect(sent.code, sent.stderr).toBe(0);
    queued = sent.json.thread;
    expect(sent.json.queued).toEqual({ position: 1, holder: { operation: holder, thread: holder } });
    // It arrives over the event stream, and says what nxc status --json says about the lease.
    const item = page.locator(`li[data-kind=queued][data-thread="${queued}"]`);
    await item.waitFor();
    const lease = (await b.status(true)).operations.find((o: { operation: string }) => o.operation === queued).lease;
    expect(lease).toMatchObject({ state: 'queued', position: 1, behind: holder });
    await expect(item.getAttribute('data-position')).resolves.toBe(String(lease.position));
    await expect(item.getAttribute('data-behind')).resolves.toBe(lease.behind);
    await expect(item.getAttribute('data-holder')).resolves.toBe(holder);
    await expect(item.locator(`a[href="/w/${b.id}/t/${holder}"]`).textContent()).resolves.toBe('build the parser');
    await shot('needs-you-queued');
    // Operations: the holder and the queued commission, each with its lease as status prints it.
    await expectOperationsAsStatus();
    await expect(page.locator(`#op-${holder}`).getAttribute('data-lease-state')).resolves.toBe('holds');
    await expect(page.locator(`#op-${queued}`).getAttribute('data-lease-position')).resolves.toBe('1');
    await expect(page.locator(`#op-${holder} .lease`).textContent()).resolves.toMatch(/^working copy: holds working tree \(token \d+\)/);
    await shot('operations-lease');
    // The lease lines, the queued item and the withdraw form reflow at 200% zoom like the rest.
    const zoomed = await browser.newContext({ viewport: { width: 640, height: 800 }, deviceScaleFactor: 2 });
    try {
      const p = await zoomed.newPage();
      await p.goto(url);
      for (const path of ['/', '/operations', `/w/${b.id}/t/${holder}`]) {
        await p.goto(base + path);
        const [scroll, width] = await inPage<number[]>(p, '[document.documentElement.scrollWidth, document.documentElement.clientWidth]');
        expect(scroll, path).toBeLessThanOrEqual(width!);
      }
    } finally {
      await zoomed.close();
    }
  });

  it('withdraws the holder from its thread page: someone else is refused as the CLI refuses them, its sender stops it and the queued commission runs', async () => {
    await go(`/w/${b.id}/t/${holder}`);
    const form = page.locator('form.withdraw');
    await expect(form.getAttribute('action')).resolves.toBe(`/w/${b.id}/t/${holder}/withdraw`);
    // Reply and withdraw sit side by side on the operation's first thread.
    await expect(page.locator('form.reply').count()).resolves.toBe(1);

    await form.locator('input[name=actor]').fill('bob');
    const [refused] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), form.locator('button').click()]);
    expect(refused.status()).toBe(403);
    await expect(page.locator('[data-error]').getAttribute('data-error')).resolves.toBe('WITHDRAW_NOT_SENDER');
    const cli = await b.nxc(['withdraw', '--thread', holder, '--json'], { env: { NXC_ACTOR: 'bob' } });
    expect([cli.code, cli.json.error.code]).toEqual([2, 'WITHDRAW_NOT_SENDER']);
    // Refused: nothing moved.
    const before = (await b.status(true)).operations.find((o: { operation: string }) => o.operation === holder);
    expect(before.lease).toMatchObject({ state: 'holds', withdrawn: false });
    expect(before.finished).toBe(false);
    await shot('withdraw-refused');

    await go(`/w/${b.id}/t/${holder}`);
    await page.locator('form.withdraw input[name=actor]').fill('alice');
    const key = await page.locator('form.withdraw input[name=request]').getAttribute('value');
    const [done] = await Promise.all([page.waitForURL(/withdrawn=/), page.locator('form.withdraw button').click()]);
    void done;
    await expect(page.locator('[data-withdrawn]').getAttribute('data-withdrawn')).resolves.toBe(holder);
    const withdrawnAt = page.url();
    // The withdrawal is written in the sender's name, as nxc withdraw writes it.
    const view = await b.nxc(['threads', 'show', holder, '--json']);
    expect(view.json.messages.at(-1)).toMatchObject({ author: 'alice', session: null, effect: 'answer' });
    expect(view.json.messages.at(-1).text).toContain('withdrawn by alice');

    // The same form posted again (a reload that posts twice) gets the first answer and writes nothing.
    // Posted from the page itself (the browser resolves the dashboard's *.localhost name and sends its cookie).
    const posted = JSON.stringify({ actor: 'alice', back: `/w/${b.id}/t/${holder}`, request: key! });
    const again = await inPage<{ redirected: boolean; url: string }>(
      page,
      `fetch(${JSON.stringify(`/w/${b.id}/t/${holder}/withdraw`)}, { method: 'POST', body: new URLSearchParams(${posted}) }).then((r) => ({ redirected: r.redirected, url: r.url }))`,
    );
    expect(again.redirected).toBe(true);
    expect(again.url).toBe(withdrawnAt);
    expect((await b.nxc(['threads', 'show', holder, '--json'])).json.messages).toHaveLength(view.json.messages.length);

    // The copy moves on: the queued commission starts and answers, and leaves Needs you.
    await go('/');
    await page.locator(`li[data-kind=queued][data-thread="${queued}"]`).waitFor({ state: 'detached', timeout: 60_000 });
    await b.waitIdle();
    const after = await b.nxc(['threads', 'show', queued, '--json']);
    expect(after.json.thread.state).toBe('answered');
    // Nothing waits on alice for the operation she withdrew herself.
    await expect(page.locator(`li[data-thread="${holder}"]`).count()).resolves.toBe(0);
  });

  it('Sync lists each trusted workspace with its id, alias and key history, as nxs sync trust list --json and nxs key show --json print them', async () => {
    const bKeys = (await b.nxs(['key', 'show', '--json'])).json;
    const added = await a.nxs(['sync', 'trust', 'add', '--workspace', b.id, '--key', JSON.stringify(bKeys.public_jwk), '--name', 'partner', '--json']);
    expect(added.code, added.stdout + added.stderr).toBe(0);
    // A rotation, so the own history has more than its genesis key.
    const rotated = await a.nxs(['key', 'rotate', '--json']);
    expect(rotated.code, rotated.stdout + rotated.stderr).toBe(0);
    const trust = (await a.nxs(['sync', 'trust', 'list', '--json'])).json;
    const keys = (await a.nxs(['key', 'show', '--json'])).json;
    expect(trust.trusted).toHaveLength(1);
    expect(keys.history).toHaveLength(2);

    await go('/sync');
    const section = page.locator(`section[data-workspace="${a.id}"]`);
    const tableRows = (scope: string) =>
      inPage<string[][]>(page, `[...document.querySelectorAll('section[data-workspace="${a.id}"] ${scope} tr[data-key]')].map((e) => [e.dataset.key, e.dataset.signedBy, e.dataset.op])`);
    const asRows = (history: Array<{ key: string; signed_by: string | null; op: string | null }>) => history.map((h) => [h.key, h.signed_by ?? '', h.op ?? '']);
    const cards = await inPage<string[][]>(page, `[...document.querySelectorAll('section[data-workspace="${a.id}"] [data-trusted]')].map((e) => [e.dataset.trusted, e.dataset.alias])`);
    expect(cards).toEqual(trust.trusted.map((e: { workspace: string; name: string | null }) => [e.workspace, e.name ?? '']));
    await expect(section.locator(`[data-trusted="${b.id}"] h4`).textContent()).resolves.toBe(`partner ${b.id}`);
    // The trusted key heads the history, and the chain is the one the trusted workspace itself reports.
    const trusted = await tableRows(`[data-trusted="${b.id}"]`);
    expect(trusted[0]![0]).toBe(trust.trusted[0].key.x);
    expect(trusted).toEqual(asRows(bKeys.history));
    // This workspace's own keys: genesis, then the rotation signed by it.
    expect(await tableRows(`[data-keys="${a.id}"]`)).toEqual(asRows(keys.history));
    expect(keys.history[1]).toMatchObject({ key: rotated.json.key, signed_by: rotated.json.previous_key, op: rotated.json.op });
    await expect(section.locator(`[data-keys="${a.id}"]`).getAttribute('data-generation')).resolves.toBe(String(keys.generation));
    await shot('sync-trust');
  });
});
