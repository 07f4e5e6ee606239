// The working-copy lease through the engine: what a claim covers, acquiring or queuing, FIFO of whole areas,
// release, and who can clear a hand-back (L1-L3, L5, L6). Real git, real store, scripted sessions.
import { afterEach, describe, expect, it } from 'vitest';
import type { TestWorkspace } from '../helpers/workspace.js';
import { calls, exclusive, gate, leaseOf, leaseWorkspace, open, reply, send, shared, starts, until } from './engine-kit.js';

let ws: TestWorkspace;
afterEach(async () => {
  await ws?.cleanup();
});

describe('the claim (L1)', () => {
  it('L1 an operation that never reaches an exclusive step holds nothing, and nothing queues behind it', async () => {
    ws = await leaseWorkspace();
    shared(ws, 'planner', 'gate:' + gate(ws, 'p') + '+send:helper|reply');
    shared(ws, 'helper', 'reply');
    exclusive(ws, 'coder', 'reply');
    const a = await send(ws, 'planner');
    await until('the planner to run', () => starts(ws, 'planner').length === 1);
    const b = await send(ws, 'coder');
    expect(b.queued).toBeUndefined();
    expect(b.woke).not.toBeNull();
    open(gate(ws, 'p'));
    await ws.waitIdle();
    expect(await leaseOf(ws, a.operation)).toBeNull();
    expect(starts(ws, 'coder')[0].lease_token).toBe('1');
  });

  it('L1 once taken the claim covers the whole operation until it is finished: a planner that commissions coding twice keeps the copy between rounds', async () => {
    ws = await leaseWorkspace();
    shared(ws, 'planner', 'send:coder|send:coder|reply');
    exclusive(ws, 'coder', 'gate:' + gate(ws, 'c') + '+reply');
    exclusive(ws, 'rival', 'reply');
    const a = await send(ws, 'planner');
    await until('the first coding round to start', () => starts(ws, 'coder').length === 1);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'holds', token: 1 });
    const b = await send(ws, 'rival');
    expect(b.queued).toEqual({ position: 1, holder: { operation: a.operation, thread: a.operation } });
    open(gate(ws, 'c'));
    await ws.waitIdle();
    // Both coding rounds ran under the first grant; the rival started only once the planner had answered.
    expect(starts(ws, 'coder').map((e) => e.lease_token)).toEqual(['1', '1']);
    // (A reply is logged once its command returns, after what that command started: compare starts only.)
    const log = ws.agentLog();
    const lastPlannerTurn = log.findIndex((e) => e.cmd === 'start' && e.role === `${ws.short}/planner` && e.turn === 3);
    const rivalStart = log.findIndex((e) => e.cmd === 'start' && e.role === `${ws.short}/rival`);
    expect(lastPlannerTurn).toBeGreaterThan(-1);
    expect(rivalStart).toBeGreaterThan(lastPlannerTurn);
    expect(calls(ws, 'planner', 'reply')[0].out.woke).toMatchObject({ role: 'rival' });
    expect(starts(ws, 'rival')[0].lease_token).toBe('2');
    expect(await leaseOf(ws, a.operation)).toBeNull();
  });
});

describe('acquire or queue (L2)', () => {
  it('L2 a colliding commission is posted, starts nothing and queues: the receipt says where, exit 0, no warning', async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'coder', 'gate:' + gate(ws, 'a') + '+reply');
    exclusive(ws, 'rival', 'reply');
    const a = await send(ws, 'coder');
    const b = await send(ws, 'rival');
    expect(b).toMatchObject({ posted: true, woke: null, warnings: [], queued: { position: 1, holder: { operation: a.operation, thread: a.thread } } });
    const c = await send(ws, 'rival');
    expect(c.queued.position).toBe(2);
    const status = await ws.status(false);
    const rowB = status.operations.find((o: any) => o.operation === b.operation);
    expect(rowB.threads[0]).toMatchObject({ state: 'open', session: { turn: 0, running: false } });
    expect(rowB.lease).toMatchObject({ state: 'queued', position: 1, behind: a.operation, text: `queued (position 1 behind ${a.operation})` });
    const human = await ws.nxc(['status']);
    expect(human.stdout).toContain(`working copy: queued (position 2 behind ${a.operation})`);
    expect(human.stdout).toContain('working copy: holds working tree (token 1)');
    expect(starts(ws, 'rival')).toEqual([]);
    open(gate(ws, 'a'));
    await ws.waitIdle();
    expect(starts(ws, 'rival').map((e) => e.lease_token)).toEqual(['2', '3']);
  });

  it('L2 a nested exclusive step inherits the lease from its own operation instead of queuing behind it', async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'coder', 'send:tester|reply');
    exclusive(ws, 'tester', 'reply');
    await send(ws, 'coder');
    await ws.waitIdle();
    const sent = calls(ws, 'coder', 'send')[0];
    expect(sent.out.queued).toBeUndefined();
    expect(sent.out.woke).not.toBeNull();
    expect(starts(ws, 'tester')[0].lease_token).toBe(starts(ws, 'coder')[0].lease_token);
  });
});

