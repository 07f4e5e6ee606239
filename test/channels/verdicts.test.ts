// What a reply, an ask from above or a step's start writes; refusals by code; depth across many rounds.
import { describe, expect, it } from 'vitest';
import { isNexusError } from '../../protocol/errors.js';
import {
  decide,
  needsRework,
  openRound,
  reask,
  renderRoundLine,
  roundStatus,
  stepAnswered,
  stepSkippedWarning,
  tickUnscheduled,
  windowFor,
  type Board,
} from '../../node-agent/capabilities/channels/index.js';
import { DEPTH_CAP } from '../../node-agent/capabilities/threads/depth.js';
import { RoundBuilder } from './build.js';
import { channel, CHANNELS, play, ROUND, T0 } from './sim.js';

function codeOf(f: () => unknown): string | null {
  try {
    f();
    return null;
  } catch (err) {
    if (!isNexusError(err)) throw err;
    return err.code;
  }
}

describe('--needs-rework', () => {
  const r = new RoundBuilder(CHANNELS.review).start(0).done(0).start(1);
  const p = new RoundBuilder(CHANNELS.panel).start(0).done(0).start(1).answer(1).start(2).done(2).start(3);
  it.each<[string, () => unknown, string | null]>([
    ['the reviewer, whose step declares rework: coder', () => needsRework(r.b, r.thread(1)), null],
    ['the coder, whose step declares none', () => needsRework(r.b, r.thread(0)), 'REWORK_NOT_DECLARED'],
    ['a thread that is no step of the round', () => needsRework(r.b, 't-ELSEWHERE'), 'REWORK_NOT_DECLARED'],
    ['a thread outside any round', () => needsRework(null, 't-ELSEWHERE'), 'REWORK_NOT_DECLARED'],
    ['a fan-out member', () => needsRework(p.b, p.thread(0)), 'REWORK_NOT_DECLARED'],
    ['the owner', () => needsRework(p.b, p.thread(3)), 'REWORK_NOT_DECLARED'],
  ])('from %s: %s', (_who, f, code) => {
    expect(codeOf(f)).toBe(code);
  });

  it('names the step the work goes back to', () => {
    expect(needsRework(r.b, r.thread(1))).toBe('coder');
  });

  it('records the reply only while the step is waiting for one', () => {
    const late = new RoundBuilder(CHANNELS.review).start(0, { windowMin: 1 }).lapse(0);
    expect(stepAnswered(late.b, late.thread(0), { message: 'm-LATE', author: 'aaaa/coder', outcome: 'answer' })).toBeNull();
    expect(stepAnswered(r.b, r.thread(1), { message: 'm-1', author: 'aaaa/reviewer', outcome: 'needs_rework' })?.body).toMatchObject({ pass: 1, step: 1, outcome: 'needs_rework' });
  });
});

describe('the requester writing in the round thread', () => {
  const done = () => {
    const x = new RoundBuilder(CHANNELS.review).start(0).done(0, 'escalate');
    return x.emit({ kind: 'round.completed', body: { round: ROUND, pass: 1, outcome: 'escalated', reason: 'escalation', message: 'm-R', boundary: 'nx-1' } });
  };
  it.each<[string, () => Board, { handle: string; session: string | null }, unknown]>([
    ['the requester after the result asks again', () => done().b, { handle: 'aaaa/lead', session: 's-REQUESTER' }, { kind: 'reask', pass: 2 }],
    ['the requester while the round runs only posts', () => new RoundBuilder(CHANNELS.review).start(0).b, { handle: 'aaaa/lead', session: 's-REQUESTER' }, { kind: 'posted_only', reason: 'round_running' }],
    ['somebody else only posts', () => done().b, { handle: 'bob', session: null }, { kind: 'posted_only', reason: 'not_requester' }],
    ['another session under the same handle only posts', () => done().b, { handle: 'aaaa/lead', session: 's-OTHER' }, { kind: 'posted_only', reason: 'not_requester' }],
    [
      'a person who asked, after the result, asks again',
      () => new RoundBuilder(CHANNELS.review, { handle: 'alice', session: null, depth: 0 }).start(0).done(0).start(1).done(1).start(2).done(2).emit({ kind: 'round.completed', body: { round: ROUND, pass: 1, outcome: 'answered', reason: 'answered', message: 'm-R', boundary: 'nx-1' } }).b,
      { handle: 'alice', session: null },
      { kind: 'reask', pass: 2 },
    ],
  ])('%s', (_what, board, author, expected) => {
    expect(reask(board(), author)).toEqual(expected);
  });

  it('asking again re-declares the round from the channel as it reads now and restarts in new step threads', () => {
    const x = done();
    const edited = channel('review', 'steps:\n  - role: coder\n  - role: reviewer\n    rework: coder\n');
    x.emit({ kind: 'round.reasked', body: { round: ROUND, pass: 2, message: 'm-AGAIN', channel: { ...edited } } });
    expect(x.b.channel.steps.map((s) => s.name)).toEqual(['coder', 'reviewer']);
    expect(x.b.completed).toBeNull();
    const [first] = decide(x.b, T0).start;
    expect(first).toMatchObject({ name: 'coder', pass: 2 });
  });
});

