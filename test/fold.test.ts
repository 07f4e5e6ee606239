// The op log's pure fold, and the store's append/ingest keeping each operation's fold equal to it.
import fc from 'fast-check';
import { eq } from 'drizzle-orm';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { randomUlid } from '../protocol/ids.js';
import { opSigner } from '../crypto/index.js';
import { afterAll, beforeAll, describe, expect, it, inject, vi } from 'vitest';
import { undoMigrationsAfter } from './helpers/migrations.js';
import type { Author, MessageEffect, Op, OpPayload } from '../protocol/ops.js';
import { compareOps } from '../protocol/ops.js';
import { appendOps, ingestOps as ingestInto, rowToOp } from '../node-agent/kernel/index.js';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import {
  appliesInOrder,
  applyOp,
  emptyOperation,
  foldOperation,
  foldRun,
  foldStep,
  isFinished,
  loadOperation,
  openSubRounds,
  withParts,
  type OperationState,
} from '../node-agent/capabilities/threads/index.js';
import { createStore, openStore, tables, type Store } from '../node-agent/adapters/store/index.js';
import { preparedStatements, statementsRun } from './helpers/statements-run.js';

// ---------------------------------------------------------------------------------------------
// Building realistic op sequences: a small simulator that emits what the engine would emit.
// ---------------------------------------------------------------------------------------------

const WS_A = 'aaaaaaaaaaaaaaaaaaaaaaaaaa';
const WS_B = 'bbbbbbbbbbbbbbbbbbbbbbbbbb';
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ROLES = ['coder', 'reviewer', 'tester'] as const;
const ALICE: Author = { handle: 'alice', session: null };

function base32(n: number, width: number): string {
  let s = '';
  for (let i = 0; i < width; i++) {
    s = CROCKFORD[n % 32] + s;
    n = Math.floor(n / 32);
  }
  return s;
}

/** A fresh 9-character tag, so ids made by different runs (sharing one store) never collide. */
function freshTag(): string {
  return randomUlid().slice(10, 19);
}

/** One step of a scenario: what happens next, to whom, and a choice (escalate rather than answer, say). */
type Step = { action: number; pick: number; flag: boolean; gap: number };

const stepArb: fc.Arbitrary<Step> = fc.record({
  action: fc.nat({ max: 7 }),
  pick: fc.nat({ max: 50 }),
  flag: fc.boolean(),
  gap: fc.integer({ min: 1, max: 3 }),
});

const scriptArb = fc.array(stepArb, { minLength: 0, maxLength: 60 });

/**
 * Turns a script into the ops one operation's life would log: a person commissions a lead, sessions
 * commission sub-rounds, answer, escalate, get substituted, wait and are woken, and people follow up.
 * Lamports strictly increase (random gaps); ids are ULID-shaped and unique per `tag`.
 */
