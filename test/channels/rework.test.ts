// --needs-rework: a step that declares where its answer goes back to sends the work back to that step
// in new step threads; `passes:` bounds the loop and then hands the round back with the open points;
// anywhere it is not declared it is refused with REWORK_NOT_DECLARED and nothing is written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { ask, declareChannel, messagesOf, opsOf, roundOf } from './scenario.js';

const LOOP = 'steps:\n  - role: coder\n  - role: reviewer\n    rework: coder\n  - role: tester\n';

describe('a three-step review loop with rework', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('coder', { mode: 'reply' });
    ws.persona('reviewer', { mode: 'rework', arg: '1' });
    ws.persona('nitpicker', { mode: 'rework', arg: '99' });
    ws.persona('tester', { mode: 'reply' });
    ws.persona('member', { mode: 'try-rework' });
    ws.persona('direct', { mode: 'try-rework' });
    declareChannel(ws, 'review', LOOP);
    declareChannel(ws, 'strict', 'steps:\n  - role: coder\n  - role: nitpicker\n    rework: coder\npasses: 2\n');
    declareChannel(ws, 'panel', 'members: [member]\n');
    declareChannel(ws, 'flat', 'steps:\n  - role: coder\n  - role: member\n');
  });
  afterAll(() => ws.cleanup());

  it('sends the work back to the coder in a new thread, and the second pass goes through to the tester', async () => {
    const sent = await ask(ws, 'review', 'write the parser');
    await ws.waitIdle();
    const round = await roundOf(ws, sent.thread);
    expect(round).toMatchObject({ state: 'answered', reason: 'answered', pass: 2, passes_used: 2, passes_limit: 3 });
    expect(round.steps.map((s: any) => [s.name, s.state, s.pass])).toEqual([
      ['coder', 'answered', 2],
      ['reviewer', 'answered', 2],
      ['tester', 'answered', 2],
    ]);
    const started = (await opsOf(ws, 'step.started')).filter((o) => o.thread === sent.thread).map((o) => [o.body.pass, o.body.step, o.body.thread]);
    expect(started.map(([p, s]) => [p, s])).toEqual([
      [1, 0],
      [1, 1],
      [2, 0],
      [2, 1],
      [2, 2],
    ]);
    expect(new Set(started.map(([, , t]) => t)).size).toBe(5);
    const reworked = (await opsOf(ws, 'round.reworked')).filter((o) => o.thread === sent.thread);
    expect(reworked.map((o) => o.body)).toMatchObject([{ pass: 2, from: { pass: 1, step: 1 }, to_step: 0 }]);
    // The coder's second brief carries the reviewer's reason.
    const brief = (await messagesOf(ws, round.steps[0].thread))[0];
    expect(brief.text).toContain('Sent back for rework');
    expect(brief.text).toContain('the edge case is missing (seen in pass 1)');
    // The reviewer's first answer is an ordinary discharge of its thread, recorded on the board as needs_rework.
    const first = (await opsOf(ws, 'step.answered')).find((o) => o.thread === sent.thread && o.body.pass === 1 && o.body.step === 1);
    expect(first.body.outcome).toBe('needs_rework');
  });

  it('hands the round back when the pass limit runs out, carrying every rework reason as open points', async () => {
    const sent = await ask(ws, 'strict', 'write the lexer');
    await ws.waitIdle();
    const round = await roundOf(ws, sent.thread);
    expect(round).toMatchObject({ state: 'escalated', reason: 'pass_limit', passes_used: 2, passes_limit: 2, holds_hand_back: true });
    const result = (await messagesOf(ws, sent.thread)).at(-1);
    expect(result.effect).toBe('escalate');
    expect(result.text).toContain('Open points');
    expect(result.text).toContain('seen in pass 1');
    expect(result.text).toContain('seen in pass 2');
    expect((await opsOf(ws, 'step.started')).filter((o) => o.thread === sent.thread)).toHaveLength(4);
  });

  it('refuses --needs-rework on a fan-out member, on a step without rework:, and on a plain thread, and writes nothing', async () => {
    const panel = await ask(ws, 'panel', 'is it ok?');
    const flat = await ask(ws, 'flat', 'build it');
    const direct = await ws.nxc(['send', 'direct', '--subject', 'd', '--json', 'judge this']);
    expect(direct.code).toBe(0);
    await ws.waitIdle();
    const tries = ws.agentLog().filter((e) => e.cmd === 'reply' && e.code === 2);
    expect(tries).toHaveLength(3);
    for (const t of tries) expect(t.out.error.code).toBe('REWORK_NOT_DECLARED');
    // Each refused call wrote nothing: the steps answered plainly afterwards.
    for (const sent of [panel, flat]) expect(await roundOf(ws, sent.thread)).toMatchObject({ state: 'answered', reason: 'answered' });
    const messages = await messagesOf(ws, direct.json.thread);
    expect(messages.map((m: any) => m.text)).toEqual(['judge this', 'answered after all']);
  });

  it('--needs-rework together with --escalate is a usage error', async () => {
    const sent = await ask(ws, 'panel', 'again?');
    await ws.waitIdle();
    const r = await ws.nxc(['reply', '--thread', sent.thread, '--needs-rework', '--escalate', '--json', 'both']);
    expect(r.code).toBe(2);
    expect(r.json.error.code).toBe('USAGE');
  });
});