describe('FIFO of whole claim areas (L3)', () => {
  it('L3 a release starts every queued trigger of the operation at the head, never one entry, and the next operation waits its turn', async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'holder', 'gate:' + gate(ws, 'h') + '+reply');
    shared(ws, 'planner', 'send:coder+send:coder2|reply');
    exclusive(ws, 'coder', 'reply');
    exclusive(ws, 'coder2', 'reply');
    exclusive(ws, 'coder3', 'reply');
    const a = await send(ws, 'holder');
    const b = await send(ws, 'planner');
    await until('the planner to commission both', () => calls(ws, 'planner', 'send').length === 2);
    expect(calls(ws, 'planner', 'send').map((e) => e.out.queued)).toEqual([
      { position: 1, holder: { operation: a.operation, thread: a.operation } },
      { position: 1, holder: { operation: a.operation, thread: a.operation } },
    ]);
    const c = await send(ws, 'coder3');
    expect(c.queued.position).toBe(2);
    open(gate(ws, 'h'));
    await ws.waitIdle();
    expect([...starts(ws, 'coder'), ...starts(ws, 'coder2')].map((e) => e.lease_token)).toEqual(['2', '2']);
    expect(starts(ws, 'coder3')[0].lease_token).toBe('3');
    const log = ws.agentLog();
    const bLastTurn = log.findIndex((e) => e.cmd === 'start' && e.role === `${ws.short}/planner` && e.turn === 2);
    expect(log.findIndex((e) => e.cmd === 'start' && e.role === `${ws.short}/coder3`)).toBeGreaterThan(bLastTurn);
    expect(calls(ws, 'planner', 'reply')[0].out.woke).toMatchObject({ role: 'coder3' });
    expect(b.operation).not.toBe(c.operation);
  });
});

describe('release and hand-backs (L5, L6)', () => {
  it('L5 an answer releases the copy when nothing in the operation owes, and the queue moves on', async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'coder', 'gate:' + gate(ws, 'a') + '+reply');
    exclusive(ws, 'rival', 'reply');
    const a = await send(ws, 'coder');
    const b = await send(ws, 'rival');
    expect(b.queued).toBeDefined();
    open(gate(ws, 'a'));
    await ws.waitIdle();
    expect(await leaseOf(ws, a.operation)).toBeNull();
    expect(starts(ws, 'rival')).toHaveLength(1);
  });

  it('L5 an escalation holds the copy: the waiting operation does not start', async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'coder', 'escalate');
    exclusive(ws, 'rival', 'reply');
    const a = await send(ws, 'coder');
    await ws.waitIdle();
    const b = await send(ws, 'rival');
    expect(b.queued).toEqual({ position: 1, holder: { operation: a.operation, thread: a.thread } });
    await ws.waitIdle();
    expect(starts(ws, 'rival')).toEqual([]);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'holds', held_for_handback: a.thread });
  });

  it('L6 on a direct thread anyone but the handle that escalated posts and moves nothing: woke null, the lease still held, and status names the hand-back', async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'coder', 'escalate');
    exclusive(ws, 'rival', 'reply');
    const a = await send(ws, 'coder');
    await ws.waitIdle();
    const b = await send(ws, 'rival');
    const fromOpener = await reply(ws, a.thread, 'the answer is 10');
    expect(fromOpener).toMatchObject({ posted: true, woke: null });
    const fromBob = await reply(ws, a.thread, 'bob agrees', { NXC_ACTOR: 'bob' });
    expect(fromBob).toMatchObject({ posted: true, woke: null });
    await ws.waitIdle();
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'holds', held_for_handback: a.thread });
    expect(await leaseOf(ws, b.operation)).toMatchObject({ state: 'queued', position: 1 });
    expect(starts(ws, 'rival')).toEqual([]);
    // The operation is finished as a chat (every thread answered) and still listed, because it holds the copy.
    const open_ = await ws.nxc(['status']);
    expect(open_.stdout).toContain(`operation ${a.operation}`);
    expect(open_.stdout).toContain(`held for the hand-back in ${a.thread}`);
  });
});
