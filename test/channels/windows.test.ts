// Windows: each step's timeout is its window, recorded when the step starts. Lapsed unanswered, the round
// goes on without it (step_unanswered names the step); a step whose start failed is step_skipped with
// its reason; with no node keeping the clock, tick_unscheduled covers the window, and the recorded
// deadline is honoured by whatever tick comes later. The test moves the clock; it never waits a window out.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { ask, declareChannel, messagesOf, opsOf, roundOf } from './scenario.js';

const ELSEWHERE = 'zzzzzzzzzzzzzzzzzzzzzzzzzz'; // a workspace nobody here serves

describe('windows', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('sloth', { mode: 'hang' });
    ws.persona('coder', { mode: 'reply' });
    declareChannel(ws, 'timed', 'steps:\n  - role: sloth\n    timeout: 5m\n  - role: coder\n');
    declareChannel(ws, 'wide', `members: [${ELSEWHERE}/critic, coder]\ntimeout: 10m\n`);
    declareChannel(ws, 'ghosted', 'steps:\n  - role: ghost\n  - role: coder\n');
  });
  afterAll(() => ws.cleanup());

  let timed: any;
  it('records each step’s window and deadline when it starts, and warns tick_unscheduled when no node keeps the clock', async () => {
    timed = await ask(ws, 'timed', 'take your time');
    const sloth = timed.round.steps[0];
    expect(sloth).toMatchObject({ name: 'sloth', state: 'running', window_ms: 300_000 });
    const started = (await opsOf(ws, 'step.started')).find((o) => o.body.thread === sloth.thread);
    expect(Date.parse(sloth.deadline)).toBe(Date.parse(started.body.started_at) + 300_000);
    expect(timed.round.next_deadline).toBe(sloth.deadline);
    expect(timed.warnings).toContainEqual(expect.objectContaining({ class: 'tick_unscheduled', reason: 'not_registered', round: timed.thread, step: 'sloth' }));
    const byHand = await ws.nxc(['tick', '--thread', timed.thread, '--json']);
    expect(byHand.json.warnings).toContainEqual(expect.objectContaining({ class: 'tick_unscheduled', round: timed.thread }));
  });

  it('when the window lapses unanswered the round goes on without the step, and step_unanswered names it', async () => {
    ws.advance(5 * 60_000 + 1_000);
    await ws.waitIdle();
    const round = await roundOf(ws, timed.thread);
    expect(round).toMatchObject({ state: 'answered', reason: 'answered' });
    expect(round.steps.map((s: any) => [s.name, s.state])).toEqual([
      ['sloth', 'lapsed'],
      ['coder', 'answered'],
    ]);
    const done = JSON.parse(readFileSync(join(ws.root, '.nxs', 'sessions', round.steps[0].session, 'turn-1.done'), 'utf8'));
    expect(done.warnings).toContainEqual(expect.objectContaining({ class: 'step_unanswered', round: timed.thread, step: 'sloth' }));
    const result = (await messagesOf(ws, timed.thread)).at(-1);
    expect(result.text).toContain('step "sloth"');
    expect(result.text).toContain('its window of 5 min ran out');
  });

  it('a member of another workspace is a stamped commission on hold until admitted, and a later tick honours its recorded deadline', async () => {
    const sent = await ask(ws, 'wide', 'have a look');
    expect(sent.round.steps[0]).toMatchObject({ name: 'critic', address: `${ELSEWHERE}/critic`, state: 'on_hold', session: null, handle: 'zzzz/critic', window_ms: 600_000 });
    const view = await ws.nxc(['threads', 'show', sent.round.steps[0].thread, '--json']);
    expect(view.json.thread).toMatchObject({ to: 'zzzz/critic', opener: 'alice', state: 'open', step: { name: 'critic', pass: 1 } });
    const opened = await ws.withStore(async (s) => (await s.pg.query<any>(`select body from ops where kind = 'thread.opened' and thread = $1`, [sent.round.steps[0].thread])).rows[0].body);
    expect(opened.target).toEqual({ kind: 'remote', workspace: ELSEWHERE, role: 'critic', handle: 'zzzz/critic' });
    expect(typeof opened.stamp).toBe('string');
    await ws.waitIdle();
    expect((await roundOf(ws, sent.thread)).steps.map((s: any) => s.state)).toEqual(['on_hold', 'answered']);

    ws.advance(10 * 60_000 + 1_000);
    const tick = await ws.nxc(['tick', '--json']);
    // step_unanswered: the tick did its work, and a trigger failed: exit 3.
    expect(tick.code, tick.stdout + tick.stderr).toBe(3);
    expect(tick.json.warnings).toContainEqual(expect.objectContaining({ class: 'step_unanswered', round: sent.thread, step: 'critic' }));
    await ws.waitIdle();
    const round = await roundOf(ws, sent.thread);
    expect(round).toMatchObject({ state: 'answered', reason: 'answered', next_deadline: null });
    expect(round.steps.map((s: any) => s.state)).toEqual(['lapsed', 'answered']);
  });

  it('a step whose start failed is step_skipped with its reason, and the round goes on', async () => {
    const sent = await ask(ws, 'ghosted', 'anyone?');
    expect(sent.warnings).toContainEqual(expect.objectContaining({ class: 'step_skipped', reason: 'persona_missing', round: sent.thread, step: 'ghost' }));
    expect(sent.woke).toMatchObject({ handle: `${ws.short}/coder` });
    await ws.waitIdle();
    const round = await roundOf(ws, sent.thread);
    expect(round.steps.map((s: any) => [s.name, s.state, s.reason])).toEqual([
      ['ghost', 'skipped', 'persona_missing'],
      ['coder', 'answered', null],
    ]);
    expect(round).toMatchObject({ state: 'answered' });
  });
});
