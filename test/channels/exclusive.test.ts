// `working_tree: exclusive` and `timeout:` are declared on a channel as on a persona; the working-copy
// lease's door into a round (the round engine's `gate`) holds a step, which holds the later ones, until the
// lease promotes the claim and the round is settled again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRounds, loadRound, roundStatus, type Board, type StepGate, type StepRef } from '../../node-agent/capabilities/channels/index.js';
import { findWorkspace } from '../../node-agent/adapters/workspace/index.js';
import { hostFor, realDeps } from '../../node-agent/host/index.js';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { declareChannel, opsOf } from './scenario.js';

describe('an exclusive channel behind the working-copy lease', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('coder', { mode: 'reply' });
    ws.persona('reviewer', { mode: 'reply' });
    declareChannel(ws, 'review', 'steps:\n  - role: coder\n  - role: reviewer\nworking_tree: exclusive\ntimeout: 20m\n');
  });
  afterAll(() => ws.cleanup());

  it('records the declared exclusivity and window in the round, and asks the lease before each step starts', async () => {
    const asked: Array<{ step: string; exclusive: boolean }> = [];
    let queued = true;
    const gate: StepGate = (_b: Board, s: StepRef, exclusive: boolean) => {
      asked.push({ step: s.name, exclusive });
      return queued ? { reason: 'lease_queued', message: 'queued behind the working-copy lease' } : null;
    };
    const launched: string[] = [];
    const status = await ws.withStore(async (store) => {
      const deps = realDeps(findWorkspace(ws.root, { NEXUS_HOME: process.env['NEXUS_HOME'] }), store.db, {
        now: ws.clock.now,
        // Nothing runs: the test looks at what was started, not at what the sessions do.
        launch: async (t) => (launched.push(t.spec.role), { sidecarPid: 1, runtimePid: 1, error: null }),
        alive: () => true,
      });
      const rounds = createRounds(hostFor(deps), { gate });
      const sent = await rounds.send({ to: '#review', subject: 'lease', text: 'change the build', caller: { actor: 'alice', session: null, hop: null } }, 'review');
      expect(sent.round!.steps.map((s) => [s.name, s.state, s.reason])).toEqual([
        ['coder', 'held', 'lease_queued'],
        ['reviewer', 'pending', null],
      ]);
      expect(launched).toEqual([]);
      // Settling again while the lease still queues changes nothing.
      await rounds.settle([sent.thread]);
      // The lease promotes the claim: the round is settled again and starts what nextStartable names.
      queued = false;
      const moved = await rounds.settle([sent.thread]);
      expect(moved.woke.map((w) => w.role)).toEqual(['coder']);
      // Read the board here: the sessions started above never run, and a status would reap them.
      return roundStatus((await loadRound(store.db, sent.thread))!.board);
    });
    expect(asked.every((a) => a.exclusive)).toBe(true);
    expect(launched).toEqual(['coder']);
    expect(status.steps.map((s: any) => [s.name, s.state, s.window_ms])).toEqual([
      ['coder', 'running', 1_200_000],
      ['reviewer', 'pending', null],
    ]);
    const opened = (await opsOf(ws, 'round.opened'))[0];
    expect(opened.body.channel).toMatchObject({ working_tree: 'exclusive', timeout_ms: 1_200_000 });
    expect((await opsOf(ws, 'step.held')).map((o) => o.body.step)).toEqual([0]);
  });
});
