// The depth guard through a real node (`nxs node run`, each session a child process): an orchestrator
// commissions a coder round after round, every coder at depth 2 and the orchestrator at depth 1 on every turn.
import { afterAll, beforeAll, describe, it } from 'vitest';
import { roundAfterRound } from '../helpers/rounds.js';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';

describe('an orchestrator commissioning round after round through a node', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    // Real processes: each session is a child process whose nxc finds its depth in the environment the node gave
    // it and reaches the node over its socket, which the in-process host cannot show. Two rounds prove it;
    // the twenty rounds run in process (test/depth.test.ts).
    ws = await makeWorkspace();
    await ws.startNode();
    ws.persona('orchestrator', { mode: 'rounds', arg: 'coder:2' });
    ws.persona('coder', { mode: 'reply' });
  });
  afterAll(() => ws.cleanup());

  it('completes 2 commission-and-answer rounds with both coders at depth 2 and the orchestrator at depth 1 on every turn', { timeout: 300_000 }, () =>
    roundAfterRound(ws, 2, 270_000),
  );
});
