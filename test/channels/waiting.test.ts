// Waiting: a requester that asked a channel and ends its turn without replying is waiting
// (waiting_on_sub_round); when the round completes it is started again with the result; when it cannot
// be told, the warning is requester_not_woken.
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { declareChannel, promptOf, roundOf, rowOf, waitFor } from './scenario.js';

describe('a session waiting on its own round', () => {
  let ws: TestWorkspace;
  const gates: Record<string, string> = {};
  beforeAll(async () => {
    ws = await makeWorkspace();
    for (const g of ['a', 'b']) gates[g] = join(ws.root, '..', `gate-${g}`);
    ws.persona('orchestrator', { mode: 'wait', arg: '#review' });
    ws.persona('forgetful', { mode: 'wait', arg: '#slow' });
    ws.persona('coder', { mode: 'gate', arg: gates['a']! });
    ws.persona('slowpoke', { mode: 'gate', arg: gates['b']! });
    declareChannel(ws, 'review', 'steps:\n  - role: coder\n');
    declareChannel(ws, 'slow', 'members: [slowpoke]\n');
  });
  afterAll(async () => {
    for (const g of Object.values(gates)) writeFileSync(g, '');
    await ws.cleanup();
  });

  const firstTurnOver = (session: string) =>
    waitFor('the requester to end its first turn', () => existsSync(join(ws.root, '.nxs', 'sessions', session, 'turn-1.done')));

  it('ends its turn without replying and is waiting_on_sub_round, its round open below it', async () => {
    const sent = await ws.nxc(['send', 'orchestrator', '--subject', 'feature', '--json', 'build the feature']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    const orchestrator = sent.json.woke.session;
    await firstTurnOver(orchestrator);
    const status = await ws.status(true);
    expect(rowOf(status, sent.json.thread)).toMatchObject({ state: 'open', waiting_on_sub_round: true, messages: 1, session: { depth: 1, turn: 1, running: false } });
    const round = status.operations.flatMap((o: any) => o.threads).find((t: any) => t.round !== undefined);
    expect(round).toMatchObject({ parent: sent.json.thread, opener: `${ws.short}/orchestrator`, to: `${ws.short}/#review`, state: 'open' });
    expect(round.round).toMatchObject({ requester: `${ws.short}/orchestrator`, state: 'running' });
    expect(round.round.steps[0]).toMatchObject({ state: 'running', handle: `${ws.short}/coder` });

    // A plain reply from the requester while its round is open is refused, as for any round of its own.
    const plain = await ws.nxc(['reply', '--thread', sent.json.thread, '--json', 'premature'], { env: { NXC_SESSION: orchestrator } });
    expect(plain.json.error.code).toBe('SUB_ROUND_OPEN');

    writeFileSync(gates['a']!, '');
    await ws.waitIdle();
    const after = await ws.status(true);
    expect(rowOf(after, sent.json.thread)).toMatchObject({ state: 'answered', waiting_on_sub_round: false, answered_by: `${ws.short}/orchestrator`, session: { id: orchestrator, depth: 1, turn: 2 } });
    const prompt = promptOf(ws, orchestrator, 2);
    expect(prompt).toContain(`to ${ws.short}/#review: answered by ${ws.short}/#review`);
    expect(prompt).toContain('through the gate');
    expect((await roundOf(ws, round.thread)).state).toBe('answered');
  });

  it('a requester that cannot be started when the board completes: requester_not_woken', async () => {
    const sent = await ws.nxc(['send', 'forgetful', '--subject', 'x', '--json', 'ask #slow']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    const forgetful = sent.json.woke.session;
    await firstTurnOver(forgetful);
    rmSync(join(ws.root, '.nxs-personas', 'forgetful.yaml'));
    writeFileSync(gates['b']!, '');
    await ws.waitIdle();
    const answer = ws.agentLog().find((e) => e.role === `${ws.short}/slowpoke` && e.cmd === 'reply');
    expect(answer.code).toBe(3);
    expect(answer.out.warnings).toContainEqual(expect.objectContaining({ class: 'requester_not_woken', session: forgetful }));
    const status = await ws.status(true);
    expect(rowOf(status, sent.json.thread)).toMatchObject({ state: 'open', session: { turn: 1, running: false } });
  });
});
