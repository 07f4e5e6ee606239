// The lease rules, one named row per rule of the working-copy lease (L1-L18) plus fencing, on the pure core.
import { describe, expect, it } from 'vitest';
import { leaseView, LIVENESS_NOTE } from '../../node-agent/capabilities/leases/index.js';
import { isNexusError } from '../../protocol/errors.js';
import type { LeaseEvent, ThreadSnapshot } from '../../protocol/leases.js';
import { alice, HOUR, Lease, MIN, ofType, startedThreads, trig, world } from './harness.js';

const bob = { handle: 'bob', session: null };

/** A thread the engine's fold already knew when the lease started following its operation. */
function snap(thread: string, over: Partial<ThreadSnapshot> = {}): ThreadSnapshot {
  return {
    thread,
    parent: null,
    opener: 'alice',
    person: false,
    owing: true,
    since: 0,
    window_ms: null,
    handback: null,
    expected: null,
    session: `s-${thread}`,
    proc: 'running',
    run: null,
    ...over,
  };
}

/** Operation A holds the copy through a direct exclusive commission to `coder`, on base `main`. */
function aHolds(l: Lease, window_ms: number | null = null): void {
  l.send('A', 'A', { window_ms });
  l.feed({ type: 'base_recorded', operation: 'A', token: l.state.holder!.token, branch: 'main' });
  l.started('A', 'A');
}

/** A holds, its coder escalated, B waits and the thirty minutes ran out: a park of A is pending. */
function contentionParkPending(l: Lease): void {
  aHolds(l);
  l.reply('A', 'A', 'coder', 'escalate');
  l.ended('A', 'A');
  l.send('B', 'B');
  l.advance(30 * MIN).tick();
}

function expectNoPark(effects: ReturnType<Lease['feed']>): void {
  expect(ofType(effects, 'park')).toEqual([]);
}

