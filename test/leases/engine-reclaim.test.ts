// The working-copy lease through the engine: how long a lease lasts and when a dead or abandoned holder loses
// the copy (L4, L12, L14-L17). Crashes are a scripted turn stopped without a report; the clock is moved.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LIVENESS_NOTE } from '../../node-agent/capabilities/leases/index.js';
import type { TestWorkspace } from '../helpers/workspace.js';
import { exclusive, exists, gate, HOUR, leaseOf, leaveWork, leaseWorkspace, MIN, open, pidOf, porcelain, send, show, starts, tick, until } from './engine-kit.js';

let ws: TestWorkspace;
afterEach(async () => {
  await ws?.cleanup();
});

/** A's coder runs (held at a gate) and has left work in the tree; B waits for the copy. */
async function holderRunning(rivalSteps = 'reply'): Promise<{ a: any; b: any }> {
  exclusive(ws, 'coder', 'gate:' + gate(ws, 'a') + '+reply');
  exclusive(ws, 'rival', rivalSteps);
  exclusive(ws, 'third', 'reply');
  const a = await send(ws, 'coder');
  await until('the coder to run', () => starts(ws, 'coder').length === 1);
  leaveWork(ws, 'A');
  const b = await send(ws, 'rival');
  expect(b.queued).toBeDefined();
  return { a, b };
}

async function crash(a: any): Promise<void> {
  ws.inproc!.crash(await pidOf(ws, a.woke.session));
}

describe('liveness and the bound (L4, L12, L17)', () => {
  it('L4 L14 a worker that cannot tell liveness counts the session as running until it reports its end: nothing is taken early, and status says why', async () => {
    ws = await leaseWorkspace();
    ws.inproc!.overrides = { answersLiveness: false };
    const { a } = await holderRunning();
    await crash(a);
    ws.advance(3 * HOUR);
    expect((await tick(ws)).warnings).toEqual([]);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'holds' });
    expect(starts(ws, 'rival')).toEqual([]);
    const status = await ws.status(false);
    expect(status).toMatchObject({ worker_answers_liveness: false, notes: expect.arrayContaining([LIVENESS_NOTE]) });
    const human = (await ws.nxc(['status'])).stdout.trimEnd().split('\n');
    expect(human.at(-1)).toBe(`note: ${LIVENESS_NOTE}`);
  });

  it('L4 once the session reports its end, a lease past its bound drains to the waiting operation', async () => {
    ws = await leaseWorkspace();
    ws.inproc!.overrides = { answersLiveness: false };
    exclusive(ws, 'coder', 'gate:' + gate(ws, 'a') + '+exit:3');
    exclusive(ws, 'rival', 'reply');
    const a = await send(ws, 'coder');
    await until('the coder to run', () => starts(ws, 'coder').length === 1);
    await send(ws, 'rival');
    ws.advance(3 * HOUR);
    await tick(ws);
    expect(starts(ws, 'rival')).toEqual([]);
    open(gate(ws, 'a'));
    await ws.waitIdle();
    await tick(ws);
    await ws.waitIdle();
    expect(starts(ws, 'rival')).toHaveLength(1);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'parked' });
  });

  it('L12 the bound is the latest declared timeout outstanding; one obligation without a window puts the operation on a flat two hours', async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'coder', 'gate:' + gate(ws, 'a') + '+send:@bob', 'timeout: 6h');
    const a = await send(ws, 'coder');
    await until('the coder to run', () => starts(ws, 'coder').length === 1);
    const t0 = ws.clock.now().getTime();
    const six = Date.parse((await leaseOf(ws, a.operation)).bound);
    expect(Math.abs(six - (t0 + 6 * HOUR))).toBeLessThan(10_000);
    ws.advance(10 * MIN);
    open(gate(ws, 'a'));
    await ws.waitIdle();
    const t1 = ws.clock.now().getTime();
    const two = Date.parse((await leaseOf(ws, a.operation)).bound);
    expect(Math.abs(two - (t1 + 2 * HOUR))).toBeLessThan(10_000);
    expect((await leaseOf(ws, a.operation)).text).toContain(`bound ${new Date(two).toISOString()}`);
  });

  it('L17 past its bound a holder whose process is still alive keeps the copy', async () => {
    ws = await leaseWorkspace();
    const { a } = await holderRunning();
    ws.advance(3 * HOUR);
    await tick(ws);
    await send(ws, 'third');
    await tick(ws);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'holds', token: 1 });
    expect(starts(ws, 'rival')).toEqual([]);
    expect(readFileSync(join(ws.root, 'tracked.txt'), 'utf8')).toBe('changed by A\n');
  });
});

