// The round's decisions, by table: what starts next, what lapsed, when it is done, rework and the pass limit.
import { describe, expect, it } from 'vitest';
import {
  completion,
  decide,
  lapsedAt,
  nextDeadline,
  nextStartable,
  onHoldAtBoundary,
  outstandingWindows,
  holdsForHandBack,
  runRecord,
} from '../../node-agent/capabilities/channels/index.js';
import { RoundBuilder } from './build.js';
import { channel, CHANNELS, T0 } from './sim.js';

const names = (rb: RoundBuilder) => nextStartable(rb.b).map((s) => `${s.name}${s.held ? '(held)' : ''}`);
const review = () => new RoundBuilder(CHANNELS.review);
const wide = () => new RoundBuilder(CHANNELS.wide);
const panel = () => new RoundBuilder(CHANNELS.panel);
const minutes = (n: number) => new Date(T0.getTime() + n * 60_000);

describe('an ordered flow starts its steps one at a time', () => {
  it.each([
    ['nothing has started', ['coder'], (r: RoundBuilder) => r],
    ['the first step runs', [], (r: RoundBuilder) => r.start(0)],
    ['the first step answered, its session still running', [], (r: RoundBuilder) => r.start(0).answer(0)],
    ['the first step answered and its session ended', ['reviewer'], (r: RoundBuilder) => r.start(0).done(0)],
    ['the first step lapsed, its session still running', [], (r: RoundBuilder) => r.start(0, { windowMin: 5 }).lapse(0)],
    ['the first step lapsed and its session ended', ['reviewer'], (r: RoundBuilder) => r.start(0, { windowMin: 5 }).lapse(0).end(0)],
    ['the first step ended without answering (still owed)', [], (r: RoundBuilder) => r.start(0).end(0)],
    ['the first step is held to be retried', ['coder(held)'], (r: RoundBuilder) => r.held(0)],
    ['the first step was skipped', ['reviewer'], (r: RoundBuilder) => r.skip(0)],
    ['the first step started and then its process could not be started', ['reviewer'], (r: RoundBuilder) => r.start(0).skip(0)],
    ['the first step was held, then skipped', ['reviewer'], (r: RoundBuilder) => r.held(0).skip(0)],
    ['the second step is held', ['reviewer(held)'], (r: RoundBuilder) => r.start(0).done(0).held(1)],
    ['two steps are done', ['tester'], (r: RoundBuilder) => r.start(0).done(0).start(1).done(1)],
    ['every step is done', [], (r: RoundBuilder) => r.start(0).done(0).start(1).done(1).start(2).done(2)],
  ])('when %s, it may start %j', (_what, expected, setup) => {
    expect(names(setup(review()))).toEqual(expected);
  });

  it('never has two steps of one run in flight, whatever order the table above runs in', () => {
    const r = review().start(0).answer(0);
    expect(nextStartable(r.b)).toEqual([]);
    r.end(0).start(1);
    expect(nextStartable(r.b)).toEqual([]);
  });
});

