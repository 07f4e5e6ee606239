// The working-copy lease through the engine: the backstop drain, answers going up while the copy is elsewhere,
// bringing parked work back, and withdrawing a commission (L8, L11, L13, L18). Each describe is one story told
// in steps that share a workspace.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestWorkspace } from '../helpers/workspace.js';
import { branch, calls, exclusive, exists, gate, leaseOf, leaveWork, leaseWorkspace, MIN, open, porcelain, reply, send, shared, show, starts, tick, until } from './engine-kit.js';
import { git } from './repos.js';

/** The prompt a session's turn was started with (as the launcher wrote it). */
function promptOf(ws: TestWorkspace, session: string, turn: number): string {
  return readFileSync(join(ws.root, '.nxs', 'sessions', session, `turn-${turn}.prompt`), 'utf8');
}

describe('an operation waiting on a person loses the copy at its bound, and gets its work back when it commissions again', () => {
  let ws: TestWorkspace;
  let a: any;
  let b: any;
  let c: any;
  let bob: string;
  let bound: number;
  beforeAll(async () => {
    ws = await leaseWorkspace();
    shared(ws, 'planner', 'send:coder|send:@bob|send:coder|reply');
    exclusive(ws, 'coder', 'reply');
    exclusive(ws, 'rival', 'gate:' + gate(ws, 'b') + '+reply');
    a = await send(ws, 'planner');
    await until('the planner to ask bob', () => calls(ws, 'planner', 'send').length === 2);
    await ws.waitIdle();
    bob = calls(ws, 'planner', 'send')[1].out.thread;
    // What the coding round left: a branch of its own, and uncommitted work on it.
    await git(ws.root, 'checkout', '-q', '-b', 'feat/a');
    leaveWork(ws, 'A');
  });
  afterAll(() => ws.cleanup());

  it('L13 a commission that queues schedules a tick for exactly the instant the holder’s bound passes', async () => {
    const before = ws.inproc!.scheduledTicks.length;
    b = await send(ws, 'rival');
    expect(b.queued).toEqual({ position: 1, holder: { operation: a.operation, thread: a.operation } });
    const held = await leaseOf(ws, a.operation);
    bound = Date.parse(held.bound);
    expect(ws.inproc!.scheduledTicks.slice(before)).toContain(bound);
  });

  it('L13 a tick before the bound takes nothing (a person still owes an answer); a tick past it drains the lease, parking the work first', async () => {
    ws.advance(bound - ws.clock.now().getTime() - MIN);
    await tick(ws);
    expect(starts(ws, 'rival')).toEqual([]);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'holds' });
    ws.advance(2 * MIN);
    await tick(ws);
    await until('the rival to start', () => starts(ws, 'rival').length === 1);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'parked', parked: { from_branch: 'feat/a', work: true } });
    expect(await show(ws, `nexus/park/${a.operation}`, 'new-A.txt')).toBe('untracked, of A\n');
    expect(await branch(ws)).toBe('main');
    expect(await porcelain(ws)).toBe('');
  });

  it('L18 an answer into the parked operation wakes the planner only for the copy: its session waits at the head of the queue, ahead of a later commission, and status says so', async () => {
    // Meanwhile the base moves on.
    writeFileSync(join(ws.root, 'later.txt'), 'committed on main while A was parked\n');
    await git(ws.root, 'add', 'later.txt');
    await git(ws.root, 'commit', '-q', '-m', 'later');
    const r = await reply(ws, bob, 'use postgres', { NXC_ACTOR: 'bob' });
    expect(r.woke).toBeNull();
    expect(r.warnings).toEqual([]);
    expect(r.queued).toEqual({ position: 1, holder: { operation: b.operation, thread: b.operation } });
    c = await send(ws, 'rival', 'after the answer');
    expect(c.queued).toEqual({ position: 2, holder: { operation: b.operation, thread: b.operation } });
    // Nothing of A runs in the copy B holds.
    expect(starts(ws, 'planner')).toHaveLength(2);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'queued', position: 1, behind: b.operation, woken: true, parked: { from_branch: 'feat/a', work: true } });
    expect(await leaseOf(ws, b.operation)).toMatchObject({ state: 'holds', token: 2 });
    const human = (await ws.nxc(['status'])).stdout;
    expect(human).toContain(`queued (position 1 behind ${b.operation}) · an answer woke its session, which starts when the copy is free, with its work put back first · parked on nexus/park/${a.operation}`);
  });

  it('L8 once the copy is free the parked operation takes it first, is put back on its branch with its work, and the woken session is told where the work is and that the base moved', async () => {
    open(gate(ws, 'b'));
    await until('the planner to answer', () => calls(ws, 'planner', 'reply').length === 1);
    await ws.waitIdle();
    const woken = starts(ws, 'planner')[2];
    expect(woken).toMatchObject({ turn: 3, lease_token: '3', prompt_has_lease_notice: true });
    const prompt = promptOf(ws, woken.session, 3);
    expect(prompt).toContain(`Its uncommitted work is on branch nexus/park/${a.operation} at commit`);
    expect(prompt).toContain('Branch feat/a has not moved since.');
    expect(prompt).toContain('Its base main HAS MOVED ON since');
    // The coder it commissioned then inherits the grant, in the tree that holds A's work.
    expect(starts(ws, 'coder')[1]).toMatchObject({ lease_token: '3', prompt_has_lease_notice: false });
    expect(readFileSync(join(ws.root, 'tracked.txt'), 'utf8')).toBe('changed by A\n');
    expect(exists(ws, 'new-A.txt')).toBe(true);
    expect(exists(ws, 'gone.txt')).toBe(false);
    // A finished, and the commission that waited behind it started after it, under the next grant.
    expect(starts(ws, 'rival').map((e) => e.lease_token)).toEqual(['2', '4']);
    expect(await leaseOf(ws, a.operation)).toBeNull();
  });
});