const rows: Array<[string, (l: Lease) => void]> = [
  ['L1 a chain that never reaches an exclusive step holds nothing', (l) => {
    const fx = l.send('A', 'A', { exclusive: false });
    expect(ofType(fx, 'start')[0]).toMatchObject({ token: null });
    l.send('A', 'A1', { exclusive: false, by: { handle: 'planner', session: 's-A' } });
    expect(l.holder()).toBeNull();
    expect(l.state.areas).toEqual({});
  }],
  ['L1 the claim arises at the first exclusive step and lasts across the pause between two rounds', (l) => {
    const planner = { handle: 'planner', session: 's-A' };
    l.send('A', 'A', { exclusive: false });
    expect(l.holder()).toBeNull();
    const fx = l.send('A', 'A1', { by: planner, area: [snap('A')] });
    expect(l.holder()).toBe('A');
    expect(startedThreads(fx)).toEqual(['A1']);
    l.reply('A', 'A1', 'coder', 'answer');
    expect(l.holder()).toBe('A'); // the planner still owes its answer: the pause between rounds is covered
    expect(ofType(l.send('B', 'B'), 'queued')).toHaveLength(1);
    expect(startedThreads(l.send('A', 'A2', { by: planner }))).toEqual(['A2']);
    l.reply('A', 'A2', 'coder', 'answer');
    const done = l.reply('A', 'A', 'planner', 'answer');
    expect(l.holder()).toBe('B');
    expect(startedThreads(done)).toEqual(['B']);
  }],
  ['L2 a colliding commission is posted, starts nothing, and is queued with its position and the holder', (l) => {
    aHolds(l);
    const fx = l.send('B', 'B');
    expect(startedThreads(fx)).toEqual([]);
    expect(ofType(fx, 'queued')).toEqual([{ type: 'queued', operation: 'B', thread: 'B', position: 1, holder: { operation: 'A', thread: 'A' } }]);
    expect(ofType(fx, 'warn')).toEqual([]);
    expect(ofType(l.send('C', 'C'), 'queued')[0]!.position).toBe(2);
  }],
  ['L2 a nested exclusive step inherits the lease instead of queuing behind its own parent', (l) => {
    aHolds(l);
    const fx = l.send('A', 'A1', { by: { handle: 'coder', session: 's-A' } });
    expect(ofType(fx, 'queued')).toEqual([]);
    expect(ofType(fx, 'start')).toEqual([{ type: 'start', operation: 'A', triggers: [trig('A1')], token: 1, notice: null }]);
  }],
  ['L3 a release promotes the whole claim area at the head of the queue, never one entry', (l) => {
    aHolds(l);
    const planner = { handle: 'planner', session: 's-B' };
    l.send('B', 'B', { exclusive: false });
    l.send('B', 'B1', { by: planner, area: [snap('B')] });
    expect(ofType(l.send('B', 'B2', { by: planner }), 'queued')[0]!.position).toBe(1);
    l.send('C', 'C');
    const fx = l.reply('A', 'A', 'coder', 'answer');
    expect(startedThreads(fx)).toEqual(['B1', 'B2']);
    expect(ofType(fx, 'start')[0]!.token).toBe(2);
    expect(l.state.queue.map((e) => e.operation)).toEqual(['C']);
  }],
  ['L3 the steps of one ordered run start one at a time', (l) => {
    const channel = { handle: 'review', session: null };
    l.send('R', 'R', { exclusive: false });
    expect(startedThreads(l.send('R', 'R1', { by: channel, run: { id: 'r', step: 0 }, area: [snap('R')] }))).toEqual(['R1']);
    expect(startedThreads(l.send('R', 'R2', { by: channel, run: { id: 'r', step: 1 } }))).toEqual([]);
    l.started('R', 'R1');
    expect(startedThreads(l.reply('R', 'R1', 'coder', 'answer'))).toEqual([]); // answered, but its session is not over
    expect(startedThreads(l.ended('R', 'R1'))).toEqual(['R2']);
  }],
  ['L4 a session whose liveness cannot be told counts as running until it reports its end', (l) => {
    aHolds(l);
    l.send('B', 'B');
    l.advance(3 * HOUR);
    expectNoPark(l.tick(world({ liveness_known: false })));
    l.ended('A', 'A');
    expect(ofType(l.tick(world({ liveness_known: false })), 'park')[0]).toMatchObject({ operation: 'A', reason: 'drain' });
  }],
  ['L5 a reply releases the copy when nothing in the area owes and the last word was not a hand-back', (l) => {
    aHolds(l);
    l.send('A', 'A1', { by: { handle: 'coder', session: 's-A' } });
    l.reply('A', 'A1', 'tester', 'answer');
    expect(l.holder()).toBe('A');
    l.reply('A', 'A', 'coder', 'answer');
    expect(l.holder()).toBeNull();
  }],
  ['L5 an escalation holds the copy', (l) => {
    aHolds(l);
    l.reply('A', 'A', 'coder', 'escalate');
    expect(l.holder()).toBe('A');
    expect(ofType(l.send('B', 'B'), 'queued')).toHaveLength(1);
  }],
  ['L6 on a direct thread only the handle that escalated answers the hand-back; anyone else posts and moves nothing', (l) => {
    aHolds(l);
    l.reply('A', 'A', 'coder', 'escalate');
    l.feed({ type: 'reply', operation: 'A', thread: 'A', by: alice, outcome: 'answer', wakes: null, root: alice, area: [], facts: world() });
    expect(l.holder()).toBe('A');
    l.reply('A', 'A', 'coder', 'answer');
    expect(l.holder()).toBeNull();
  }],
  ['L6 the commissioner of a thread above answers an escalation by writing there; the engine moving alone answers nothing', (l) => {
    l.send('A', 'C', { parent: null, exclusive: false, noTrigger: false });
    l.send('A', 'S', { parent: 'C', by: { handle: 'review', session: null }, area: [snap('C', { proc: 'none', session: null })] });
    l.reply('A', 'S', 'coder', 'escalate');
    l.reply('A', 'C', 'review', 'escalate');
    l.send('B', 'B');
    expect(l.state.holder!.contention_since).not.toBeNull();
    l.feed({ type: 'answered_from_above', operation: 'A', thread: 'C', by: null });
    expect(l.holder()).toBe('A');
    l.feed({ type: 'answered_from_above', operation: 'A', thread: 'C', by: { handle: 'bob', session: null } });
    expect(l.holder()).toBe('A');
    l.feed({ type: 'answered_from_above', operation: 'A', thread: 'C', by: alice });
    expect(l.holder()).toBe('B');
  }],
  ['L6 a question is answered in its own thread only, never from above', (l) => {
    l.send('A', 'C', { parent: null, exclusive: false });
    l.send('A', 'S', { parent: 'C', by: { handle: 'review', session: null }, area: [snap('C')] });
    l.reply('A', 'S', 'coder', 'question');
    l.reply('A', 'C', 'review', 'escalate');
    l.feed({ type: 'answered_from_above', operation: 'A', thread: 'C', by: alice });
    expect(l.holder()).toBe('A');
    l.reply('A', 'S', 'coder', 'answer');
    expect(l.holder()).toBeNull();
  }],
  ['L6 while a copy is held for a hand-back with no thread open, status names it', (l) => {
    aHolds(l);
    expect(leaseView(l.state).holder!.held_for_handback).toBeNull();
    l.reply('A', 'A', 'coder', 'escalate');
    expect(leaseView(l.state).holder).toMatchObject({ operation: 'A', thread: 'A', held_for_handback: 'A' });
  }],
  ['L7 with nobody waiting an unanswered escalation is never measured or parked', (l) => {
    aHolds(l);
    l.reply('A', 'A', 'coder', 'escalate');
    l.advance(5 * HOUR);
    expectNoPark(l.tick());
    expect(l.state.holder!.contention_since).toBeNull();
  }],
  ['L7 the thirty-minute clock starts at contention, then parks the holder onto its base and starts the waiting operation', (l) => {
    aHolds(l);
    l.reply('A', 'A', 'coder', 'escalate');
    l.ended('A', 'A');
    l.advance(2 * HOUR);
    const queued = l.send('B', 'B');
    expect(ofType(queued, 'schedule_tick').map((e) => e.at)).toContain(l.now + 30 * MIN);
    expectNoPark(l.advance(29 * MIN).tick());
    expect(ofType(l.advance(MIN).tick(), 'park')).toEqual([{ type: 'park', operation: 'A', token: 1, base: 'main', reason: 'contention' }]);
    expect(l.holder()).toBe('A'); // nobody gets the copy while the park runs
    const fx = l.parked('A');
    expect(fx.map((e) => e.type)).toEqual(['fence', 'start']);
    expect(ofType(fx, 'start')[0]).toMatchObject({ operation: 'B', token: 2 });
  }],
  ['L8 a parked operation triggered again takes the copy like any claim, is put back, and is told where its work is', (l) => {
    contentionParkPending(l);
    l.parked('A');
    expect(ofType(l.send('A', 'A2', { by: { handle: 'coder', session: 's-A' }, area: [snap('A', { owing: false })] }), 'queued')[0]!.position).toBe(1);
    const grant = l.reply('B', 'B', 'coder', 'answer');
    expect(grant.map((e) => e.type)).toEqual(['fence', 'restore']);
    expect(ofType(grant, 'restore')[0]).toMatchObject({ operation: 'A', token: 3, record: { branch: 'feat/A', park_branch: 'nexus/park/A' } });
    expect(l.state.areas.A!.base).toBe('main');
    const fx = l.restored('A', 'NOTICE');
    expect(ofType(fx, 'start')).toEqual([{ type: 'start', operation: 'A', triggers: [trig('A2')], token: 3, notice: 'NOTICE' }]);
    expect(l.state.parked).toEqual({});
  }],
  ['L9 a refusal that can pass holds the checkout, warns work_not_parked, marks PARK REFUSED and is retried every tick', (l) => {
    contentionParkPending(l);
    const what = 'a merge is in progress: finish it (git commit) or abort it (git merge --abort)';
    const fx = l.feed({ type: 'park_result', operation: 'A', token: 1, result: { outcome: 'refused_passable', what } });
    expect(ofType(fx, 'warn')[0]).toMatchObject({ class: 'work_not_parked', operation: 'A' });
    expect(ofType(fx, 'warn')[0]!.message).toContain(what);
    expect(ofType(fx, 'mark')).toEqual([{ type: 'mark', operation: 'A', mark: 'park_refused', text: what }]);
    expect(l.holder()).toBe('A');
    expect(leaseView(l.state).holder!.park_refused).toBe(what);
    expect(ofType(l.advance(MIN).tick(), 'park')).toHaveLength(1);
  }],
  ['L9 a refusal that cannot pass hands the checkout on without parking: work_handed_on_unparked', (l) => {
    contentionParkPending(l);
    const fx = l.feed({ type: 'park_result', operation: 'A', token: 1, result: { outcome: 'refused_unpassable', why: 'no base branch was recorded' } });
    expect(ofType(fx, 'warn')[0]).toMatchObject({ class: 'work_handed_on_unparked', operation: 'A' });
    expect(startedThreads(fx)).toEqual(['B']);
    expect(l.state.parked).toEqual({});
  }],
  ['L10 PARK REFUSED goes on the next tick once nobody waits, whatever the tree looks like', (l) => {
    contentionParkPending(l);
    l.feed({ type: 'park_result', operation: 'A', token: 1, result: { outcome: 'refused_passable', what: 'a rebase is in progress' } });
    l.feed({ type: 'withdraw', thread: 'B', by: alice, facts: world() });
    expect(leaseView(l.state).holder!.park_refused).toBe('a rebase is in progress');
    const fx = l.tick();
    expectNoPark(fx);
    expect(ofType(fx, 'mark')).toEqual([{ type: 'mark', operation: 'A', mark: 'park_refused', text: null }]);
    expect(leaseView(l.state).holder!.park_refused).toBeNull();
  }],
  ['L11 only the person who sent the first commission may withdraw it, naming the first thread', (l) => {
    aHolds(l);
    l.send('A', 'A1', { by: { handle: 'coder', session: 's-A' } });
    const before = l.state;
    const attempt = (ev: LeaseEvent) => {
      try {
        l.feed(ev);
        return 'accepted';
      } catch (err) {
        return isNexusError(err) ? err.code : String(err);
      }
    };
    expect(attempt({ type: 'withdraw', thread: 'A', by: { handle: 'alice', session: 's-A' }, facts: world() })).toBe('WITHDRAW_BY_SESSION');
    expect(attempt({ type: 'withdraw', thread: 'A', by: bob, facts: world() })).toBe('WITHDRAW_NOT_SENDER');
    expect(attempt({ type: 'withdraw', thread: 'A1', by: alice, facts: world() })).toBe('WITHDRAW_NOT_FIRST_THREAD');
    expect(l.state).toBe(before);
  }],
  ['L11 withdrawing stops the chain, parks what it left once the process is gone, hands the copy on; the next commission brings it back', (l) => {
    aHolds(l);
    l.send('A', 'A1', { by: { handle: 'coder', session: 's-A' } });
    l.started('A', 'A1');
    l.send('B', 'B');
    const fx = l.feed({ type: 'withdraw', thread: 'A', by: alice, facts: world({ alive: ['s-A', 's-A1'] }) });
    expect(ofType(fx, 'stop')).toEqual([{ type: 'stop', operation: 'A', discharge: ['A', 'A1'], sessions: ['s-A', 's-A1'] }]);
    expectNoPark(fx);
    expectNoPark(l.tick(world({ alive: ['s-A1'] })));
    expect(ofType(l.tick(world()), 'park')[0]).toMatchObject({ operation: 'A', reason: 'withdraw' });
    expect(startedThreads(l.parked('A'))).toEqual(['B']);
    expect(ofType(l.reopen('A', 'A', alice), 'queued')).toHaveLength(1);
    expect(ofType(l.reply('B', 'B', 'coder', 'answer'), 'restore')).toHaveLength(1);
  }],
  ['L12 the bound is the latest declared window outstanding; one obligation without a window makes it a flat two hours', (l) => {
    const t0 = l.now;
    aHolds(l, 10 * MIN);
    const coder = { handle: 'coder', session: 's-A' };
    l.advance(MIN).send('A', 'A1', { by: coder, window_ms: 6 * HOUR });
    expect(leaseView(l.state).holder!.bound).toBe(t0 + MIN + 6 * HOUR);
    l.advance(MIN).send('A', 'A2', { by: coder, window_ms: null });
    expect(leaseView(l.state).holder!.bound).toBe(t0 + 2 * MIN + 2 * HOUR);
  }],
  ['L13 a queued commission schedules a tick at the bound, and a tick past it drains the abandoned lease, parking first', (l) => {
    const t0 = l.now;
    aHolds(l, 10 * MIN);
    l.crashed('A', 'A');
    const fx = l.send('B', 'B', { facts: world({ liveness_known: false }) });
    expect(ofType(fx, 'schedule_tick').map((e) => e.at)).toContain(t0 + 10 * MIN);
    expectNoPark(l.tick(world({ liveness_known: false })));
    l.now = t0 + 10 * MIN;
    expect(ofType(l.tick(world({ liveness_known: false })), 'park')[0]).toMatchObject({ operation: 'A', reason: 'drain' });
    expect(startedThreads(l.parked('A'))).toEqual(['B']);
  }],
  ['L14 while somebody waits, a provably dead holder loses the copy inside its bound, parked first', (l) => {
    aHolds(l);
    const fx = l.send('B', 'B');
    expect(ofType(fx, 'schedule_tick').map((e) => e.at)).toContain(l.now + MIN);
    expect(ofType(l.advance(MIN).tick(world()), 'park')[0]).toMatchObject({ operation: 'A', reason: 'dead' });
  }],
  ['L14 nothing is taken early when the worker cannot tell liveness, and status says so', (l) => {
    aHolds(l);
    l.send('B', 'B');
    expectNoPark(l.advance(MIN).tick(world({ liveness_known: false })));
    expect(leaseView(l.state)).toMatchObject({ worker_answers_liveness: false, notes: [LIVENESS_NOTE] });
  }],
  ['L14 a live process, a reported end, an availability-boundary hold or nothing owed each keeps the copy', (l) => {
    aHolds(l);
    l.send('B', 'B');
    expectNoPark(l.advance(MIN).tick(world({ alive: ['s-A'] })));
    expectNoPark(l.tick(world({ boundary: ['A'] })));
    l.ended('A', 'A');
    expectNoPark(l.tick(world()));
    l.reply('A', 'A', 'coder', 'escalate');
    expectNoPark(l.tick(world())); // handed back: waiting for you, under the thirty-minute rule instead
  }],
  ['L15 reclaiming an expired lease hands the turn to whoever waited first; the newcomer goes to the back', (l) => {
    aHolds(l, 10 * MIN);
    l.crashed('A', 'A');
    l.send('B', 'B', { facts: world({ liveness_known: false }) });
    l.advance(20 * MIN);
    const fx = l.send('C', 'C', { facts: world({ liveness_known: false }) });
    expect(ofType(fx, 'queued')[0]!.position).toBe(2);
    expect(ofType(fx, 'park')[0]).toMatchObject({ operation: 'A', reason: 'takeover' });
    expect(startedThreads(l.parked('A'))).toEqual(['B']);
    expect(l.state.queue.map((e) => e.operation)).toEqual(['C']);
  }],
  ['L15 when the hand-off park is refused for a reason that can pass, nobody gets the copy and the newcomer queues', (l) => {
    aHolds(l, 10 * MIN);
    l.crashed('A', 'A');
    l.advance(20 * MIN).send('C', 'C');
    const fx = l.feed({ type: 'park_result', operation: 'A', token: 1, result: { outcome: 'refused_passable', what: 'git stash failed' } });
    expect(startedThreads(fx)).toEqual([]);
    expect(l.holder()).toBe('A');
    expect(l.state.queue.map((e) => e.operation)).toEqual(['C']);
  }],
  ["L16 a newcomer's send takes over a crashed operation's copy even with nobody waiting, parking its work first", (l) => {
    aHolds(l);
    l.crashed('A', 'A');
    l.advance(3 * HOUR);
    expectNoPark(l.tick(world())); // the background sweep does not: with nobody queued there is nothing to hand on
    const fx = l.send('B', 'B');
    expect(ofType(fx, 'park')[0]).toMatchObject({ operation: 'A', reason: 'takeover' });
    expect(startedThreads(l.parked('A'))).toEqual(['B']);
  }],
  ['L17 past its bound, a holder whose process is still alive keeps the copy', (l) => {
    aHolds(l, 10 * MIN);
    l.advance(HOUR);
    expectNoPark(l.send('B', 'B', { facts: world({ alive: ['s-A'] }) }));
    expectNoPark(l.tick(world({ alive: ['s-A'] })));
    expect(l.holder()).toBe('A');
  }],
  ['L18 an answer going up is never held back, even into an operation that waits for the copy', (l) => {
    aHolds(l);
    const planner = { handle: 'planner', session: 's-B' };
    l.send('B', 'B', { exclusive: false });
    l.send('B', 'B1', { by: planner, area: [snap('B')] });
    l.send('B', 'B2', { by: planner, exclusive: false });
    const fx = l.reply('B', 'B2', 'helper', 'answer', trig('B'));
    expect(ofType(fx, 'start')).toEqual([{ type: 'start', operation: 'B', triggers: [trig('B')], token: null, notice: null }]);
    expect(l.state.queue.map((e) => e.operation)).toEqual(['B']);
  }],
  ['L18 an answer into a parked operation wakes a session that waits for the copy: first in line, ahead of commissions, and started only once its work is back', (l) => {
    contentionParkPending(l);
    l.parked('A');
    l.send('C', 'C');
    // Bob answers the question A's coder had asked him: its session is woken, and waits for the copy.
    const area = [snap('A', { proc: 'ended' }), snap('A1', { parent: 'A', opener: 'coder', person: true, proc: 'none' })];
    const fx = l.feed({ type: 'reply', operation: 'A', thread: 'A1', by: bob, outcome: 'answer', wakes: trig('A'), root: alice, area, facts: l.world() });
    expect(startedThreads(fx)).toEqual([]);
    expect(ofType(fx, 'queued')).toEqual([{ type: 'queued', operation: 'A', thread: 'A', position: 1, holder: { operation: 'B', thread: 'B' } }]);
    expect(l.state.queue.map((e) => e.operation)).toEqual(['A', 'C']);
    expect(l.state.areas.A!.threads.A1).toMatchObject({ owing: false });
    // A commission that arrives later still queues behind the woken operation.
    l.send('D', 'D');
    expect(l.state.queue.map((e) => e.operation)).toEqual(['A', 'C', 'D']);
    const grant = l.reply('B', 'B', 'coder', 'answer');
    expect(grant.map((e) => e.type)).toEqual(['fence', 'restore']);
    expect(ofType(l.restored('A', 'NOTICE'), 'start')).toEqual([{ type: 'start', operation: 'A', triggers: [trig('A')], token: 3, notice: 'NOTICE' }]);
    expect(startedThreads(l.reply('A', 'A', 'coder', 'answer'))).toEqual(['C']);
  }],
  ['L18 an answer into an operation whose work is being put back waits for the restore', (l) => {
    contentionParkPending(l);
    l.parked('A');
    l.send('A', 'A2', { by: { handle: 'coder', session: 's-A' }, area: [snap('A', { owing: false, proc: 'ended' })] });
    l.reply('B', 'B', 'coder', 'answer');
    expect(l.state.holder).toMatchObject({ operation: 'A', ready: false });
    l.send('A', 'A3', { by: { handle: 'coder', session: 's-A' }, exclusive: false, person: true, noTrigger: true });
    expect(startedThreads(l.reply('A', 'A3', 'bob', 'answer', trig('A')))).toEqual([]);
    expect(startedThreads(l.restored('A'))).toEqual(['A2', 'A']);
  }],
  ['fencing: tokens only grow from grant to grant, and every start under a grant carries its token', (l) => {
    const tokens: number[] = [];
    for (const op of ['A', 'B', 'C']) {
      const fx = l.send(op, op);
      tokens.push(ofType(fx, 'fence')[0]!.token);
      expect(ofType(fx, 'start')[0]!.token).toBe(tokens[tokens.length - 1]);
      l.reply(op, op, 'coder', 'answer');
    }
    expect(tokens).toEqual([1, 2, 3]);
  }],
  ['fencing: a grant fences the token ref before it restores or starts anything', (l) => {
    contentionParkPending(l);
    const fx = l.parked('A');
    expect(fx[0]).toEqual({ type: 'fence', operation: 'B', token: 2 });
  }],
  ['fencing: a park result under a token that is not the pending one is ignored', (l) => {
    contentionParkPending(l);
    const before = l.state;
    const fx = l.feed({ type: 'park_result', operation: 'A', token: 7, result: { outcome: 'refused_unpassable', why: 'x' } });
    expect(fx).toEqual([]);
    expect(l.state).toEqual(before);
  }],
  ['fencing: a restore result for a grant that has moved on is ignored', (l) => {
    contentionParkPending(l);
    l.parked('A');
    l.send('A', 'A', { area: [snap('A', { owing: false })] });
    l.reply('B', 'B', 'coder', 'answer');
    const fx = l.feed({ type: 'restore_result', operation: 'A', token: 2, result: { applied: true, notice: 'stale' } });
    expect(startedThreads(fx)).toEqual([]);
    expect(l.state.holder).toMatchObject({ operation: 'A', token: 3, ready: false });
  }],
];

describe('working-copy lease rules', () => {
  it.each(rows)('%s', (_name, run) => run(new Lease()));

  it('every rule L1-L18 has a row', () => {
    for (let n = 1; n <= 18; n++) expect(rows.some(([name]) => name.startsWith(`L${n} `))).toBe(true);
  });
});
