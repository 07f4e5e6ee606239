// Where two rules meet in a round or a fan-in: an answer sent while its requester is still finishing the turn that
// asked is delivered (the requester is started again with it), and a step whose window lapses is reported as
// step_unanswered to whoever drove the lapse and on the round's status, with a short window said in seconds.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { ask, declareChannel, messagesOf, roundOf, waitFor } from '../channels/scenario.js';

describe('an answer that arrives while its requester is still in the turn that asked', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
  });
  afterAll(async () => {
    writeFileSync(join(ws.root, '..', 'boss-gate'), '');
    await ws.cleanup();
  });

  it('is delivered: the child\'s reply exits 0 with no warning, and the requester is started again with it', async () => {
    const gate = join(ws.root, '..', 'boss-gate');
    ws.persona('boss', { mode: 'steps', arg: `send:child+gate:${gate}|reply` });
    ws.persona('child', { mode: 'reply' });
    const sent = await ws.nxc(['send', 'boss', '--subject', 'fan in', '--json', 'ask the child']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    await waitFor('the child to reply', () => ws.agentLog().some((e) => e.cmd === 'reply' && e.role === `${ws.short}/child`));
    writeFileSync(gate, '');
    await ws.waitIdle();
    await waitFor('the boss to be started again', () => ws.agentLog().some((e) => e.cmd === 'start' && e.role === `${ws.short}/boss` && e.turn === 2));
    await ws.waitIdle();
    const reply = ws.agentLog().find((e) => e.cmd === 'reply' && e.role === `${ws.short}/child`);
    expect(reply.out?.warnings).toEqual([]);
    expect(reply.code).toBe(0);
  });
});

describe('a step whose window lapses', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('sloth', { mode: 'hang' });
    ws.persona('coder', { mode: 'reply' });
    declareChannel(ws, 'quick', 'steps:\n  - role: sloth\n    timeout: 20s\n  - role: coder\n');
  });
  afterAll(() => ws.cleanup());

  it('is reported as step_unanswered by the tick that drove the lapse, on the round\'s status, and its window of 20 s is said in seconds', async () => {
    const sent = await ask(ws, 'quick', 'quick now');
    ws.clock.advance(21_000);
    const tick = await ws.nxc(['tick', '--thread', sent.thread, '--json']);
    expect(tick.json.warnings).toContainEqual(expect.objectContaining({ class: 'step_unanswered', round: sent.thread, step: 'sloth' }));
    await ws.waitIdle();
    const round = await roundOf(ws, sent.thread);
    expect(round.steps.map((s: any) => [s.name, s.state])).toEqual([
      ['sloth', 'lapsed'],
      ['coder', 'answered'],
    ]);
    expect(JSON.stringify(round)).toContain('step_unanswered');
    const result = (await messagesOf(ws, sent.thread)).at(-1);
    expect(result.text).toContain('its window of 20 s ran out');
    expect(result.text).not.toContain('0 min');
  });
});
