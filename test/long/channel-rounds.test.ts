// A hundred channel rounds in one operation (301 turns): the requester's depth never creeps. Long by
// nature, so it runs in `npm test` and not in `npm run test:fast`.
import { afterEach, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { declareChannel, opsOf } from '../channels/scenario.js';

let ws: TestWorkspace | undefined;
afterEach(async () => {
  await ws?.cleanup();
  ws = undefined;
});

describe('an orchestrator asking a channel round after round', () => {
  it('100 rounds, depth unchanged: the orchestrator stays at depth 1 and every step opens at depth 2', async () => {
    const w = (ws = await makeWorkspace());
    w.persona('orchestrator', { mode: 'rounds', arg: '#review:100' });
    w.persona('owner', { mode: 'reply' });
    w.persona('coder', { mode: 'reply' });
    declareChannel(w, 'review', 'members: [coder]\nowner: owner\n');
    const sent = await w.nxc(['send', 'orchestrator', '--subject', 'a hundred rounds', '--json', 'ask #review a hundred times']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    // A hundred rounds of three turns each: on a busy machine this takes minutes, never a window.
    await w.waitIdle(1_500_000);
    const log = w.agentLog();
    const orch = log.filter((e) => e.role === `${w.short}/orchestrator` && e.cmd === 'start');
    expect(orch).toHaveLength(101);
    expect(new Set(orch.map((e) => e.hop))).toEqual(new Set(['1']));
    const sends = log.filter((e) => e.role === `${w.short}/orchestrator` && e.cmd === 'send');
    expect(sends).toHaveLength(100);
    for (const s of sends) expect(s, JSON.stringify(s)).toMatchObject({ code: 0, out: { warnings: [] } });
    // 301 turns (the orchestrator's 101, two steps a round): real work, well inside the default operation budget.
    const op = (await w.status(true)).operations.find((o: any) => o.operation === sent.json.operation);
    expect(op.turns).toEqual({ used: 301, budget: 500 });
    const answer = log.find((e) => e.role === `${w.short}/orchestrator` && e.cmd === 'reply');
    expect(answer).toMatchObject({ code: 0, turn: 101 });
    // The store agrees: 200 steps (member and owner of each round), all one hop below the orchestrator.
    const steps = await opsOf(w, 'step.started');
    expect(steps).toHaveLength(200);
    expect(new Set(steps.map((s) => s.body.depth))).toEqual(new Set([2]));
    const completed = await opsOf(w, 'round.completed');
    expect(completed).toHaveLength(100);
    for (const c of completed) expect(c.body.reason).toBe('folded');
  }, 1_800_000);
});