describe('a fan-out round starts its members together, at most eight at once', () => {
  it.each([
    ['nothing has started', ['m0', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7'], (r: RoundBuilder) => r],
    ['eight run', [], (r: RoundBuilder) => [0, 1, 2, 3, 4, 5, 6, 7].reduce((x, i) => x.start(i), r)],
    ['eight run and one answered, its session still running', [], (r: RoundBuilder) => [0, 1, 2, 3, 4, 5, 6, 7].reduce((x, i) => x.start(i), r).answer(3)],
    ['eight ran and one is over', ['m8'], (r: RoundBuilder) => [0, 1, 2, 3, 4, 5, 6, 7].reduce((x, i) => x.start(i), r).done(3)],
    ['eight ran and three are over', ['m8', 'm9', 'm10'], (r: RoundBuilder) => [0, 1, 2, 3, 4, 5, 6, 7].reduce((x, i) => x.start(i), r).done(0).done(5).done(7)],
    ['six run and two were skipped', ['m8', 'm9'], (r: RoundBuilder) => [0, 1, 2, 3, 4, 5].reduce((x, i) => x.start(i), r).skip(6).skip(7)],
    ['a held member waits with the others, in declared order', ['m1(held)', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7'], (r: RoundBuilder) => r.held(1).start(0)],
  ])('when %s, it may start %j', (_what, expected, setup) => {
    expect(names(setup(wide()))).toEqual(expected);
  });

  it('counts a lapsed member whose session still runs against the eight', () => {
    const r = [0, 1, 2, 3, 4, 5, 6, 7].reduce((x, i) => x.start(i, { windowMin: 10 }), wide());
    const d = decide(r.b, minutes(10));
    expect(d.ops.filter((o) => o.kind === 'step.lapsed')).toHaveLength(8);
    expect(d.start).toEqual([]);
    expect(d.stop.map((s) => s.step)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});

describe('the owner folds the round once every member settled', () => {
  it.each([
    ['every member answered', ['lead'], (r: RoundBuilder) => r.start(0).done(0).start(1).answer(1).start(2).done(2)],
    ['a member still runs', [], (r: RoundBuilder) => r.start(0).done(0).start(1).start(2).done(2)],
    ['one member handed back', [], (r: RoundBuilder) => r.start(0).done(0, 'escalate').start(1).answer(1).start(2).done(2)],
    ['nobody answered', [], (r: RoundBuilder) => r.skip(0).start(1, { windowMin: 1 }).lapse(1).skip(2)],
    ['one answered, the others lapsed or were skipped', ['lead'], (r: RoundBuilder) => r.skip(0).start(1, { windowMin: 1 }).lapse(1).start(2).done(2)],
  ])('when %s, it may start %j', (_what, expected, setup) => {
    expect(names(setup(panel()))).toEqual(expected);
  });
});

describe('completion', () => {
  const allDone = (r: RoundBuilder) => r.start(0).done(0).start(1).answer(1).start(2).done(2);
  it.each([
    ['a fan-out with a member still running', null, () => panel().start(0).done(0).start(1)],
    ['a fan-out where a member handed back', { outcome: 'escalated', reason: 'escalation' }, () => panel().start(0).done(0, 'escalate').start(1).answer(1).start(2).done(2)],
    ['a fan-out where nobody answered', { outcome: 'escalated', reason: 'nobody_answered' }, () => panel().skip(0).skip(1).skip(2)],
    ['a fan-out whose owner has not folded yet', null, () => allDone(panel())],
    ['a fan-out whose owner folded', { outcome: 'answered', reason: 'folded' }, () => allDone(panel()).start(3).done(3)],
    ['a fan-out whose owner handed back', { outcome: 'escalated', reason: 'escalation' }, () => allDone(panel()).start(3).done(3, 'escalate')],
    ['a fan-out whose owner lapsed', { outcome: 'answered', reason: 'owner_unanswered' }, () => allDone(panel()).start(3, { windowMin: 1 }).lapse(3)],
    ['a fan-out without an owner, all answered', { outcome: 'answered', reason: 'answered' }, () => new RoundBuilder(channel('duo', 'members: [a, b]\n')).start(0).done(0).start(1).done(1)],
    ['an ordered run where a step handed back (later steps never start)', { outcome: 'escalated', reason: 'escalation' }, () => review().start(0).answer(0, 'escalate')],
    ['an ordered run half way', null, () => review().start(0).done(0)],
    ['an ordered run whose every step answered', { outcome: 'answered', reason: 'answered' }, () => review().start(0).done(0).start(1).done(1).start(2).done(2)],
    ['an ordered run where a step lapsed and the rest answered', { outcome: 'answered', reason: 'answered' }, () => review().start(0, { windowMin: 1 }).lapse(0).end(0).start(1).done(1).start(2).done(2)],
  ])('%s: %j', (_what, expected, setup) => {
    expect(completion(setup().b)).toEqual(expected);
  });

  it('an escalating round is never folded, even with an owner declared', () => {
    const r = panel().start(0).done(0).start(1).answer(1, 'escalate').start(2).done(2);
    expect(nextStartable(r.b).map((s) => s.kind)).not.toContain('owner');
    expect(decide(r.b, T0).complete).toEqual({ outcome: 'escalated', reason: 'escalation' });
  });
});

describe('windows', () => {
  it.each([
    ['before the deadline', 29, []],
    ['at the deadline', 30, ['coder']],
    ['after the deadline', 31, ['coder']],
  ])('%s, the lapsed steps are %j', (_what, at, expected) => {
    const r = review().start(0, { windowMin: 30 });
    expect(lapsedAt(r.b, minutes(at)).map((s) => r.b.channel.steps[s.step]!.name)).toEqual(expected);
  });

  it('records the deadline when the step starts, from the window it had then', () => {
    const r = review().start(0, { windowMin: 30, at: minutes(7) });
    expect(r.b.steps['1:0']).toMatchObject({ window_ms: 30 * 60_000, deadline: minutes(37).toISOString(), started_at: minutes(7).toISOString() });
  });

  it('a lapse warns step_unanswered naming the step, and the run goes on once the session is over', () => {
    const r = review().start(0, { windowMin: 30 });
    const d = decide(r.b, minutes(45));
    expect(d.warnings).toEqual([expect.objectContaining({ class: 'step_unanswered', step: 'coder', round: r.b.round, thread: r.thread(0) })]);
    expect(d.ops).toEqual([{ kind: 'step.lapsed', body: expect.objectContaining({ pass: 1, step: 0 }) }]);
    expect(d.stop.map((s) => s.step)).toEqual([0]);
    expect(d.start).toEqual([]);
    for (const op of d.ops) r.emit(op);
    r.end(0);
    expect(decide(r.b, minutes(45)).start.map((s) => s.name)).toEqual(['reviewer']);
  });

  it('an answer after the lapse moves nothing', () => {
    const r = review().start(0, { windowMin: 1 }).lapse(0).answer(0);
    expect(r.b.steps['1:0']!.state).toBe('lapsed');
  });

  it('a step without a window makes the bound flat, and the earliest open deadline is the next tick', () => {
    const r = panel().start(0, { windowMin: 20 }).start(1, { windowMin: 10, remote: true });
    expect(outstandingWindows(r.b)).toEqual({ deadlines: [minutes(10).toISOString(), minutes(20).toISOString()], unbounded: false });
    expect(nextDeadline(r.b)).toBe(minutes(10).toISOString());
    r.start(2);
    expect(outstandingWindows(r.b).unbounded).toBe(true);
  });

  it('a member whose commission the other workspace refused is skipped, and the round goes on without it', () => {
    const r = panel().start(0).done(0).start(1, { windowMin: 10, remote: true }).skip(1, 'STAMP_UNTRUSTED').start(2).done(2);
    expect(r.b.steps['1:1']).toMatchObject({ state: 'skipped', reason: 'STAMP_UNTRUSTED', thread: r.thread(1) });
    expect(onHoldAtBoundary(r.b)).toEqual([]);
    expect(nextStartable(r.b).map((s) => s.kind)).toEqual(['owner']);
  });

  it('a member of another workspace is on hold at the availability boundary until admitted', () => {
    const r = panel().start(1, { windowMin: 10, remote: true });
    expect(onHoldAtBoundary(r.b).map((s) => s.step)).toEqual([1]);
    r.emit({ kind: 'step.admitted', body: { round: r.b.round, pass: 1, step: 1, session: 's-REMOTE' } });
    expect(onHoldAtBoundary(r.b)).toEqual([]);
    expect(r.b.steps['1:1']).toMatchObject({ state: 'running', session: 's-REMOTE' });
  });
});

describe('rework and the pass limit', () => {
  it('--needs-rework sends the work back to the declared step in a new pass', () => {
    const r = review().start(0).done(0).start(1).answer(1, 'needs_rework');
    const d = decide(r.b, T0);
    expect(d.ops).toEqual([{ kind: 'round.reworked', body: { round: r.b.round, pass: 2, from: { pass: 1, step: 1 }, to_step: 0, message: 'm-P1S1' } }]);
    expect(d.start).toEqual([]); // the reviewer's session is not over yet
    for (const op of d.ops) r.emit(op);
    r.end(1, 1);
    expect(nextStartable(r.b).map((s) => [s.name, s.pass])).toEqual([['coder', 2]]);
  });

  it('a step before the rework target carries its answer over into the new pass', () => {
    const r = new RoundBuilder(channel('abc', 'steps:\n  - role: a\n  - role: b\n  - role: c\n    rework: b\n'));
    r.start(0).done(0).start(1).done(1).start(2).done(2, 'needs_rework');
    for (const op of decide(r.b, T0).ops) r.emit(op);
    expect(r.b.pass).toBe(2);
    expect(runRecord(r.b, 0)).toMatchObject({ pass: 1, state: 'answered' });
    expect(runRecord(r.b, 1)).toBeNull();
    expect(nextStartable(r.b).map((s) => [s.name, s.pass])).toEqual([['b', 2]]);
  });

  it('when the passes run out, the round is handed back as an escalation carrying the open points', () => {
    const r = review();
    for (let pass = 1; pass <= 3; pass++) {
      r.start(0).done(0).start(1).done(1, 'needs_rework');
      const d = decide(r.b, T0);
      if (pass < 3) {
        expect(d.complete).toBeNull();
        for (const op of d.ops) r.emit(op);
      } else {
        expect(d.ops).toEqual([]);
        expect(d.complete).toEqual({ outcome: 'escalated', reason: 'pass_limit' });
      }
    }
  });

  it.each([1, 2, 5])('passes: %i bounds the loop at that many passes', (passes) => {
    const r = new RoundBuilder(channel('loop', `steps:\n  - role: coder\n  - role: reviewer\n    rework: coder\npasses: ${passes}\n`));
    let reworks = 0;
    for (;;) {
      r.start(0).done(0).start(1).done(1, 'needs_rework');
      const d = decide(r.b, T0);
      if (d.complete !== null) break;
      reworks++;
      for (const op of d.ops) r.emit(op);
    }
    expect(reworks).toBe(passes - 1);
  });

  it('an escalated result holds for a hand-back until the requester asks again', () => {
    const r = review().start(0).done(0, 'escalate');
    r.emit({ kind: 'round.completed', body: { round: r.b.round, pass: 1, outcome: 'escalated', reason: 'escalation', message: 'm-R', boundary: 'nx-1' } });
    expect(holdsForHandBack(r.b)).toBe(true);
    r.emit({ kind: 'round.reasked', body: { round: r.b.round, pass: 2, message: 'm-AGAIN', channel: r.b.channel } });
    expect(holdsForHandBack(r.b)).toBe(false);
    expect(nextStartable(r.b).map((s) => [s.name, s.pass])).toEqual([['coder', 2]]);
  });
});
