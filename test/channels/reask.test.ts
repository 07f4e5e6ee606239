// The requester replying on a round's own thread asks again: an ordered run restarts in new step
// threads, an escalation inside the round counts as answered from above, and the round is declared
// anew from the channel file as it reads now. Anyone else's message there only posts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldBoard, holdsForHandBack, type BoardOp } from '../../node-agent/capabilities/channels/index.js';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { ask, declareChannel, messagesOf, opsOf, roundOf, rowOf } from './scenario.js';

describe('asking a round again', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('lead', { mode: 'reask', arg: '#check' });
    ws.persona('coder', { mode: 'reply' });
    ws.persona('critic', { mode: 'escalate' });
    ws.persona('tester', { mode: 'reply' });
    declareChannel(ws, 'check', 'steps:\n  - role: coder\n  - role: critic\n  - role: tester\n');
    declareChannel(ws, 'redo', 'steps:\n  - role: coder\n');
  });
  afterAll(() => ws.cleanup());

  it('a requester session answering the hand-back in the round thread restarts the run in new step threads', async () => {
    const sent = await ws.nxc(['send', 'lead', '--subject', 'lead it', '--json', 'get it checked']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    await ws.waitIdle();
    const lead = sent.json.woke.session;
    const roundRow = (await ws.status(true)).operations.flatMap((o: any) => o.threads).find((t: any) => t.round !== undefined);
    const round = await roundOf(ws, roundRow.thread);
    expect(round).toMatchObject({ state: 'escalated', reason: 'escalation', pass: 2, passes_used: 1 });
    // A hand-back in an ordered run goes up at once, never on to the next step.
    expect(round.steps.map((s: any) => [s.name, s.state])).toEqual([
      ['coder', 'answered'],
      ['critic', 'escalated'],
      ['tester', 'not_reached'],
    ]);
    const started = (await opsOf(ws, 'step.started')).map((o) => [o.body.pass, o.body.step, o.body.thread]);
    expect(started.map(([p, s]) => [p, s])).toEqual([
      [1, 0],
      [1, 1],
      [2, 0],
      [2, 1],
    ]);
    expect(new Set(started.map(([, , t]) => t)).size).toBe(4);
    // The ask again is the requester's message in the round's thread; nothing is written in the escalated step's thread.
    const inRound = await messagesOf(ws, roundRow.thread);
    expect(inRound.map((m: any) => [m.author, m.effect])).toEqual([
      [`${ws.short}/lead`, 'commission'],
      [`${ws.short}/#check`, 'escalate'],
      [`${ws.short}/lead`, 'reopen'],
      [`${ws.short}/#check`, 'escalate'],
    ]);
    const firstCritic = started.find(([p, s]) => p === 1 && s === 1)![2];
    expect((await messagesOf(ws, firstCritic)).map((m: any) => m.effect)).toEqual(['commission', 'escalate']);
    // Folded up to the ask again, the board no longer holds for the first hand-back: answered from above.
    const ops = (await ws.withStore(async (s) => (await s.pg.query<any>(`select * from ops where thread = $1 and kind like 'round.%' or thread = $1 and kind like 'step.%' order by lamport`, [roundRow.thread])).rows)).map(
      (r: any) => ({ kind: r.kind, body: r.body, workspace: r.workspace, id: r.id, lamport: Number(r.lamport) }) as BoardOp,
    );
    const upToReask = ops.slice(0, ops.findIndex((o) => o.kind === 'round.reasked') + 1);
    expect(holdsForHandBack(foldBoard(upToReask.slice(0, -1))!)).toBe(true);
    expect(holdsForHandBack(foldBoard(upToReask)!)).toBe(false);
    // The requester ran three turns, all at its own depth, and answered after the second result.
    const turns = ws.agentLog().filter((e) => e.session === lead && e.cmd === 'start');
    expect(turns.map((e) => [e.turn, e.hop])).toEqual([
      [1, '1'],
      [2, '1'],
      [3, '1'],
    ]);
    expect(rowOf(await ws.status(true), sent.json.thread)).toMatchObject({ state: 'answered', answered_by: `${ws.short}/lead` });
  });

  it('answering the hand-back re-declares the round: the run follows the channel as it reads now', async () => {
    const sent = await ask(ws, 'redo', 'build it');
    await ws.waitIdle();
    const first = await roundOf(ws, sent.thread);
    expect(first.steps.map((s: any) => s.name)).toEqual(['coder']);

    // Somebody else's message in the round's thread posts and moves nothing.
    const bob = await ws.nxc(['reply', '--thread', sent.thread, '--json', 'looks odd to me'], { env: { NXC_ACTOR: 'bob' } });
    expect(bob.code, bob.stdout + bob.stderr).toBe(0);
    expect(bob.json).toMatchObject({ woke: null });
    expect((await roundOf(ws, sent.thread)).pass).toBe(1);

    declareChannel(ws, 'redo', 'steps:\n  - role: coder\n  - role: tester\n');
    const again = await ws.nxc(['reply', '--thread', sent.thread, '--json', 'and test it this time']);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.json.round).toMatchObject({ pass: 2, state: 'running' });
    expect(again.json.round.steps.map((s: any) => s.name)).toEqual(['coder', 'tester']);
    await ws.waitIdle();
    const after = await roundOf(ws, sent.thread);
    expect(after).toMatchObject({ state: 'answered', pass: 2 });
    expect(after.steps.map((s: any) => [s.name, s.state, s.pass])).toEqual([
      ['coder', 'answered', 2],
      ['tester', 'answered', 2],
    ]);
    const opened = (await opsOf(ws, 'round.opened')).find((o) => o.thread === sent.thread);
    const reasked = (await opsOf(ws, 'round.reasked')).find((o) => o.thread === sent.thread);
    expect(reasked.body.channel.hash).not.toBe(opened.body.channel.hash);
    expect(reasked.body.channel.steps.map((s: any) => s.name)).toEqual(['coder', 'tester']);
    const messages = await messagesOf(ws, sent.thread);
    expect(messages.map((m: any) => [m.author, m.effect])).toEqual([
      ['alice', 'commission'],
      [`${ws.short}/#redo`, 'answer'],
      ['bob', 'none'],
      ['alice', 'reopen'],
      [`${ws.short}/#redo`, 'answer'],
    ]);
  });
});
