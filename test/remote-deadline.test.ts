// A commission to another workspace that no node takes up does not stay open for ever: at its deadline (the
// target persona's declared timeout where this machine can read it, else two hours) the asker's side hands
// the thread back as an escalation that names the workspace whose node never answered. In process, with the
// test clock; ops move between the workspaces only when the test delivers them, as a node would.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliver } from './helpers/deliver.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

const HOUR = 60 * 60_000;
const EXTERNAL = 'addressable: { external: true }';

async function rowOf(w: TestWorkspace, thread: string): Promise<any> {
  for (const op of (await w.status(true)).operations) for (const r of op.threads) if (r.thread === thread) return r;
  return undefined;
}

async function lastText(w: TestWorkspace, thread: string): Promise<string> {
  const view = await w.nxc(['threads', 'show', thread, '--json']);
  return view.json.messages.at(-1).text;
}

async function tick(w: TestWorkspace): Promise<void> {
  const r = await w.nxc(['tick', '--json']);
  expect(r.code, r.stdout + r.stderr).toBe(0);
}

describe('a commission to a workspace no node serves', () => {
  let a: TestWorkspace;
  let b: TestWorkspace;
  beforeAll(async () => {
    [a, b] = await Promise.all([makeWorkspace({ git: false }), makeWorkspace({ git: false })]);
    b.persona('reviewer', { mode: 'gate', arg: join(b.root, '..', 'gate'), extra: EXTERNAL });
    b.persona('quick', { mode: 'reply', timeout: '10m', extra: EXTERNAL });
    a.persona('planner', { mode: 'wait', arg: `${b.id}/reviewer` });
    // This machine knows where B lives (its node registry would say): B's declarations can be read.
    a.inproc!.overrides = { peerRoot: (id) => (id === b.id ? b.root : null) };
    const trusted = await b.nxs(['sync', 'trust', 'add', '--workspace', a.id, '--key', join(a.root, '.nxs', 'keys', 'workspace.pub.jwk'), '--json']);
    expect(trusted.code, trusted.stdout + trusted.stderr).toBe(0);
  });
  // One machine, one time: B's clock moves with A's, so A's stamps are never from B's future.
  const advance = (ms: number) => {
    a.advance(ms);
    b.advance(ms);
  };
  afterAll(async () => {
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(b.root, '..', 'gate'), '');
    await Promise.all([a?.waitIdle().catch(() => undefined), b?.waitIdle().catch(() => undefined)]);
    await Promise.all([a?.cleanup(), b?.cleanup()]);
  });

  it('stays open until the two-hour default, then is handed back to the person as an escalation naming the missing node', async () => {
    const sent = await a.nxc(['send', `${b.id}/nosuch`, '--subject', 'review', '--json', 'please']);
    expect(sent.code, sent.stderr).toBe(0);
    advance(2 * HOUR - 60_000);
    await tick(a);
    expect(await rowOf(a, sent.json.thread)).toMatchObject({ state: 'open', escalated: false });
    advance(61_000);
    await tick(a);
    expect(await rowOf(a, sent.json.thread)).toMatchObject({ state: 'answered', escalated: true, substituted: true, awaiting_human: true });
    const text = await lastText(a, sent.json.thread);
    expect(text).toMatch(/^sidecar: /);
    expect(text).toContain(b.id);
    expect(text).toMatch(/no node/);
    expect(text).toMatch(/2 h/);
    // The wait for it ends as an escalation.
    const waited = await a.nxc(['wait', '--thread', sent.json.thread, '--timeout', '1', '--json']);
    expect(waited.code).toBe(3);
  });

  it('uses the target persona’s declared timeout when this machine can read its declaration', async () => {
    const sent = await a.nxc(['send', `${b.id}/quick`, '--subject', 'quick', '--json', 'fast please']);
    advance(10 * 60_000 - 1_000);
    await tick(a);
    expect(await rowOf(a, sent.json.thread)).toMatchObject({ state: 'open' });
    advance(2_000);
    await tick(a);
    expect(await rowOf(a, sent.json.thread)).toMatchObject({ state: 'answered', escalated: true });
    expect(await lastText(a, sent.json.thread)).toMatch(/quick's declared timeout/);
  });

  it('wakes an asker session that waits on it, and the target never runs a commission already handed back', async () => {
    const sent = await a.nxc(['send', 'planner', '--subject', 'plan', '--json', 'get it reviewed']);
    await a.waitIdle();
    advance(2 * HOUR + 1_000);
    await tick(a);
    await a.waitIdle();
    expect(await rowOf(a, sent.json.thread)).toMatchObject({ state: 'answered', answered_by: `${a.short}/planner`, session: { turn: 2 } });
    // B's node comes up late and takes in everything A wrote: nothing of it runs there, nothing is refused.
    const taken = await deliver(a, b);
    expect(taken.started).toBe(0);
    expect(taken.rejected).toBe(0);
    expect(b.sessionDirs()).toEqual([]);
  });

  it('a commission the target admitted is not handed back at the deadline: that workspace’s node has it', async () => {
    const sent = await a.nxc(['send', `${b.id}/reviewer`, '--subject', 'admitted', '--json', 'please']);
    const taken = await deliver(a, b);
    expect(taken.started).toBe(1);
    await deliver(b, a);
    advance(3 * HOUR);
    await tick(a);
    expect(await rowOf(a, sent.json.thread)).toMatchObject({ state: 'open', escalated: false, session: { handle: `${b.short}/reviewer` } });
  });
});
