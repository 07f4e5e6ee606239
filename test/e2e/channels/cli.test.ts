// Channels through the built CLI, with every session a real process (the fixture agent under its
// sidecar): a three-step review loop with rework as the README walks through it, its transcripts, and a
// member of another workspace on one node, on hold until that workspace admits it.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../../helpers/workspace.js';
import { until } from '../../helpers/until.js';
import { declareChannel, rowOf } from '../../channels/scenario.js';

describe('a three-step review loop with rework, through the built CLI', () => {
  let ws: TestWorkspace;
  let sent: any;
  beforeAll(async () => {
    ws = await makeWorkspace({ real: true });
    // A node serves it, as in everyday use: commands go over its socket instead of opening the store.
    await ws.startNode();
    ws.persona('coder', { mode: 'reply' });
    ws.persona('reviewer', { mode: 'rework', arg: '1' });
    ws.persona('tester', { mode: 'reply' });
    declareChannel(ws, 'review', 'steps:\n  - role: coder\n  - role: reviewer\n    rework: coder\n  - role: tester\npasses: 3\n');
    const r = await ws.nxc(['send', '#review', '--subject', 'parser', '--json', 'Write the config parser, with tests.']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    sent = r.json;
    expect(sent.warnings.filter((w: any) => w.class === 'tick_unscheduled')).toEqual([]);
    await ws.waitIdle(600_000);
  }, 900_000);
  afterAll(() => ws.cleanup());

  it('runs coder, reviewer (sends it back), coder again, reviewer, tester, and answers the person once', async () => {
    const status = await ws.status(true);
    const round = rowOf(status, sent.thread).round;
    expect(round).toMatchObject({ channel: 'review', state: 'answered', reason: 'answered', pass: 2, passes_used: 2 });
    expect(round.steps.map((s: any) => [s.name, s.state, s.pass])).toEqual([
      ['coder', 'answered', 2],
      ['reviewer', 'answered', 2],
      ['tester', 'answered', 2],
    ]);
    const starts = ws.agentLog().filter((e) => e.cmd === 'start').map((e) => e.role.split('/')[1]);
    expect(starts).toEqual(['coder', 'reviewer', 'coder', 'reviewer', 'tester']);
    const rework = ws.agentLog().find((e) => e.cmd === 'reply' && e.role.endsWith('/reviewer') && e.turn === 1 && e.out?.round?.pass === 2);
    expect(rework).toBeDefined();
    const view = await ws.nxc(['threads', 'show', sent.thread, '--json']);
    const results = view.json.messages.filter((m: any) => m.author === `${ws.short}/#review`);
    expect(results).toHaveLength(1);
    expect(results[0].text).toContain('approved in pass 2');
    const text = await ws.nxc(['status', '--all']);
    expect(text.stdout).toContain('#review answered (answered) · pass 2 of 3 · coder answered · reviewer answered · tester answered');
  });

  it('each turn’s transcript is on this machine, mode 600, and nxc transcript show prints it', async () => {
    const reviewer = rowOf(await ws.status(true), sent.thread).round.steps[1].session;
    const file = join(ws.root, '.nxs', 'sessions', reviewer, 'turn-1.log');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const r = await ws.nxc(['transcript', 'show', reviewer, '--turn', '1', '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json).toMatchObject({ session: reviewer, turn: 1, mode: '600' });
    expect(r.json.text).toContain('agent rework turn 1');
    expect(r.json.text).toContain('$ nxc reply --thread');
  });
});

describe('a member of another workspace, through one node', () => {
  let a: TestWorkspace;
  let b: TestWorkspace;
  beforeAll(async () => {
    [a, b] = await Promise.all([makeWorkspace({ git: false, real: true }), makeWorkspace({ git: false, real: true })]);
    await a.startNode();
    b.home = a.home;
    const reg = await b.nxs(['node', 'register', '--json']);
    expect(reg.code, reg.stdout + reg.stderr).toBe(0);
    const key = (w: TestWorkspace) => join(w.root, '.nxs', 'keys', 'workspace.pub.jwk');
    for (const [receiver, asker, name] of [[b, a, undefined], [a, b, 'bee']] as const) {
      const r = await receiver.nxs(['sync', 'trust', 'add', '--workspace', asker.id, '--key', key(asker), ...(name ? ['--name', name] : []), '--json']);
      expect(r.code, r.stdout + r.stderr).toBe(0);
    }
    b.persona('critic', { mode: 'reply', extra: 'addressable: { external: true }' });
    b.persona('secret', { mode: 'reply' }); // not addressable from other workspaces
    a.persona('coder', { mode: 'reply' });
    declareChannel(a, 'panel', 'members: [coder, bee/critic, bee/secret]\ntimeout: 1h\n');
  }, 600_000);
  afterAll(async () => {
    await Promise.all([a, b].map((w) => w?.waitIdle().catch(() => undefined)));
    await a?.stopNode();
    if (b) b.home = undefined;
    await Promise.all([a, b].map((w) => w?.cleanup()));
  });

  it('is a stamped commission on hold until admitted there; its answer completes the round here; a refusal there skips the step', async () => {
    const r = await a.nxc(['send', '#panel', '--subject', 'panel', '--json', 'thoughts?']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json.round.steps[1]).toMatchObject({ name: 'critic', address: 'bee/critic', state: 'on_hold', session: null, handle: `${b.short}/critic` });
    // A node keeps this workspace's clock: no tick_unscheduled.
    expect(r.json.warnings.filter((w: any) => w.class === 'tick_unscheduled')).toEqual([]);
    const round = await until('the round to be answered in A', async () => {
      const row = rowOf(await a.status(true), r.json.thread);
      return row?.round.state === 'answered' ? row.round : undefined;
    });
    expect(round.steps.map((s: any) => [s.name, s.state, s.handle, s.reason])).toEqual([
      ['coder', 'answered', `${a.short}/coder`, null],
      ['critic', 'answered', `${b.short}/critic`, null],
      ['secret', 'skipped', `${b.short}/secret`, 'NOT_ADDRESSABLE'],
    ]);
    expect(round.steps[1].session).toMatch(/^s-/);
    // Its session's end there reaches this board too: the member is no longer counted as at work.
    await until('the critic’s end to reach A', async () => (rowOf(await a.status(true), r.json.thread).round.steps[1].running === false ? true : undefined));
    const critic = rowOf(await b.status(true), round.steps[1].thread);
    expect(critic).toMatchObject({ state: 'answered', session: { handle: `${b.short}/critic`, depth: 1 } });
    const result = (await a.nxc(['threads', 'show', r.json.thread, '--json'])).json.messages.at(-1);
    expect(result.text).toContain(`from="${b.short}/critic"`);
  }, 600_000);
});
