// Needs you as a person meets it on the second day, in headless Chromium: sync trouble before everything else,
// "Reply as" starting as the person the CLI takes you for, a Done button that empties the list without waking
// anyone, and another workspace's refused commission left to that workspace's person.
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { addToRegistry, nodePaths, startNode, type RunningNode } from '../../../node-agent/host/node/index.js';
import { silentLog, startRelay, type Relay } from '../../../server/index.js';
import { makeWorkspace, REPO, type TestWorkspace } from '../../helpers/workspace.js';

const CHROMIUM = [process.env['CHROMIUM_PATH'], '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => p !== undefined && p !== '' && existsSync(p));
if (CHROMIUM === undefined) console.log('SKIP test/e2e/ui/needs-order.test.ts: no chromium binary (apt-get install -y chromium, or set CHROMIUM_PATH)');

const OPERATOR = 'ui-order-operator-token-0123456789abcdef';
/** The login name this test runs under: no NXC_ACTOR anywhere, so both the CLI and the page fall back to it. */
const LOGIN = { USER: 'dana', NXC_ACTOR: undefined };

describe.skipIf(CHROMIUM === undefined)('Needs you in a browser: order, the default person and Done', () => {
  let a: TestWorkspace;
  let b: TestWorkspace;
  let home: string;
  let node: RunningNode;
  let relay: Relay | undefined;
  let relayDir: string;
  let browser: Browser;
  let page: Page;
  let base: string;
  let saved: Record<string, string | undefined> = {};

  const go = async (path: string) => {
    await page.goto(base + path);
    await page.waitForSelector('body[data-live=on]');
  };

  beforeAll(async () => {
    [a, b] = await Promise.all([makeWorkspace({ real: true, git: false }), makeWorkspace({ real: true, git: false })]);
    home = mkdtempSync(join(tmpdir(), 'nexus-ui-order-'));
    symlinkSync(join(inject('nexusHome'), 'cache'), join(home, 'cache'));
    for (const w of [a, b]) {
      addToRegistry(nodePaths(home), w.id, w.root);
      w.home = home;
    }
    // The node reads its person from its environment as the CLI does (put back in afterAll: the worker runs on).
    saved = { NEXUS_HOME: process.env['NEXUS_HOME'], PATH: process.env['PATH'], USER: process.env['USER'], NXC_ACTOR: process.env['NXC_ACTOR'] };
    process.env['NEXUS_HOME'] = home;
    process.env['PATH'] = `${join(REPO, 'bin')}:${process.env['PATH'] ?? ''}`;
    process.env['USER'] = LOGIN.USER;
    delete process.env['NXC_ACTOR'];
    node = await startNode({ home, log: silentLog });
    browser = await chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox'] });
    page = await (await browser.newContext({ viewport: { width: 1100, height: 800 } })).newPage();
    const url = node.ui()!.url;
    base = new URL(url).origin;
    await page.goto(url);
  });

  afterAll(async () => {
    await browser?.close();
    await node?.close();
    await relay?.close();
    await Promise.all([a?.cleanup(), b?.cleanup()]);
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    if (home) rmSync(home, { recursive: true, force: true });
    if (relayDir) rmSync(relayDir, { recursive: true, force: true });
  });

  it('"Reply as" starts as the person nxc takes you for with the same environment', async () => {
    const who = await a.nxc(['whoami', '--json'], { env: LOGIN });
    expect(who.code, who.stderr).toBe(0);
    expect(who.json.handle).toBe('dana');
    const sent = await a.nxc(['send', '@bob', '--subject', 'review the parser', '--json', 'please review'], { env: LOGIN });
    expect(sent.code, sent.stderr).toBe(0);
    expect((await a.nxc(['reply', '--thread', sent.json.thread, 'looks good'], { env: { NXC_ACTOR: 'bob' } })).code).toBe(0);
    await go('/');
    const item = page.locator(`li[data-kind=awaiting][data-thread="${sent.json.thread}"]`);
    await item.waitFor();
    await expect(item.locator('input[name=actor]').inputValue()).resolves.toBe(who.json.handle);
  });

  it('sync trouble comes first, before the answer that waits', async () => {
    relayDir = mkdtempSync(join(tmpdir(), 'nexus-ui-order-relay-'));
    relay = await startRelay({ dataDir: relayDir, operatorToken: OPERATOR, log: silentLog });
    const made = await fetch(`${relay.url}/v1/streams`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'order' }),
    });
    const { token } = (await made.json()) as { token: string };
    const bound = await b.nxs(['sync', 'bind', relay.url, '--stream', 'order', '--token', token, '--json']);
    expect(bound.code, bound.stdout + bound.stderr).toBe(0);
    await relay.close();
    relay = undefined;
    await go('/');
    await page.locator(`li[data-kind=sync][data-workspace="${b.id}"] [data-problem=unreachable]`).waitFor({ timeout: 60_000 });
    const kinds = await page.evaluate(`[...document.querySelectorAll('ol.needs > li')].map((e) => e.dataset.kind)`);
    expect(kinds).toEqual(['sync', 'awaiting']);
  });

  it('a commission another workspace sent and this node refused is listed once, under the workspace that sent it', async () => {
    // b trusts nobody: a's commission to it is refused, and the refusal reaches a through the node.
    const sent = await a.nxc(['send', `${b.id}/coder`, '--subject', 'not allowed', '--json', 'do this'], { env: LOGIN });
    expect(sent.code, sent.stderr).toBe(0);
    await go('/');
    const refused = page.locator(`li[data-kind=rejected][data-thread="${sent.json.thread}"]`);
    await refused.first().waitFor({ timeout: 60_000 });
    // b holds the operation too (and its refused row): it is not b's person's to handle.
    const rowInB = (await b.status(true)).operations.flatMap((o: any) => o.threads).find((r: any) => r.thread === sent.json.thread);
    expect(rowInB).toMatchObject({ rejected_code: 'STAMP_UNTRUSTED', opened_in: a.id });
    await expect(refused.count()).resolves.toBe(1);
    await expect(refused.getAttribute('data-workspace')).resolves.toBe(a.id);
  });

  it('Done beside Reply: someone else is refused as the CLI refuses them; the opener empties the item, waking nobody, and status --all still lists it', async () => {
    const thread = (await a.status(true)).operations.find((o: any) => o.subject === 'review the parser').operation as string;
    await go('/');
    const item = page.locator(`li[data-kind=awaiting][data-thread="${thread}"]`);
    await item.locator('input[name=actor]').fill('bob');
    const [refused] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), item.locator('button.done').click()]);
    expect(refused.status()).toBe(403);
    await expect(page.locator('[data-error]').getAttribute('data-error')).resolves.toBe('DONE_NOT_OPENER');
    const cli = await a.nxc(['done', thread, '--json'], { env: { NXC_ACTOR: 'bob' } });
    expect([cli.code, cli.json.error.code]).toEqual([2, 'DONE_NOT_OPENER']);

    await go('/');
    const messages = (await a.nxc(['threads', 'show', thread, '--json'])).json.messages.length;
    // The refused commission above awaits dana too: two before, one after.
    expect((await a.nxc(['status'], { env: LOGIN })).stdout).toContain('2 finished operations await you: nxc status --all');
    // The text box is left empty: Done needs none.
    await Promise.all([page.waitForURL(/done=/), page.locator(`li[data-thread="${thread}"] button.done`).click()]);
    await expect(page.locator('[data-done]').getAttribute('data-done')).resolves.toBe(thread);
    await expect(page.locator(`li[data-thread="${thread}"]`).count()).resolves.toBe(0);
    const row = (await a.status(true)).operations.find((o: any) => o.operation === thread).threads[0];
    expect(row).toMatchObject({ awaiting_human: false, done: true, messages });
    const plain = await a.nxc(['status'], { env: LOGIN });
    expect(plain.stdout).toContain('1 finished operation awaits you: nxc status --all');
    expect((await a.status(false)).finished_awaiting.map((x: { operation: string }) => x.operation)).not.toContain(thread);
  });
});