function buildOps(steps: readonly Step[], tag = '000000000'): Op[] {
  let seq = 0;
  let lamport = 0;
  const id = () => `0${tag}${base32(seq++, 16)}`;
  const ops: Op[] = [];
  const rootThread = `t-${id()}`;
  let state = emptyOperation(rootThread);
  let gap = 1;
  const emit = (thread: string | null, session: string | null, payload: OpPayload, workspace = WS_A) => {
    lamport += gap;
    gap = 1;
    const op = { id: id(), workspace, origin: 'test-host', lamport, ts: new Date(Date.UTC(2026, 0, 1, 0, 0, lamport)).toISOString(), operation: rootThread, thread, session, ...payload } as Op;
    ops.push(op);
    state = applyOp(state, op);
  };
  const post = (thread: string, author: Author, effect: MessageEffect, substituted = false, workspace = WS_A) =>
    emit(thread, author.session, {
      kind: 'message.posted',
      body: { message: `m-${id()}`, author, text: `${effect} by ${author.handle}`, effect, substituted, refs: { working_copy: null } },
    }, workspace);
  const startTurn = (sessionId: string, reason: 'commissioned' | 'answered' | 'follow_up') => {
    const s = state.sessions[sessionId]!;
    emit(s.thread, s.id, { kind: 'session.turn_started', body: { role: s.role, turn: s.turn + 1, reason, declaration_hash: `sha256:${s.role}` } });
  };
  const commission = (opener: Author, parent: string | null, role: string, depth: number, thread = `t-${id()}`) => {
    const handle = `aaaa/${role}`;
    emit(thread, null, { kind: 'thread.opened', body: { parent, subject: `${role} work`, opener, target: { kind: 'persona', role, handle } } });
    const sid = `s-${id()}`;
    emit(thread, sid, { kind: 'session.created', body: { role, handle, depth } });
    post(thread, opener, 'commission');
    startTurn(sid, 'commissioned');
  };
  const endTurn = (sessionId: string, outcome: 'replied' | 'waiting' | 'substituted') => {
    const s = state.sessions[sessionId]!;
    emit(s.thread, s.id, { kind: 'session.turn_ended', body: { turn: s.turn, outcome, exit_code: 0, signal: null, timed_out: false } });
  };
  const sessions = () => Object.values(state.sessions).sort((a, b) => (a.id < b.id ? -1 : 1));
  const threads = () => Object.values(state.threads).sort((a, b) => (a.id < b.id ? -1 : 1));
  const owes = (sid: string) => state.threads[state.sessions[sid]!.thread]!.state === 'open';
  const waiting = (sid: string) => openSubRounds(state, sid).length > 0;
  const authorOf = (sid: string): Author => ({ handle: state.sessions[sid]!.handle, session: sid });

  commission(ALICE, null, 'lead', 1, rootThread);
  for (const step of steps) {
    gap = step.gap;
    const choose = <T>(xs: T[]): T | undefined => (xs.length === 0 ? undefined : xs[step.pick % xs.length]);
    switch (step.action) {
      case 0: {
        // A running session commissions a sub-round, one hop deeper.
        const s = choose(sessions().filter((s) => s.in_turn && owes(s.id)));
        if (s) commission(authorOf(s.id), s.thread, ROLES[step.pick % ROLES.length]!, s.depth + 1);
        break;
      }
      case 1: {
        // A running session with nothing open below it answers (or hands back), then its turn ends.
        const s = choose(sessions().filter((s) => s.in_turn && owes(s.id) && !waiting(s.id)));
        if (!s) break;
        post(s.thread, authorOf(s.id), step.flag ? 'escalate' : 'answer');
        endTurn(s.id, 'replied');
        break;
      }
      case 2: {
        // A running session's process exits: it waits on its rounds, already replied, or is answered for.
        const s = choose(sessions().filter((s) => s.in_turn));
        if (!s) break;
        if (!owes(s.id)) endTurn(s.id, 'replied');
        else if (waiting(s.id)) endTurn(s.id, 'waiting');
        else {
          post(s.thread, authorOf(s.id), step.flag ? 'escalate' : 'answer', true);
          endTurn(s.id, 'substituted');
        }
        break;
      }
      case 3: {
        // A session whose rounds are all answered is started again.
        const s = choose(sessions().filter((s) => !s.in_turn && owes(s.id) && !waiting(s.id)));
        if (s) startTurn(s.id, 'answered');
        break;
      }
      case 4: {
        // A person follows up on some thread: an answered thread is owed again.
        const t = choose(threads());
        if (!t) break;
        post(t.id, ALICE, t.escalated ? 'none' : t.state === 'answered' ? 'reopen' : 'none');
        const s = t.session === null ? undefined : state.sessions[t.session];
        if (s && !s.in_turn && !waiting(s.id) && owes(s.id)) startTurn(s.id, 'follow_up');
        break;
      }
      case 5: {
        // The session that escalated answers the hand-back.
        const t = choose(threads().filter((t) => t.escalated && t.session !== null));
        if (t) post(t.id, authorOf(t.session!), 'answer');
        break;
      }
      case 6: {
        // A running session posts a note that moves nothing.
        const s = choose(sessions().filter((s) => s.in_turn));
        if (s) post(s.thread, authorOf(s.id), 'none');
        break;
      }
      default: {
        // Someone who is not the escalating handle writes on an escalated thread: it moves nothing.
        const t = choose(threads().filter((t) => t.escalated));
        if (t) post(t.id, { handle: 'bob', session: null }, 'none');
        break;
      }
    }
  }
  return ops;
}

/** Ops with their order scrambled, the way a synced log may deliver them. */
function opsAndPermutation(script: fc.Arbitrary<Step[]>): fc.Arbitrary<{ ops: Op[]; shuffled: Op[] }> {
  return script.chain((steps) => {
    const ops = buildOps(steps);
    return fc.shuffledSubarray(ops, { minLength: ops.length, maxLength: ops.length }).map((shuffled) => ({ ops, shuffled }));
  });
}

/** Splits `xs` into consecutive batches at the given cut points. */
function batches<T>(xs: T[], cuts: number[]): T[][] {
  const points = [...new Set(cuts.map((c) => c % (xs.length + 1)))].sort((a, b) => a - b);
  const out: T[][] = [];
  let from = 0;
  for (const p of [...points, xs.length]) {
    if (p > from) out.push(xs.slice(from, p));
    from = Math.max(from, p);
  }
  return out;
}

function deepFreeze<T>(x: T): T {
  if (x !== null && typeof x === 'object' && !Object.isFrozen(x)) {
    Object.freeze(x);
    for (const v of Object.values(x)) deepFreeze(v);
  }
  return x;
}

// ---------------------------------------------------------------------------------------------
// Properties of the pure fold
// ---------------------------------------------------------------------------------------------

