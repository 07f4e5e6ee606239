// A round driven the way the engine drives it, from a script: the ops it logs and the board after each.
import { applyBoardOp, decide, parseChannel, resultEffect, roundCompleted, stepAnswered, stepEnded, stepStarted, openRound, reask, reasked, stepAdmitted, windowFor } from '../../node-agent/capabilities/channels/index.js';
import type { Board, BoardOp, Channel, ChannelOpPayload, StepRef } from '../../node-agent/capabilities/channels/index.js';

export const WS = 'aaaaaaaaaaaaaaaaaaaaaaaaaa';
export const ROUND = 't-01JROUND00000000000000000';
export const T0 = new Date('2026-03-01T10:00:00.000Z');

/** A channel from YAML text, exactly as the loader would take it. */
export function channel(name: string, yaml: string): Channel {
  const out = parseChannel(`.nxs-channels/${name}.yaml`, name, yaml);
  if (!('channel' in out)) throw new TypeError(`test channel ${name} is invalid: ${JSON.stringify(out.problems)}`);
  return out.channel;
}

/** The channels the properties run against: each exercises a different part of the board. */
export const CHANNELS = {
  wide: channel('wide', `members: [${Array.from({ length: 11 }, (_, i) => `m${i}`).join(', ')}]\ntimeout: 10m\n`),
  review: channel('review', 'steps:\n  - role: coder\n    timeout: 30m\n  - role: reviewer\n    rework: coder\n  - role: tester\n    rework: coder\npasses: 3\n'),
  panel: channel('panel', 'members: [pm, zz77aaaaaaaaaaaaaaaaaaaaaa/critic, designer]\nowner: lead\ntimeout: 1h\n'),
  chain: channel('chain', 'members: [planner, coder]\nflow: sequential\nowner: lead\n'),
};

/** One scripted move: what happens next, to which step, with which choice. */
/** `action` 0-4 a reply, 5-8 a session end, 9 time passes, 10 an admission, 11 an ask from above, 12 a promotion. */
export type Move = { action: number; pick: number; flag: number; minutes: number };

export type Run = { ops: BoardOp[]; boards: Board[]; final: Board; depths: number[] };

/**
 * Plays a script against a channel. After every event it asks `decide` what the board wants and
 * does it, as the engine will: writes lapses and reworks, starts (or holds, or skips) what it may
 * start, and completes the round with a result message.
 */
export function play(ch: Channel, moves: readonly Move[], requesterDepth = 2): Run {
  let lamport = 0;
  let seq = 0;
  let now = T0;
  const ops: BoardOp[] = [];
  const boards: Board[] = [];
  const depths: number[] = [];
  let board: Board | null = null;
  const emit = (payload: ChannelOpPayload) => {
    lamport += 1;
    const op = { ...payload, id: `01J${String(lamport).padStart(23, '0')}`, workspace: WS, lamport } as BoardOp;
    ops.push(op);
    board = applyBoardOp(board, op);
    boards.push(board!);
    if (op.kind === 'step.started') depths.push(op.body.depth);
  };
  const fresh = (p: string) => `${p}-${String(++seq).padStart(26, '0')}`;
  const start = (s: StepRef, how: number) => {
    const b = board!;
    if (how % 7 === 5 && !s.held) return emit({ kind: 'step.held', body: { round: b.round, pass: s.pass, step: s.step, reason: 'lease_queued', message: 'waiting for the working copy' } });
    if (how % 7 === 6) return emit({ kind: 'step.skipped', body: { round: b.round, pass: s.pass, step: s.step, reason: 'start_failed', message: 'spawn failed' } });
    const remote = s.workspace !== null;
    emit(stepStarted(b, s, { thread: fresh('t'), session: remote ? null : fresh('s'), handle: `${remote ? 'zz77' : 'aaaa'}/${s.role}`, now, windowMs: windowFor(b, s, null), onHold: remote }));
    // Written, then the process would not start (or the other workspace refused the commission).
    if (how % 11 === 10) emit({ kind: 'step.skipped', body: { round: b.round, pass: s.pass, step: s.step, reason: remote ? 'STAMP_UNTRUSTED' : 'start_failed', message: 'not started' } });
  };
  const settle = (how: number) => {
    for (let guard = 0; guard < 50; guard++) {
      const d = decide(board!, now);
      for (const op of d.ops) emit(op);
      if (d.complete !== null) {
        emit(roundCompleted(board!, d.complete, { message: fresh('m'), boundary: `nx-${seq}` }));
        resultEffect(d.complete);
        return;
      }
      if (d.start.length === 0) return;
      for (const s of d.start) start(s, how + s.step);
      // A held step is not retried until something changes (the lease promoting it): stop here.
      if (d.start.every((s) => board!.steps[`${s.pass}:${s.step}`]?.state === 'held')) return;
    }
  };
  emit(openRound({ channel: ch, round: ROUND, requester: { handle: 'aaaa/lead', session: 's-REQUESTER', depth: requesterDepth }, ask: 'm-ASK' }));
  settle(0);
  for (const m of moves) {
    const b: Board = board!;
    const records = Object.values(b.steps).sort((x, y) => x.pass - y.pass || x.step - y.step);
    const choose = <T>(xs: T[]): T | undefined => (xs.length === 0 ? undefined : xs[m.pick % xs.length]);
    // Replies and session ends are the common events; time, admissions, asks and promotions rarer.
    const what = m.action <= 4 ? 'reply' : m.action <= 8 ? 'end' : (['time', 'admit', 'ask'] as const)[m.action - 9] ?? 'promote';
    switch (what) {
      case 'reply': {
        // A running step's session replies: an answer, a hand-back, or (where declared) --needs-rework.
        const r = choose(records.filter((r) => r.state === 'running'));
        if (!r) break;
        const canRework = b.channel.steps[r.step]?.rework != null;
        const outcome = m.flag % 3 === 2 && canRework ? 'needs_rework' : m.flag % 9 === 8 ? 'escalate' : 'answer';
        const op = stepAnswered(b, r.thread!, { message: fresh('m'), author: r.handle!, outcome });
        if (op) emit(op);
        break;
      }
      case 'end': {
        // A step's session announces its end.
        const r = choose(records.filter((r) => r.session !== null && !r.ended));
        const op = r ? stepEnded(b, r.session!) : null;
        if (op) emit(op);
        break;
      }
      case 'time':
        now = new Date(now.getTime() + m.minutes * 60_000);
        break;
      case 'admit': {
        // The other workspace admits a member that was on hold.
        const r = choose(records.filter((r) => r.state === 'on_hold'));
        const op = r ? stepAdmitted(b, r.thread!, fresh('s')) : null;
        if (op) emit(op);
        break;
      }
      case 'ask': {
        // The requester writes in the round's thread: after the result, that asks again.
        if (m.flag % 3 !== 0) break;
        const v = reask(b, { handle: 'aaaa/lead', session: 's-REQUESTER' });
        if (v.kind === 'reask') emit(reasked(b, ch, fresh('m')));
        break;
      }
      case 'promote': {
        // The lease promotes the round's claim: held steps are started.
        const held = records.filter((r) => r.state === 'held');
        if (held.length === 0) break;
        const d = decide(b, now);
        for (const op of d.ops) emit(op);
        if (d.complete === null) for (const s of d.start) start(s, 0);
        break;
      }
    }
    settle(m.flag);
  }
  return { ops, boards, final: board!, depths };
}
