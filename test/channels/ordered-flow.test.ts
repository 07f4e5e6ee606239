// An ordered flow (steps:) starts its steps one at a time: the later step waits until the earlier one
// answered and its session is over; two steps of one run never run side by side.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { ask, declareChannel, messagesOf, opsOf, roundOf, rowOf, waitFor } from './scenario.js';

describe('an ordered flow, in process', () => {
  let ws: TestWorkspace;
  let gate: string;
  let sent: any;
  beforeAll(async () => {
    ws = await makeWorkspace();
    gate = join(ws.root, '..', 'gate-coder');
    ws.persona('coder', { mode: 'gate', arg: gate });
    ws.persona('reviewer', { mode: 'reply' });
    ws.persona('tester', { mode: 'reply' });
    declareChannel(ws, 'review', 'steps:\n  - role: coder\n    timeout: 30m\n  - role: reviewer\n  - role: tester\n');
    sent = await ask(ws, 'review', 'add the parser');
  });
  afterAll(async () => {
    writeFileSync(gate, '');
    await ws.cleanup();
  });

  it('opens the round on its own thread and starts only the first step, one hop below the requester', async () => {
    expect(sent.woke).toMatchObject({ handle: `${ws.short}/coder`, depth: 1, turn: 1 });
    expect(sent.round).toMatchObject({ channel: 'review', flow: 'sequential', state: 'running', requester: 'alice', pass: 1 });
    expect(sent.round.steps.map((s: any) => [s.name, s.state])).toEqual([
      ['coder', 'running'],
      ['reviewer', 'pending'],
      ['tester', 'pending'],
    ]);
    const row = rowOf(await ws.status(true), sent.thread);
    expect(row).toMatchObject({ to: `${ws.short}/#review`, opener: 'alice', state: 'open', parent: null });
    const coder = rowOf(await ws.status(true), sent.round.steps[0].thread);
    expect(coder).toMatchObject({ parent: sent.thread, opener: `${ws.short}/#review`, session: { depth: 1 }, step: { round: sent.thread, name: 'coder', pass: 1 } });
  });

  it('keeps the second step waiting while the first step works', async () => {
    const round = await roundOf(ws, sent.thread);
    expect(round.steps.map((s: any) => s.state)).toEqual(['running', 'pending', 'pending']);
    expect(ws.sessionDirs()).toHaveLength(1);
  });

  it('starts each later step only after the earlier one answered and its session ended, and answers once all have', async () => {
    writeFileSync(gate, '');
    await ws.waitIdle();
    const round = await roundOf(ws, sent.thread);
    expect(round).toMatchObject({ state: 'answered', reason: 'answered' });
    expect(round.steps.map((s: any) => [s.name, s.state, s.running])).toEqual([
      ['coder', 'answered', false],
      ['reviewer', 'answered', false],
      ['tester', 'answered', false],
    ]);
    // In the log: each step's turn starts after the previous step's turn ended. Never side by side.
    const turns = await opsOf(ws, 'session.turn_started', 'session.turn_ended');
    const bySession = round.steps.map((s: any) => turns.filter((t) => t.session === s.session).map((t) => [t.kind, t.lamport]));
    for (let i = 1; i < bySession.length; i++) {
      const endedBefore = bySession[i - 1].find(([k]: [string]) => k === 'session.turn_ended')[1];
      const startedLater = bySession[i].find(([k]: [string]) => k === 'session.turn_started')[1];
      expect(startedLater).toBeGreaterThan(endedBefore);
    }
    const result = (await messagesOf(ws, sent.thread)).at(-1);
    expect(result).toMatchObject({ author: `${ws.short}/#review`, effect: 'answer' });
    expect(result.text).toContain('through the gate');
  });

  it('the second step reads the first step’s answer in its brief', async () => {
    const round = await roundOf(ws, sent.thread);
    const brief = (await messagesOf(ws, round.steps[1].thread))[0];
    expect(brief).toMatchObject({ author: `${ws.short}/#review`, effect: 'commission' });
    expect(brief.text).toContain('add the parser');
    expect(brief.text).toContain(`from="${ws.short}/coder"`);
    expect(brief.text).toContain('through the gate');
  });

  it('once answered, the round awaits the person who asked at its root', async () => {
    await waitFor('the operation to finish', async () => rowOf(await ws.status(true), sent.thread).awaiting_human === true);
    const row = rowOf(await ws.status(true), sent.thread);
    expect(row).toMatchObject({ state: 'answered', escalated: false, answered_by: `${ws.short}/#review` });
  });
});
