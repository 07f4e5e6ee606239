// Depth: a round's steps open one hop below the requester; the result brings the requester back at the
// depth it had, so an orchestrator asking a channel over and over never creeps toward the cap.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { declareChannel, opsOf } from './scenario.js';

describe('an orchestrator asking a channel round after round', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('orchestrator', { mode: 'rounds', arg: '#review:100' });
    ws.persona('owner', { mode: 'reply' });
    ws.persona('coder', { mode: 'reply' });
    declareChannel(ws, 'review', 'members: [coder]\nowner: owner\n');
  });
  afterAll(() => ws.cleanup());

  it('100 rounds, depth unchanged: the orchestrator stays at depth 1 and every step opens at depth 2', async () => {
    const sent = await ws.nxc(['send', 'orchestrator', '--subject', 'a hundred rounds', '--json', 'ask #review a hundred times']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    // A hundred rounds of three turns each: on a busy machine this takes minutes, never a window.
    await ws.waitIdle(1_500_000);
    const log = ws.agentLog();
    const orch = log.filter((e) => e.role === `${ws.short}/orchestrator` && e.cmd === 'start');
    expect(orch).toHaveLength(101);
    expect(new Set(orch.map((e) => e.hop))).toEqual(new Set(['1']));
    const sends = log.filter((e) => e.role === `${ws.short}/orchestrator` && e.cmd === 'send');
    expect(sends).toHaveLength(100);
    for (const s of sends) expect(s, JSON.stringify(s)).toMatchObject({ code: 0, out: { warnings: [] } });
    // 301 turns (the orchestrator's 101, two steps a round): real work, well inside the default operation budget.
    const op = (await ws.status(true)).operations.find((o: any) => o.operation === sent.json.operation);
    expect(op.turns).toEqual({ used: 301, budget: 500 });
    const answer = log.find((e) => e.role === `${ws.short}/orchestrator` && e.cmd === 'reply');
    expect(answer).toMatchObject({ code: 0, turn: 101 });
    // The store agrees: 200 steps (member and owner of each round), all one hop below the orchestrator.
    const steps = await opsOf(ws, 'step.started');
    expect(steps).toHaveLength(200);
    expect(new Set(steps.map((s) => s.body.depth))).toEqual(new Set([2]));
    const completed = await opsOf(ws, 'round.completed');
    expect(completed).toHaveLength(100);
    for (const c of completed) expect(c.body.reason).toBe('folded');
  }, 1_800_000);

  it('a requester at the cap is refused before anything is written', async () => {
    const before = (await opsOf(ws, 'round.opened')).length;
    const r = await ws.nxc(['send', '#review', '--subject', 's', '--json', 'too deep'], { env: { NXC_HOP: '32' } });
    expect(r.code).toBe(2);
    expect(r.json.error.code).toBe('DEPTH_EXCEEDED');
    expect((await opsOf(ws, 'round.opened')).length).toBe(before);
    expect((await opsOf(ws, 'thread.opened')).filter((o) => o.body.target.kind === 'channel')).toHaveLength(before);
  });
});
