// A running round is read from the rounds table once, not by every step of every command that touches it:
// the projection keeps the rows it writes, per open store, and a transaction's own until it commits.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { declareChannel, opsOf } from './scenario.js';
import { preparedStatements, statementsRun } from '../helpers/statements-run.js';

describe('an orchestrator asking a channel five times', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('orchestrator', { mode: 'rounds', arg: '#review:5' });
    ws.persona('owner', { mode: 'reply' });
    ws.persona('coder', { mode: 'reply' });
    declareChannel(ws, 'review', 'members: [coder]\nowner: owner\n');
  });
  afterAll(() => ws.cleanup());

  it('reads each round\'s row at most once while its steps run, and every round completes as before', async () => {
    // Every statement reaches PostgreSQL through execProtocolRawSync, in a transaction or not.
    const before = await ws.withStore((store) => preparedStatements(store.pg));
    const sent = await ws.withStore(async (store) => vi.spyOn(store.pg, 'execProtocolRawSync'));
    try {
      const r = await ws.nxc(['send', 'orchestrator', '--subject', 'five rounds', '--json', 'ask #review five times']);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      await ws.waitIdle();
      const texts = statementsRun(sent.mock.calls, before);
      const roundReads = texts.filter((t) => /from "rounds" where "rounds"\."id" (=|in)/.test(t)).length;
      // Each round's board is written as its ops are stored (a row per op), and read by the policy, the
      // driver and the follower of each step: seventeen reads a round before they were kept.
      expect(texts.filter((t) => t.includes('insert into "rounds"')).length).toBeGreaterThanOrEqual(5 * 4);
      expect(roundReads).toBeLessThanOrEqual(5);
    } finally {
      sent.mockRestore();
    }
    const completed = await opsOf(ws, 'round.completed');
    expect(completed).toHaveLength(5);
    for (const c of completed) expect(c.body.reason).toBe('folded');
    const log = ws.agentLog();
    expect(log.filter((e) => e.role === `${ws.short}/orchestrator` && e.cmd === 'send').every((e) => e.code === 0)).toBe(true);
    expect(log.find((e) => e.role === `${ws.short}/orchestrator` && e.cmd === 'reply')).toMatchObject({ code: 0, turn: 6 });
  });
});
