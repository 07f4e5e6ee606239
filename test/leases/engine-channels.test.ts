// The working-copy lease and channel rounds: a step of an exclusive channel waits for the copy like any
// exclusive commission, the steps of an ordered flow never run side by side, and the round's result
// releases the copy to whoever waits. Real git, real store, scripted sessions.
import { afterEach, describe, expect, it } from 'vitest';
import type { TestWorkspace } from '../helpers/workspace.js';
import { declareChannel } from '../channels/scenario.js';
import { exclusive, gate, leaseOf, leaseWorkspace, open, reply, send, shared, starts, until } from './engine-kit.js';

let ws: TestWorkspace;
/** An ordered review that needs the working copy to itself. */
const REVIEW = 'steps:\n  - role: coder\n  - role: reviewer\nworking_tree: exclusive\n';
afterEach(async () => {
  await ws?.cleanup();
});

describe('channel rounds under the lease', () => {
  it('a step of an exclusive channel queues behind the holder and starts once the holder has answered', async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'holder', 'gate:' + gate(ws, 'h') + '+reply');
    shared(ws, 'coder', 'reply');
    shared(ws, 'reviewer', 'reply');
    declareChannel(ws, 'review', REVIEW);
    const a = await send(ws, 'holder');
    await until('the holder to run', () => starts(ws, 'holder').length === 1);
    const r = await send(ws, '#review', 'change the build');
    // The round is posted and its first step opened, but its turn waits for the copy.
    expect(starts(ws, 'coder')).toHaveLength(0);
    expect(await leaseOf(ws, r.operation)).toMatchObject({ state: 'queued', position: 1 });
    open(gate(ws, 'h'));
    await ws.waitIdle();
    // Once the holder answered, the round took the copy under the next token and ran its steps in order.
    expect(starts(ws, 'coder').map((e) => e.lease_token)).toEqual(['2']);
    expect(starts(ws, 'reviewer').map((e) => e.lease_token)).toEqual(['2']);
    const log = ws.agentLog();
    const coderReply = log.findIndex((e) => e.cmd === 'reply' && e.role === `${ws.short}/coder`);
    const reviewerStart = log.findIndex((e) => e.cmd === 'start' && e.role === `${ws.short}/reviewer`);
    expect(reviewerStart).toBeGreaterThan(-1);
    expect(coderReply).toBeLessThan(reviewerStart);
    expect(await leaseOf(ws, a.operation)).toBeNull();
    const status = await ws.status(true);
    const round = status.operations.find((o: any) => o.operation === r.operation);
    expect(round.threads.find((t: any) => t.thread === r.thread)).toMatchObject({ state: 'answered' });
  });

  it('the round\'s result releases the copy: an exclusive commission queued behind the round starts after it', async () => {
    ws = await leaseWorkspace();
    shared(ws, 'coder', 'gate:' + gate(ws, 'c') + '+reply');
    shared(ws, 'reviewer', 'reply');
    exclusive(ws, 'rival', 'reply');
    declareChannel(ws, 'review', REVIEW);
    const r = await send(ws, '#review', 'change the build');
    await until('the first step to run', () => starts(ws, 'coder').length === 1);
    expect(starts(ws, 'coder')[0].lease_token).toBe('1');
    expect(await leaseOf(ws, r.operation)).toMatchObject({ state: 'holds', token: 1 });
    const b = await send(ws, 'rival');
    expect(b.queued).toMatchObject({ position: 1, holder: { operation: r.operation } });
    open(gate(ws, 'c'));
    await ws.waitIdle();
    const log = ws.agentLog();
    const reviewerStart = log.findIndex((e) => e.cmd === 'start' && e.role === `${ws.short}/reviewer`);
    const rivalStart = log.findIndex((e) => e.cmd === 'start' && e.role === `${ws.short}/rival`);
    expect(reviewerStart).toBeGreaterThan(-1);
    expect(rivalStart).toBeGreaterThan(reviewerStart);
    expect(starts(ws, 'rival')[0].lease_token).toBe('2');
    expect(await leaseOf(ws, r.operation)).toBeNull();
  });
});

describe('a hand-back inside an exclusive round', () => {
  it('holds the copy until the requester asks the round again, which answers it from above; the next pass\'s result releases the copy', async () => {
    ws = await leaseWorkspace();
    shared(ws, 'coder', 'reply');
    ws.persona('reviewer', { mode: 'escalate-first' });
    exclusive(ws, 'rival', 'reply');
    declareChannel(ws, 'review', REVIEW);
    const r = await send(ws, '#review', 'change the build');
    await ws.waitIdle();
    // The ordered run stopped at the reviewer's hand-back: the result goes up as an escalation, and it holds the copy.
    expect(await leaseOf(ws, r.operation)).toMatchObject({ state: 'holds', held_for_handback: r.thread });
    const b = await send(ws, 'rival');
    expect(b.queued).toMatchObject({ position: 1, holder: { operation: r.operation } });
    // The requester asks again in the round's thread: the hand-back is answered from above, and the run goes again.
    await reply(ws, r.thread, 'decided: keep the old format; go again');
    await ws.waitIdle();
    expect(starts(ws, 'reviewer')).toHaveLength(2);
    const log = ws.agentLog();
    const secondReviewer = log.filter((e) => e.cmd === 'start' && e.role === `${ws.short}/reviewer`)[1];
    const rivalStart = log.findIndex((e) => e.cmd === 'start' && e.role === `${ws.short}/rival`);
    expect(rivalStart).toBeGreaterThan(log.indexOf(secondReviewer));
    expect(starts(ws, 'rival')[0].lease_token).toBe('2');
    expect(await leaseOf(ws, r.operation)).toBeNull();
  });
});

describe('withdrawing an operation with a round running', () => {
  it('discharges the round: its running step is stopped, no later step starts, and the copy goes to whoever waits', async () => {
    ws = await leaseWorkspace();
    shared(ws, 'coder', 'gate:' + gate(ws, 'c') + '+reply');
    shared(ws, 'reviewer', 'reply');
    exclusive(ws, 'rival', 'reply');
    declareChannel(ws, 'review', REVIEW);
    const r = await send(ws, '#review', 'change the build');
    await until('the first step to run', () => starts(ws, 'coder').length === 1);
    const b = await send(ws, 'rival');
    expect(b.queued).toMatchObject({ position: 1 });
    const w = await ws.nxc(['withdraw', '--thread', r.thread, '--json']);
    expect(w.code, w.stdout + w.stderr).toBe(0);
    open(gate(ws, 'c'));
    await ws.waitIdle();
    expect(starts(ws, 'reviewer')).toHaveLength(0);
    expect(starts(ws, 'rival')).toHaveLength(1);
    const status = await ws.status(true);
    const op = status.operations.find((o: any) => o.operation === r.operation);
    const round = op.threads.find((t: any) => t.thread === r.thread);
    expect(round.state).toBe('answered');
    expect(round.round).toMatchObject({ state: expect.not.stringMatching(/^running$/) });
  });
});
