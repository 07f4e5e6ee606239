// A fan-out round starts its members together, at most eight sessions at once (the rest wait their
// turn), and reports their answers in the members' declared order, whatever order they finished in.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { ask, declareChannel, messagesOf, opsOf, roundOf, waitFor } from './scenario.js';

const MEMBERS = Array.from({ length: 10 }, (_, i) => `m${i}`);

describe('a fan-out of ten members', () => {
  let ws: TestWorkspace;
  let sent: any;
  const gate = (m: string) => join(ws.root, '..', `gate-${m}`);
  beforeAll(async () => {
    ws = await makeWorkspace();
    for (const m of MEMBERS) ws.persona(m, { mode: 'gate', arg: join(ws.root, '..', `gate-${m}`) });
    declareChannel(ws, 'panel', `members: [${MEMBERS.join(', ')}]\n`);
    sent = await ask(ws, 'panel', 'what do you think?');
  });
  afterAll(async () => {
    for (const m of MEMBERS) writeFileSync(gate(m), '');
    await ws.cleanup();
  });

  it('starts eight members together and keeps the other two waiting their turn', () => {
    expect(sent.round.flow).toBe('fanout');
    expect(sent.round.steps.map((s: any) => s.state)).toEqual([...Array(8).fill('running'), 'pending', 'pending']);
    expect(ws.sessionDirs()).toHaveLength(8);
  });

  async function finish(m: string): Promise<void> {
    writeFileSync(gate(m), '');
    await waitFor(`${m} to answer and end`, async () => {
      const s = (await roundOf(ws, sent.thread)).steps.find((x: any) => x.name === m);
      return s.state === 'answered' && !s.running;
    });
  }

  it('starts a waiting member as soon as a slot is free, never more than eight at once', async () => {
    await finish('m7');
    await waitFor('m8 to start', async () => (await roundOf(ws, sent.thread)).steps[8].state === 'running');
    expect((await roundOf(ws, sent.thread)).steps[9].state).toBe('pending');
    await finish('m8');
    await finish('m9');
    for (const m of ['m6', 'm5', 'm4', 'm3', 'm2', 'm1', 'm0']) await finish(m);
    await ws.waitIdle();
    // Replay the log: sessions of the round in flight (turn started, not ended) never exceed eight.
    let flying = 0;
    let most = 0;
    for (const op of await opsOf(ws, 'session.turn_started', 'session.turn_ended')) {
      flying += op.kind === 'session.turn_started' ? 1 : -1;
      most = Math.max(most, flying);
    }
    expect(most).toBe(8);
  });

  it('reports the answers in the declared order, though they finished m7, m8, m9, m6 ... m0', async () => {
    const round = await roundOf(ws, sent.thread);
    expect(round).toMatchObject({ state: 'answered', reason: 'answered' });
    const results = (await messagesOf(ws, sent.thread)).filter((m: any) => m.author === `${ws.short}/#panel`);
    expect(results).toHaveLength(1);
    const order = [...results[0].text.matchAll(/from="[a-z0-9]{4}\/(m\d)"/g)].map((m) => m[1]);
    expect(order).toEqual(MEMBERS);
    const answered = (await opsOf(ws, 'step.answered')).map((o) => MEMBERS[o.body.step]);
    expect(answered).toEqual(['m7', 'm8', 'm9', 'm6', 'm5', 'm4', 'm3', 'm2', 'm1', 'm0']);
  });
});