describe('foldOperation over realistic op sequences', () => {
  it('the generator makes sequences that reach deep, escalate, reopen and finish', () => {
    // Guards the properties below against a generator that only ever makes trivial logs.
    const samples = fc.sample(scriptArb.map((s) => foldOperation('x', buildOps(s))), { numRuns: 300, seed: 42 });
    expect(samples.some((s) => Object.keys(s.threads).length >= 4)).toBe(true);
    expect(samples.some((s) => Object.values(s.sessions).some((x) => x.depth >= 3))).toBe(true);
    expect(samples.some((s) => Object.values(s.threads).some((t) => t.escalated))).toBe(true);
    expect(samples.some((s) => Object.values(s.threads).some((t) => t.state === 'open' && t.answered_at > 0))).toBe(true);
    expect(samples.some((s) => isFinished(s))).toBe(true);
    expect(samples.some((s) => !isFinished(s))).toBe(true);
  });

  it('gives the same state for any permutation of the same ops', () => {
    fc.assert(
      fc.property(opsAndPermutation(scriptArb), ({ ops, shuffled }) => {
        const root = ops[0]!.operation;
        expect(foldOperation(root, shuffled)).toEqual(foldOperation(root, ops));
      }),
      { numRuns: 300 },
    );
  });

  it('gives the same state for any permutation when ops from two nodes share Lamport times', () => {
    // Concurrent ops on two nodes can carry equal Lamport times; (lamport, workspace, id) still orders them totally.
    const arb = scriptArb.chain((steps) => {
      const ops = buildOps(steps);
      return fc
        .tuple(
          fc.array(fc.integer({ min: 1, max: 8 }), { minLength: ops.length, maxLength: ops.length }),
          fc.array(fc.boolean(), { minLength: ops.length, maxLength: ops.length }),
        )
        .map(([lamports, onB]) => ops.map((op, i) => ({ ...op, lamport: lamports[i]!, workspace: onB[i] ? WS_B : WS_A }) as Op))
        .chain((retimed) =>
          fc.shuffledSubarray(retimed, { minLength: retimed.length, maxLength: retimed.length }).map((shuffled) => ({ retimed, shuffled })),
        );
    });
    fc.assert(
      fc.property(arb, ({ retimed, shuffled }) => {
        expect(foldOperation('op', shuffled)).toEqual(foldOperation('op', retimed));
      }),
      { numRuns: 200 },
    );
  });

  it('applying ops one at a time in canonical order equals foldOperation, each one applying in order', () => {
    fc.assert(
      fc.property(opsAndPermutation(scriptArb), ({ ops, shuffled }) => {
        const root = ops[0]!.operation;
        const canonical = [...shuffled].sort(compareOps);
        let state = emptyOperation(root);
        for (const op of canonical) {
          expect(appliesInOrder(state, op)).toBe(true);
          state = applyOp(state, op);
        }
        expect(state).toEqual(foldOperation(root, shuffled));
        expect(state.head).toEqual({ lamport: canonical.at(-1)!.lamport, workspace: canonical.at(-1)!.workspace, id: canonical.at(-1)!.id });
        // Anything that sorts before the head is a late arrival.
        expect(appliesInOrder(state, canonical[0]!)).toBe(false);
      }),
      { numRuns: 200 },
    );
  });

  it('folding in place while ops arrive in batches, re-folding on a late arrival, ends where the full fold does', () => {
    // The same rule the store's foldInto applies, modelled purely.
    fc.assert(
      fc.property(opsAndPermutation(scriptArb), fc.array(fc.nat(), { maxLength: 10 }), ({ ops, shuffled }, cuts) => {
        const root = ops[0]!.operation;
        const seen: Op[] = [];
        let state = emptyOperation(root);
        for (const batch of batches(shuffled, cuts)) {
          const fresh = [...batch].sort(compareOps);
          seen.push(...batch);
          state = fresh.every((op) => appliesInOrder(state, op)) ? fresh.reduce(applyOp, state) : foldOperation(root, seen);
        }
        expect(state).toEqual(foldOperation(root, ops));
      }),
      { numRuns: 200 },
    );
  });

  it('never changes the state it is given', () => {
    fc.assert(
      fc.property(opsAndPermutation(scriptArb), ({ ops }) => {
        const root = ops[0]!.operation;
        let state = emptyOperation(root);
        for (const op of [...ops].sort(compareOps)) {
          const before = structuredClone(state);
          state = applyOp(deepFreeze(state), op);
          expect(structuredClone(before)).toEqual(before);
        }
      }),
      { numRuns: 100 },
    );
  });

  it('folds a run of ops into one copy of the maps: the start is untouched, and the end is the one-at-a-time fold', () => {
    fc.assert(
      fc.property(opsAndPermutation(scriptArb), fc.array(fc.nat(), { maxLength: 6 }), ({ ops }, cuts) => {
        const root = ops[0]!.operation;
        const canonical = [...ops].sort(compareOps);
        // In runs, each starting from the frozen end of the one before: a write into a start throws.
        let state = emptyOperation(root);
        const inert: string[] = [];
        for (const run of batches(canonical, cuts)) {
          const before = structuredClone(state);
          const next = foldRun(deepFreeze(state), run, (op, reason) => inert.push(`${op.id} ${reason}`));
          expect(structuredClone(state)).toEqual(before);
          state = next;
        }
        expect(state).toEqual(canonical.reduce(applyOp, emptyOperation(root)));
        const oneByOne: string[] = [];
        canonical.reduce((s, op) => {
          const step = foldStep(s, op);
          if (step.inert !== null) oneByOne.push(`${op.id} ${step.inert}`);
          return step.state;
        }, emptyOperation(root));
        expect(inert).toEqual(oneByOne);
      }),
      { numRuns: 200 },
    );
  });

  it('writes into maps its caller owns, and copies them otherwise', () => {
    // A person's commission: thread.opened, session.created, message.posted, session.turn_started.
    const ops = buildOps([]);
    const start = emptyOperation(ops[0]!.operation);
    const first = foldStep(start, ops[0]!);
    expect(first.inert).toBeNull();
    expect(first.state.threads).not.toBe(start.threads);
    expect(start.threads).toEqual({});
    const second = foldStep(first.state, ops[1]!, true);
    expect(second.inert).toBeNull();
    expect(second.state.threads).toBe(first.state.threads);
    expect(second.state.sessions).toBe(first.state.sessions);
    expect(Object.keys(second.state.sessions)).toHaveLength(1);
    const third = foldStep(second.state, ops[2]!);
    expect(third.state.threads).not.toBe(second.state.threads);
    expect(third.state.sessions).not.toBe(second.state.sessions);
  });

  it('agrees with the log it folds: message and turn counts, depths, and finished when no thread is open', () => {
    fc.assert(
      fc.property(scriptArb, (steps) => {
        const ops = buildOps(steps);
        const state = foldOperation(ops[0]!.operation, ops);
        for (const t of Object.values(state.threads)) {
          expect(t.messages).toBe(ops.filter((op) => op.kind === 'message.posted' && op.thread === t.id).length);
          const last = ops.filter((op) => op.kind === 'message.posted' && op.thread === t.id).at(-1);
          expect(t.last_message?.id).toBe(last?.kind === 'message.posted' ? last.body.message : undefined);
        }
        for (const s of Object.values(state.sessions)) {
          expect(s.turn).toBe(ops.filter((op) => op.kind === 'session.turn_started' && op.session === s.id).length);
          const parent = state.threads[s.thread]!.parent;
          const above = parent === null ? 0 : state.sessions[state.threads[parent]!.session!]!.depth;
          expect(s.depth).toBe(above + 1);
        }
        expect(isFinished(state)).toBe(Object.values(state.threads).every((t) => t.state === 'answered'));
      }),
      { numRuns: 200 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Hand-written cases
// ---------------------------------------------------------------------------------------------

describe('the fold, case by case', () => {
  let lamport = 0;
  let n = 0;
  const nextId = () => `01JCASE0000000000000${base32(n++, 6)}`;
  const op = (thread: string | null, session: string | null, payload: OpPayload, workspace = WS_A): Op =>
    ({ id: nextId(), workspace, origin: 'h', lamport: ++lamport, ts: `2026-01-01T00:00:${String(lamport % 60).padStart(2, '0')}.000Z`, operation: 't-ROOT', thread, session, ...payload }) as Op;
  const opened = (thread: string, opener: Author, role: string, parent: string | null = null) =>
    op(thread, null, { kind: 'thread.opened', body: { parent, subject: null, opener, target: { kind: 'persona', role, handle: `aaaa/${role}` } } });
  const created = (thread: string, session: string, role: string, depth: number) =>
    op(thread, session, { kind: 'session.created', body: { role, handle: `aaaa/${role}`, depth } });
  const posted = (thread: string, author: Author, effect: MessageEffect, substituted = false) =>
    op(thread, author.session, { kind: 'message.posted', body: { message: `m-${nextId()}`, author, text: effect, effect, substituted, refs: { working_copy: null } } });
  const started = (thread: string, session: string, turn: number) =>
    op(thread, session, { kind: 'session.turn_started', body: { role: 'lead', turn, reason: 'commissioned', declaration_hash: 'sha256:x' } });
  const ended = (thread: string, session: string, turn: number) =>
    op(thread, session, { kind: 'session.turn_ended', body: { turn, outcome: 'replied', exit_code: 0, signal: null, timed_out: false } });
  const LEAD: Author = { handle: 'aaaa/lead', session: 's-LEAD' };
  const CODER: Author = { handle: 'aaaa/coder', session: 's-CODER' };

  /** A person commissions the lead, whose first turn is running. */
  function rootOps(): Op[] {
    return [opened('t-ROOT', ALICE, 'lead'), created('t-ROOT', 's-LEAD', 'lead', 1), posted('t-ROOT', ALICE, 'commission'), started('t-ROOT', 's-LEAD', 1)];
  }

  it('a fresh commission leaves its thread open, owed by its session, and the operation unfinished', () => {
    const s = foldOperation('t-ROOT', rootOps());
    expect(s.threads['t-ROOT']).toMatchObject({ state: 'open', session: 's-LEAD', messages: 1, answered_by: null, answered_at: 0 });
    expect(s.sessions['s-LEAD']).toMatchObject({ depth: 1, turn: 1, in_turn: true, thread: 't-ROOT' });
    expect(isFinished(s)).toBe(false);
  });

  it('an operation with no threads is not finished', () => {
    expect(isFinished(emptyOperation('t-ROOT'))).toBe(false);
  });

  it('an answer marks its thread answered and finishes an operation with nothing else open', () => {
    const ops = [...rootOps()];
    const answer = posted('t-ROOT', LEAD, 'answer');
    ops.push(answer, ended('t-ROOT', 's-LEAD', 1));
    const s = foldOperation('t-ROOT', ops);
    expect(s.threads['t-ROOT']).toMatchObject({ state: 'answered', escalated: false, expected_handle: null, answered_by: 'aaaa/lead', answered_at: answer.lamport, messages: 2 });
    expect(s.sessions['s-LEAD']).toMatchObject({ in_turn: false, last_outcome: 'replied', last_answer_at: answer.lamport });
    expect(isFinished(s)).toBe(true);
  });

  it('an escalation discharges the thread, sets escalated, and names the escalating handle as the only one to answer', () => {
    const ops = [...rootOps(), posted('t-ROOT', LEAD, 'escalate')];
    const s = foldOperation('t-ROOT', ops);
    expect(s.threads['t-ROOT']).toMatchObject({ state: 'answered', escalated: true, expected_handle: 'aaaa/lead', answered_by: 'aaaa/lead' });
    expect(isFinished(s)).toBe(true);
    // The hand-back answered by the escalating handle clears the escalation.
    const after = foldOperation('t-ROOT', [...ops, posted('t-ROOT', LEAD, 'answer')]);
    expect(after.threads['t-ROOT']).toMatchObject({ state: 'answered', escalated: false, expected_handle: null });
  });

  it('a substituted answer is recorded as substituted', () => {
    const s = foldOperation('t-ROOT', [...rootOps(), posted('t-ROOT', LEAD, 'answer', true)]);
    expect(s.threads['t-ROOT']).toMatchObject({ state: 'answered', substituted: true });
  });

  it('a reopen makes an answered thread open again and clears escalation and substitution', () => {
    const ops = [...rootOps(), posted('t-ROOT', LEAD, 'escalate', true), ended('t-ROOT', 's-LEAD', 1)];
    const reopen = posted('t-ROOT', ALICE, 'reopen');
    const s = foldOperation('t-ROOT', [...ops, reopen]);
    expect(s.threads['t-ROOT']).toMatchObject({ state: 'open', escalated: false, substituted: false, expected_handle: null, messages: 3 });
    expect(s.threads['t-ROOT']!.last_message).toMatchObject({ effect: 'reopen', author: ALICE });
    expect(s.sessions['s-LEAD']!.last_input_at).toBe(reopen.lamport);
    expect(isFinished(s)).toBe(false);
  });

  it('a message with effect none moves nothing but the message count', () => {
    const ops = rootOps();
    const before = foldOperation('t-ROOT', ops);
    const s = foldOperation('t-ROOT', [...ops, posted('t-ROOT', LEAD, 'none')]);
    expect(s.threads['t-ROOT']).toMatchObject({ state: before.threads['t-ROOT']!.state, escalated: false, messages: 2 });
    expect(s.sessions['s-LEAD']).toEqual(before.sessions['s-LEAD']);
  });

  it('openSubRounds lists exactly the open threads a session opened, and an answer there wakes its opener', () => {
    const ops = [
      ...rootOps(),
      opened('t-A', LEAD, 'coder', 't-ROOT'),
      created('t-A', 's-CODER', 'coder', 2),
      posted('t-A', LEAD, 'commission'),
      opened('t-B', LEAD, 'reviewer', 't-ROOT'),
      created('t-B', 's-REV', 'reviewer', 2),
      posted('t-B', LEAD, 'commission'),
    ];
    let s = foldOperation('t-ROOT', ops);
    expect(openSubRounds(s, 's-LEAD').map((t) => t.id).sort()).toEqual(['t-A', 't-B']);
    expect(openSubRounds(s, 's-CODER')).toEqual([]);
    const answer = posted('t-A', CODER, 'answer');
    s = foldOperation('t-ROOT', [...ops, answer]);
    expect(openSubRounds(s, 's-LEAD').map((t) => t.id)).toEqual(['t-B']);
    expect(s.sessions['s-LEAD']!.last_input_at).toBe(answer.lamport);
    expect(s.sessions['s-CODER']!.last_answer_at).toBe(answer.lamport);
    expect(isFinished(s)).toBe(false);
  });

  it('ops for unknown threads and sessions are inert', () => {
    const base = foldOperation('t-ROOT', rootOps());
    const strays = [
      posted('t-NOPE', ALICE, 'answer'),
      started('t-ROOT', 's-NOPE', 1),
      ended('t-ROOT', 's-NOPE', 1),
      op(null, null, { kind: 'message.posted', body: { message: 'm-x', author: ALICE, text: 'x', effect: 'answer', substituted: false, refs: { working_copy: null } } }),
    ];
    const s = strays.reduce(applyOp, base);
    expect(s.threads).toEqual(base.threads);
    expect(s.sessions).toEqual(base.sessions);
    expect(s.head).toMatchObject({ id: strays.at(-1)!.id });
  });

  it('a second thread.opened or session.created for a known id is ignored', () => {
    const ops = [...rootOps(), opened('t-ROOT', CODER, 'coder', 't-X'), created('t-ROOT', 's-LEAD', 'coder', 9)];
    const s = foldOperation('t-ROOT', ops);
    expect(s.threads['t-ROOT']).toMatchObject({ opener: ALICE, parent: null, target: { role: 'lead' }, session: 's-LEAD' });
    expect(s.sessions['s-LEAD']).toMatchObject({ role: 'lead', depth: 1 });
  });

  it('a stale turn start and a turn end for another turn are ignored', () => {
    const ops = [...rootOps(), started('t-ROOT', 's-LEAD', 1), ended('t-ROOT', 's-LEAD', 2)];
    const s = foldOperation('t-ROOT', ops);
    expect(s.sessions['s-LEAD']).toMatchObject({ turn: 1, in_turn: true, last_outcome: null });
    expect(s.sessions['s-LEAD']!.turn_started_at).toBe(ops[3]!.lamport);
  });
});

// ---------------------------------------------------------------------------------------------
// The store: appendOps and ingestOps on a real PGlite store

const ingestOps = (db: Parameters<typeof ingestInto>[0], ops: Parameters<typeof ingestInto>[1]) => ingestInto(db, ops, PROJECTIONS);
// ---------------------------------------------------------------------------------------------

describe('appendOps and ingestOps on a real store', () => {
  let base: string;
  let store: Store;
  beforeAll(async () => {
    base = mkdtempSync(join(tmpdir(), 'nexus-fold-'));
    const dir = join(base, 'store');
    await createStore(dir, inject('nexusHome'));
    store = await openStore(dir);
  });
  afterAll(async () => {
    await store?.close();
    rmSync(base, { recursive: true, force: true });
  });

  async function row(id: string): Promise<{ state: OperationState; finished: boolean } | undefined> {
    const rows = await store.db.select().from(tables.operations).where(eq(tables.operations.id, id));
    if (rows[0] === undefined) return undefined;
    return { state: (await withParts(store.db, rows))[0]!, finished: rows[0].finished };
  }

  function post(root: string, text: string) {
    return {
      operation: root,
      thread: root,
      session: null,
      kind: 'message.posted' as const,
      body: { message: `m-${randomUlid()}`, author: ALICE, text, effect: 'none' as const, substituted: false, refs: { working_copy: null } },
    };
  }

  async function opCount(operation: string): Promise<number> {
    return (await store.db.select({ id: tables.ops.id }).from(tables.ops).where(eq(tables.ops.operation, operation))).length;
  }

  it('ingesting a shuffled log in random batches leaves the operation folded as all its ops fold, and duplicates change nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        scriptArb,
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.infiniteStream(fc.nat()),
        async (steps, cuts, keys) => {
          const ops = buildOps(steps, freshTag());
          const root = ops[0]!.operation;
          const order = ops.map((op) => ({ op, key: keys.next().value as number }));
          const shuffled = order.sort((a, b) => a.key - b.key).map((x) => x.op);
          for (const batch of batches(shuffled, cuts)) {
            await store.db.transaction((tx) => ingestOps(tx, batch));
          }
          const expected = foldOperation(root, ops);
          const r = await row(root);
          expect(r?.state).toEqual(expected);
          expect(r?.finished).toBe(isFinished(expected));
          expect(await loadOperation(store.db, root)).toEqual(expected);

          // Delivering everything again, or a batch of duplicates, adds no op and moves nothing.
          expect(await ingestOps(store.db, [...shuffled].reverse())).toEqual([]);
          expect(await ingestOps(store.db, [ops[0]!, ops[0]!])).toEqual([]);
          expect(await opCount(root)).toBe(ops.length);
          expect((await row(root))?.state).toEqual(expected);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('one batch holding two operations interleaved, with duplicates inside it, folds each operation separately', async () => {
    const one = buildOps([{ action: 0, pick: 0, flag: false, gap: 1 }, { action: 1, pick: 1, flag: false, gap: 2 }], freshTag());
    const two = buildOps([{ action: 1, pick: 0, flag: true, gap: 1 }], freshTag());
    const mixed = [...one, ...two].sort((a, b) => (a.id.slice(10) < b.id.slice(10) ? -1 : 1));
    const fresh = await ingestOps(store.db, [...mixed, ...mixed.slice(0, 3)]);
    expect(fresh).toHaveLength(one.length + two.length);
    const r1 = await row(one[0]!.operation);
    const r2 = await row(two[0]!.operation);
    expect(r1?.state).toEqual(foldOperation(one[0]!.operation, one));
    expect(r2?.state).toEqual(foldOperation(two[0]!.operation, two));
    expect(r2).toMatchObject({ finished: true, state: { threads: { [two[0]!.operation]: { escalated: true } } } });
  });

  it('a store from before operation_parts is upgraded on open: each operation keeps the state it had, and moves on from it', async () => {
    const dir = join(base, 'older');
    await createStore(dir, inject('nexusHome'));
    const ops = buildOps(
      [
        { action: 0, pick: 0, flag: false, gap: 1 },
        { action: 1, pick: 1, flag: false, gap: 1 },
        { action: 3, pick: 0, flag: false, gap: 1 },
      ],
      freshTag(),
    );
    const root = ops[0]!.operation;
    const last = ops.pop()!;
    let older = await openStore(dir);
    try {
      await ingestOps(older.db, ops);
      await undoMigrationsAfter(older.pg, '0009_op_stored_once');
      // Back to the shape migration 0008 found: whole states in one column, no parts table, the op stored
      // twice (0009), neither migration applied.
      await older.pg.exec(`
        alter table ops add column raw text;
        alter table ops alter column body type jsonb using body::jsonb;
        drop index ops_session_idx;
        create index ops_session_idx on ops (session);
        delete from drizzle.__drizzle_migrations where created_at = (select max(created_at) from drizzle.__drizzle_migrations);
        update operations o set state = o.state
          || jsonb_build_object('threads', coalesce((select jsonb_object_agg(key, value) from operation_parts p where p.operation = o.id and p.kind = 'thread'), '{}'::jsonb))
          || jsonb_build_object('sessions', coalesce((select jsonb_object_agg(key, value) from operation_parts p where p.operation = o.id and p.kind = 'session'), '{}'::jsonb));
        drop table operation_parts;
        delete from drizzle.__drizzle_migrations where created_at = (select max(created_at) from drizzle.__drizzle_migrations);`);
      const whole = await older.pg.query<{ state: OperationState }>('select state from operations where id = $1', [root]);
      expect(whole.rows[0]!.state).toEqual(foldOperation(root, ops));
    } finally {
      await older.close();
    }
    older = await openStore(dir);
    try {
      const read = async () => (await withParts(older.db, await older.db.select().from(tables.operations).where(eq(tables.operations.id, root))))[0];
      expect(await read()).toEqual(foldOperation(root, ops));
      await ingestOps(older.db, [last]);
      expect(await read()).toEqual(foldOperation(root, [...ops, last]));
    } finally {
      await older.close();
    }
  });

  it('a late arrival that sorts before ops already folded is re-folded into place', async () => {
    const ops = buildOps(
      [
        { action: 0, pick: 0, flag: false, gap: 1 },
        { action: 1, pick: 1, flag: false, gap: 1 },
        { action: 3, pick: 0, flag: false, gap: 1 },
        { action: 1, pick: 0, flag: false, gap: 1 },
      ],
      freshTag(),
    );
    const root = ops[0]!.operation;
    // Everything but the root's commission message (an early op), then that message on its own.
    const early = ops.findIndex((op) => op.kind === 'message.posted');
    const rest = ops.filter((_, i) => i !== early);
    await ingestOps(store.db, rest);
    const partial = (await row(root))!.state;
    expect(partial.threads[root]!.messages).toBe(foldOperation(root, rest).threads[root]!.messages);
    await ingestOps(store.db, [ops[early]!]);
    expect((await row(root))?.state).toEqual(foldOperation(root, ops));
  });

  it('appendOps gives each draft the next Lamport time after everything stored, and folds it in place', async () => {
    const ops = buildOps([{ action: 1, pick: 0, flag: false, gap: 1 }], freshTag());
    const root = ops[0]!.operation;
    // Stored ops from elsewhere may carry Lamport times far ahead of this operation's.
    const ahead = ops.map((op) => ({ ...op, lamport: op.lamport + 1_000_000 }) as Op);
    await ingestOps(store.db, ahead);
    const maxBefore = Math.max(...(await store.db.select({ l: tables.ops.lamport }).from(tables.ops)).map((r) => r.l));
    const author = { workspace: WS_A, origin: 'test-host', now: () => new Date('2026-02-01T00:00:00Z'), signer: opSigner(generateKeyPairSync('ed25519').privateKey), projections: PROJECTIONS };
    const appended = await store.db.transaction((tx) =>
      appendOps(tx, author, [
        {
          operation: root,
          thread: root,
          session: null,
          kind: 'message.posted',
          body: { message: 'm-0REOPEN000000000000000000', author: ALICE, text: 'again', effect: 'reopen', substituted: false, refs: { working_copy: null } },
        },
        {
          operation: root,
          thread: root,
          session: ahead[1]!.session,
          kind: 'session.turn_started',
          body: { role: 'lead', turn: 2, reason: 'follow_up', declaration_hash: 'sha256:lead' },
        },
      ]),
    );
    expect(appended.map((op) => op.lamport)).toEqual([maxBefore + 1, maxBefore + 2]);
    const expected = foldOperation(root, [...ahead, ...appended]);
    expect(await loadOperation(store.db, root)).toEqual(expected);
    expect((await row(root))?.state).toEqual(expected);
    expect(expected.threads[root]!.state).toBe('open');
    expect(expected.sessions[ahead[1]!.session!]).toMatchObject({ turn: 2, in_turn: true });
    expect((await row(root))?.finished).toBe(false);
    // Appending nothing writes nothing.
    expect(await appendOps(store.db, author, [])).toEqual([]);
  });

  it('appendOps reads the log\'s Lamport clock once per open store, not before every append: 40 transactions, at most one max(lamport)', async () => {
    const root = buildOps([{ action: 1, pick: 0, flag: false, gap: 1 }], freshTag())[0]!.operation;
    const author = { workspace: WS_A, origin: 'test-host', now: () => new Date('2026-02-01T00:00:00Z'), signer: opSigner(generateKeyPairSync('ed25519').privateKey), projections: PROJECTIONS };
    // Every statement, in a transaction or not, reaches PostgreSQL through execProtocolRawSync as wire messages.
    const before = await preparedStatements(store.pg);
    const sent = vi.spyOn(store.pg, 'execProtocolRawSync');
    try {
      for (let i = 0; i < 40; i++) await store.db.transaction((tx) => appendOps(tx, author, [post(root, `clock ${i}`)]));
      const texts = statementsRun(sent.mock.calls, before);
      expect(texts.filter((text) => text.includes('insert into "ops"')).length).toBe(40);
      expect(texts.filter((text) => text.includes('max("lamport") from "ops"')).length).toBeLessThanOrEqual(1);
    } finally {
      sent.mockRestore();
    }
  });

  it('the clock appendOps keeps follows ops taken in from elsewhere, and is not moved by a transaction that rolled back', async () => {
    const ops = buildOps([{ action: 1, pick: 0, flag: false, gap: 1 }], freshTag());
    const root = ops[0]!.operation;
    const author = { workspace: WS_A, origin: 'test-host', now: () => new Date('2026-02-01T00:00:00Z'), signer: opSigner(generateKeyPairSync('ed25519').privateKey), projections: PROJECTIONS };
    const top = async () => Math.max(...(await store.db.select({ l: tables.ops.lamport }).from(tables.ops)).map((r) => r.l));
    await store.db.transaction((tx) => appendOps(tx, author, [post(root, 'before')]));
    // Taken in, in a transaction and outside one, far ahead of everything stored.
    const ahead = ops.map((op) => ({ ...op, lamport: op.lamport + 5_000_000 }) as Op);
    await store.db.transaction((tx) => ingestInto(tx, ahead.slice(0, 1), PROJECTIONS));
    await ingestOps(store.db, ahead.slice(1));
    const [after] = await store.db.transaction((tx) => appendOps(tx, author, [post(root, 'after')]));
    expect(after!.lamport).toBe(Math.max(...ahead.map((op) => op.lamport)) + 1);
    // A transaction that appended and then failed: its Lamport times were never stored, and are given again.
    const committed = await top();
    await expect(
      store.db.transaction(async (tx) => {
        await appendOps(tx, author, [post(root, 'rolled back'), post(root, 'rolled back too')]);
        throw new Error('refused after the append');
      }),
    ).rejects.toThrow('refused after the append');
    const [next] = await store.db.transaction((tx) => appendOps(tx, author, [post(root, 'next')]));
    expect(next!.lamport).toBe(committed + 1);
    // Outside a transaction too.
    const [bare] = await appendOps(store.db, author, [post(root, 'bare')]);
    expect(bare!.lamport).toBe(committed + 2);
    expect(await top()).toBe(committed + 2);
  });

  it('a transaction writes an operation\'s state once, at its end, however many appends it made; one that throws writes none', async () => {
    const ops = buildOps([{ action: 1, pick: 0, flag: false, gap: 1 }], freshTag());
    const root = ops[0]!.operation;
    await ingestOps(store.db, ops);
    const author = { workspace: WS_A, origin: 'test-host', now: () => new Date('2026-02-01T00:00:00Z'), signer: opSigner(generateKeyPairSync('ed25519').privateKey), projections: PROJECTIONS };
    const post = (text: string) => ({
      operation: root,
      thread: root,
      session: null,
      kind: 'message.posted' as const,
      body: { message: `m-${randomUlid()}`, author: ALICE, text, effect: 'none' as const, substituted: false, refs: { working_copy: null } },
    });
    const before = (await row(root))!.state;
    // Inside the transaction the fold is current after each append; the stored row moves only at commit.
    const seen = await store.db.transaction(async (tx) => {
      await appendOps(tx, author, [post('one')]);
      const mid = (await loadOperation(tx, root)).threads[root]!.messages;
      const stored = (await withParts(tx, await tx.select().from(tables.operations).where(eq(tables.operations.id, root))))[0]!.threads[root]!.messages;
      await appendOps(tx, author, [post('two')]);
      return { mid, stored };
    });
    expect(seen).toEqual({ mid: before.threads[root]!.messages + 1, stored: before.threads[root]!.messages });
    const all = (await store.db.select().from(tables.ops).where(eq(tables.ops.operation, root))).map(rowToOp);
    expect((await row(root))?.state).toEqual(foldOperation(root, all));
    expect((await row(root))!.state.threads[root]!.messages).toBe(before.threads[root]!.messages + 2);
    // A transaction that throws after appending leaves neither its ops nor a state behind.
    const settled = (await row(root))!.state;
    await expect(
      store.db.transaction(async (tx) => {
        await appendOps(tx, author, [post('three')]);
        throw new Error('the command failed after appending');
      }),
    ).rejects.toThrow('the command failed');
    expect((await row(root))?.state).toEqual(settled);
    // Nor in what this process keeps of committed states: the next reader gets the stored one.
    expect(await loadOperation(store.db, root)).toEqual(settled);
    expect(await store.db.transaction((tx) => loadOperation(tx, root))).toEqual(settled);
    expect(await opCount(root)).toBe(all.length);
  });
});