describe('depth', () => {
  it('steps open one hop below the requester, and a hundred rounds leave it where it was', () => {
    let depths: number[] = [];
    for (let round = 0; round < 100; round++) {
      const run = play(CHANNELS.review, [
        { action: 0, pick: 0, flag: 0, minutes: 0 },
        { action: 5, pick: 0, flag: 0, minutes: 0 },
        { action: 0, pick: 0, flag: round % 4 === 0 ? 2 : 0, minutes: 0 },
        { action: 5, pick: 0, flag: 0, minutes: 0 },
      ], 5);
      depths = depths.concat(run.depths);
      expect(run.final.requester.depth).toBe(5);
    }
    expect(depths.length).toBeGreaterThan(200);
    expect(new Set(depths)).toEqual(new Set([6]));
  });

  it('a round whose steps would open past the cap is refused before anything is written', () => {
    const open = (depth: number) => () => openRound({ channel: CHANNELS.review, round: ROUND, requester: { handle: 'aaaa/lead', session: 's-1', depth }, ask: 'm-1' });
    expect(codeOf(open(DEPTH_CAP - 1))).toBeNull();
    expect(codeOf(open(DEPTH_CAP))).toBe('DEPTH_EXCEEDED');
  });
});

describe('windows come from the declarations', () => {
  const ch = channel('w', 'steps:\n  - role: a\n    timeout: 5m\n  - role: b\ntimeout: 1h\n');
  const bare = channel('bare', 'members: [a]\n');
  it.each<[string, Board, number, number | null, number | null]>([
    ["the step's own timeout", new RoundBuilder(ch).b, 0, 120_000, 300_000],
    ["the channel's timeout", new RoundBuilder(ch).b, 1, 120_000, 3_600_000],
    ["the persona's timeout", new RoundBuilder(bare).b, 0, 120_000, 120_000],
    ['none at all', new RoundBuilder(bare).b, 0, null, null],
  ])('%s', (_what, b, step, persona, expected) => {
    const s = { round: ROUND, pass: 1, step, name: '', kind: 'member' as const, address: '', workspace: null, role: '', held: false };
    expect(windowFor(b, s, persona)).toBe(expected);
  });
});

describe('authority', () => {
  it("another workspace's round ops do not move the board", () => {
    const x = new RoundBuilder(CHANNELS.review).start(0);
    const before = x.b;
    x.emit({ kind: 'step.answered', body: { round: ROUND, pass: 1, step: 0, message: 'm-FORGED', author: 'aaaa/coder', outcome: 'answer' } }, 'bbbbbbbbbbbbbbbbbbbbbbbbbb');
    x.emit({ kind: 'round.completed', body: { round: ROUND, pass: 1, outcome: 'answered', reason: 'answered', message: 'm-F', boundary: 'nx-f' } }, 'bbbbbbbbbbbbbbbbbbbbbbbbbb');
    expect(x.b).toEqual(before);
  });
});

describe('status', () => {
  it('shows the current run in declared order with each step state, window and pass', () => {
    const x = new RoundBuilder(CHANNELS.review).start(0).done(0).start(1, { windowMin: 30 });
    const s = roundStatus(x.b);
    expect(s.steps.map((st) => [st.name, st.state, st.running])).toEqual([
      ['coder', 'answered', false],
      ['reviewer', 'running', true],
      ['tester', 'pending', false],
    ]);
    expect(s).toMatchObject({ channel: 'review', state: 'running', pass: 1, passes_used: 1, passes_limit: 3, next_deadline: '2026-03-01T10:30:00.000Z', holds_hand_back: false });
    expect(renderRoundLine(s)).toBe('#review running · coder answered · reviewer running (until 10:30:00Z) · tester pending');
  });

  it('marks steps never reached and the hand-back that holds', () => {
    const x = new RoundBuilder(CHANNELS.review).start(0).done(0, 'escalate');
    x.emit({ kind: 'round.completed', body: { round: ROUND, pass: 1, outcome: 'escalated', reason: 'escalation', message: 'm-R', boundary: 'nx-b' } });
    const s = roundStatus(x.b);
    expect(s.steps.map((st) => st.state)).toEqual(['escalated', 'not_reached', 'not_reached']);
    expect(s).toMatchObject({ state: 'escalated', reason: 'escalation', holds_hand_back: true, boundary: 'nx-b' });
    expect(renderRoundLine(s)).toContain('reply in this thread to ask again');
  });
});

describe('warnings', () => {
  it.each<[string, boolean, boolean, string | null]>([
    ['not registered with a node', false, false, 'not_registered'],
    ['registered, no node running', true, false, 'no_node'],
    ['served by a running node', true, true, null],
  ])('an open window when %s: tick_unscheduled %s', (_what, registered, running, reason) => {
    const x = new RoundBuilder(CHANNELS.review).start(0, { windowMin: 30 });
    const w = tickUnscheduled(x.b, { registered, running });
    expect(w?.reason ?? null).toBe(reason);
    if (w !== null) expect(w).toMatchObject({ class: 'tick_unscheduled', round: ROUND, step: 'coder' });
  });

  it('no open window, no tick_unscheduled', () => {
    expect(tickUnscheduled(new RoundBuilder(CHANNELS.review).start(0).b, { registered: false, running: false })).toBeNull();
  });

  it('step_skipped names the round, the step and its reason', () => {
    const x = new RoundBuilder(CHANNELS.review);
    expect(stepSkippedWarning(x.b, x.ref(0), 'persona_missing', 'its declaration is gone')).toMatchObject({ class: 'step_skipped', reason: 'persona_missing', round: ROUND, step: 'coder', role: 'coder' });
  });
});