describe('taking the copy from a dead holder (L14-L16)', () => {
  it('L14 while somebody waits, a tick a minute later finds the holder provably dead and takes the copy inside its bound, parking its work first', async () => {
    ws = await leaseWorkspace();
    const before = ws.inproc!.scheduledTicks.length;
    const { a } = await holderRunning();
    const now = ws.clock.now().getTime();
    expect(ws.inproc!.scheduledTicks.slice(before).some((at) => at > now && at <= now + MIN + 5_000)).toBe(true);
    await crash(a);
    ws.advance(MIN);
    await tick(ws);
    await ws.waitIdle();
    expect(starts(ws, 'rival')).toHaveLength(1);
    expect(await show(ws, `nexus/park/${a.operation}`, 'tracked.txt')).toBe('changed by A\n');
    expect(await porcelain(ws)).toBe('');
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'parked' });
  });

  it('L15 reclaiming a dead lease hands the copy to whoever waited first; the newcomer whose send got there goes to the back', async () => {
    ws = await leaseWorkspace();
    const { a, b } = await holderRunning('gate:' + gate(ws, 'b') + '+reply');
    await crash(a);
    const c = await send(ws, 'third');
    // The receipt reads the place after its own step handed the copy on, as status does.
    expect(c.queued).toEqual({ position: 1, holder: { operation: b.operation, thread: b.operation } });
    expect(c.woke).toBeNull();
    await until('the rival to start', () => starts(ws, 'rival').length === 1);
    expect(await leaseOf(ws, b.operation)).toMatchObject({ state: 'holds', token: 2 });
    expect(await leaseOf(ws, c.operation)).toMatchObject({ state: 'queued', position: 1, behind: b.operation });
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'parked' });
    open(gate(ws, 'b'));
    await ws.waitIdle();
    expect(starts(ws, 'third')).toHaveLength(1);
  });

  it('L15 when that hand-off park is refused for a reason that can pass, nobody gets the copy and the newcomer queues', async () => {
    ws = await leaseWorkspace();
    const { a } = await holderRunning();
    await crash(a);
    // A rebase left half done: refusable, and passable by finishing or aborting it.
    const { mkdirSync } = await import('node:fs');
    mkdirSync(join(ws.root, '.git', 'rebase-merge'));
    const c = await send(ws, 'third');
    expect(c.queued.position).toBe(2);
    expect(c.warnings).toEqual([expect.objectContaining({ class: 'work_not_parked', thread: a.operation })]);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'holds', park_refused: expect.stringContaining('rebase') });
    expect(starts(ws, 'rival')).toEqual([]);
    expect(starts(ws, 'third')).toEqual([]);
  });

  it("L16 a newcomer's send takes over a crashed operation's copy even with nobody waiting, parking its work so the new session starts in a clean tree; the background sweep alone does not", async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'coder', 'gate:' + gate(ws, 'a') + '+reply');
    exclusive(ws, 'rival', 'reply');
    const a = await send(ws, 'coder');
    await until('the coder to run', () => starts(ws, 'coder').length === 1);
    leaveWork(ws, 'A');
    await crash(a);
    ws.advance(3 * HOUR);
    await tick(ws);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'holds' });
    expect(exists(ws, 'new-A.txt')).toBe(true);
    const b = await send(ws, 'rival');
    expect(b.queued).toBeUndefined();
    expect(b.woke).toMatchObject({ role: 'rival' });
    expect(await show(ws, `nexus/park/${a.operation}`, 'new-A.txt')).toBe('untracked, of A\n');
    expect(exists(ws, 'new-A.txt')).toBe(false);
    expect(readFileSync(join(ws.root, 'tracked.txt'), 'utf8')).toBe('first version\n');
    await ws.waitIdle();
  });
});