describe('nxc withdraw', () => {
  let ws: TestWorkspace;
  let a: any;
  let b: any;
  let coder: string;
  let asked: string;
  beforeAll(async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'coder', 'write:work/a.txt+send:@bob+hang|reply');
    exclusive(ws, 'rival', 'reply');
    a = await send(ws, 'coder');
    coder = a.woke.session;
    await until('the coder to work and ask bob', () => calls(ws, 'coder', 'send').length === 1);
    asked = calls(ws, 'coder', 'send')[0].out.thread;
    b = await send(ws, 'rival');
  });
  afterAll(() => ws.cleanup());

  it('L11 status lists the holder under its first thread, marked holds working tree', async () => {
    const human = (await ws.nxc(['status'])).stdout.split('\n');
    const at = human.findIndex((l) => l.startsWith(`operation ${a.operation}`));
    expect(human[at + 1]).toMatch(/^ {2}working copy: holds working tree \(token 1\)/);
    expect(a.thread).toBe(a.operation);
  });

  it('L11 only the person who sent the first commission may withdraw, naming the first thread; a session is refused with a stable code', async () => {
    const attempts = [
      { args: [a.thread], env: { NXC_SESSION: coder, NXC_ACTOR: `${ws.short}/coder` }, code: 'WITHDRAW_BY_SESSION' },
      { args: [a.thread], env: { NXC_ACTOR: 'bob' }, code: 'WITHDRAW_NOT_SENDER' },
      { args: [asked], env: {}, code: 'WITHDRAW_NOT_FIRST_THREAD' },
      { args: ['t-01ZZZZZZZZZZZZZZZZZZZZZZZZ'], env: {}, code: 'UNKNOWN_THREAD' },
    ];
    for (const t of attempts) {
      const r = await ws.nxc(['withdraw', '--thread', ...t.args, '--json'], { env: t.env });
      expect([r.code, r.json?.error?.code]).toEqual([2, t.code]);
    }
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'holds', withdrawn: false });
    expect(ws.inproc!.runningPids()).toHaveLength(1);
  });

  it('L11 withdrawing discharges the round and the chain below, stops the session, parks what it left once it is gone, and hands the copy on', async () => {
    const r = await ws.nxc(['withdraw', '--thread', a.thread, '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json).toMatchObject({ withdrawn: true, operation: a.operation, stopping: [coder] });
    expect([...r.json.discharged].sort()).toEqual([a.thread, asked].sort());
    await ws.waitIdle();
    expect(await show(ws, `nexus/park/${a.operation}`, 'work/a.txt')).toContain(`work of ${coder}`);
    expect(exists(ws, 'work/a.txt')).toBe(false);
    expect(starts(ws, 'rival')).toMatchObject([{ lease_token: '2' }]);
    const status = await ws.status(true);
    const rows = status.operations.find((o: any) => o.operation === a.operation).threads;
    expect(rows.map((t: any) => t.state)).toEqual(['answered', 'answered']);
    expect(await leaseOf(ws, b.operation)).toBeNull();
  });

  it('L8 L11 the next message into the same thread brings the work back, and the session is told', async () => {
    const r = await reply(ws, a.thread, 'carry on after all');
    expect(r.woke).toMatchObject({ session: coder, turn: 2 });
    await ws.waitIdle();
    expect(starts(ws, 'coder').at(-1)).toMatchObject({ turn: 2, lease_token: '3', prompt_has_lease_notice: true });
    expect(readFileSync(join(ws.root, 'work/a.txt'), 'utf8')).toContain(`work of ${coder} in turn 1`);
    expect(promptOf(ws, coder, 2)).toContain(`Working copy: operation ${a.operation} was parked`);
    expect(readdirSync(join(ws.root, '.nxs', 'sessions'))).toContain(coder);
  });
});

describe('nxc withdraw of an operation that holds no copy', () => {
  let ws: TestWorkspace;
  afterAll(() => ws.cleanup());

  it('L11 discharges its threads and stops its session all the same, with nothing to park', async () => {
    ws = await leaseWorkspace();
    shared(ws, 'helper', 'hang');
    const a = await send(ws, 'helper');
    await until('the helper to run', () => starts(ws, 'helper').length === 1);
    const r = await ws.nxc(['withdraw', '--thread', a.thread, '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json).toMatchObject({ discharged: [a.thread], stopping: [a.woke.session], parked: null, woke: [] });
    await ws.waitIdle();
    expect(ws.inproc!.runningPids()).toEqual([]);
    const row = (await ws.status(true)).operations.find((o: any) => o.operation === a.operation);
    expect(row).toMatchObject({ finished: true, lease: null, threads: [{ state: 'answered', answered_by: 'alice', substituted: true }] });
  });
});
