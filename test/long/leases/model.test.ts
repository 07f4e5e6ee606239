// Property test of the lease over random interleavings: commissions, replies, escalations, answers from above,
// crashes, withdrawals, ticks, clock jumps and late or refused park results. After every step: one holder at
// most, first-in first-out grants, growing tokens, state equal to the fold of its facts, every park restorable,
// no session of a parked operation started while another holds the copy;
// at the end, driven to quiet, every queued trigger has started or was withdrawn.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyLeaseFact } from '../../../node-agent/capabilities/leases/index.js';
import { isNexusError } from '../../../protocol/errors.js';
import type { LeaseEffect, LeaseEvent, LeaseState, ParkRecord, ThreadSnapshot, Trigger } from '../../../protocol/leases.js';
import { alice, HOUR, Lease, MIN, parkRecord, world } from '../../leases/harness.js';

const RUNS = Number(process.env.NEXUS_MODEL_RUNS ?? 10_000);
const OPS = ['P0', 'P1', 'P2'];

type MThread = { id: string; op: string; parent: string | null; opener: string; target: string; owing: boolean; handback: boolean; triggered: boolean };

const Cmd = fc.oneof(
  { weight: 5, arbitrary: fc.record({ k: fc.constant('open' as const), op: fc.nat(2), pick: fc.nat(), exclusive: fc.boolean(), window: fc.constantFrom(null, 10 * MIN, 6 * HOUR), run: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant('reply' as const), op: fc.nat(2), pick: fc.nat(), outcome: fc.constantFrom('answer' as const, 'escalate' as const, 'question' as const) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('handback' as const), op: fc.nat(2), pick: fc.nat(), expected: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('reopen' as const), op: fc.nat(2), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('above' as const), op: fc.nat(2), pick: fc.nat(), engine: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant('session' as const), op: fc.nat(2), pick: fc.nat(), what: fc.constantFrom('start' as const, 'end' as const, 'crash' as const) }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('tick' as const), known: fc.boolean(), die: fc.boolean(), boundary: fc.option(fc.nat(2)) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('advance' as const), ms: fc.constantFrom(MIN, 10 * MIN, 31 * MIN, 3 * HOUR) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('withdraw' as const), op: fc.nat(2), who: fc.constantFrom('alice', 'bob', 'session'), first: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant('move' as const), pick: fc.nat(), outcome: fc.constantFrom('ok' as const, 'passable' as const, 'unpassable' as const) }) },
);
type Cmd = typeof Cmd extends fc.Arbitrary<infer T> ? T : never;

type Move = { kind: 'park' | 'restore'; operation: string; token: number };

/** A cheap assertion for the invariants checked on every step (expect's bookkeeping would dominate the run). */
function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
}

class Model {
  l = new Lease();
  threads = new Map<string, MThread>();
  queuedTriggers = new Map<string, string>(); // trigger id -> operation
  startedTriggers = new Set<string>();
  moves: Move[] = [];
  parks = new Map<string, ParkRecord>(); // operation -> record handed back by the last successful park
  claims = new Map<number, string>(); // token -> operation granted
  releasedTokens = new Set<number>();
  excused = new Set<string>(); // queued triggers whose operation was withdrawn before they started
  lastToken = 0;
  holder: string | null = null;
  seq = 0;
  known = true;

  /** `parkedWakes`: also check that no session of a parked operation starts while another holds the copy. */
  constructor(readonly parkedWakes = false) {
    this.l.now = 10 * HOUR;
    // Starts are reported (or not) by the commands themselves, in any order.
    this.l.reportStarts = false;
  }

  pick<T>(items: T[], n: number): T | undefined {
    return items.length === 0 ? undefined : items[n % items.length];
  }

  of(op: string, keep: (t: MThread) => boolean): MThread[] {
    return [...this.threads.values()].filter((t) => t.op === op && keep(t));
  }

  facts(): ReturnType<typeof world> {
    return world({ liveness_known: this.known, alive: [...this.l.live] });
  }

  feed(ev: LeaseEvent): void {
    const before = this.l.state;
    const seen = this.l.facts.length;
    const effects = this.l.feed(ev);
    const releasedBefore = new Set(this.releasedTokens);
    this.checkFacts(before, this.l.facts.slice(seen));
    this.carry(effects, ev, releasedBefore);
    this.checkState(this.l.state);
  }

  /** Replays the decision's facts one by one: one holder, FIFO grants, growing tokens. */
  checkFacts(before: LeaseState, facts: typeof this.l.facts): void {
    let s = before;
    for (const f of facts) {
      if (f.kind === 'lease.claimed') {
        check(this.holder === null, `two holders: ${this.holder} and ${f.body.operation}`);
        const at = s.queue.findIndex((e) => e.operation === f.body.operation);
        check(at === 0 || (at === -1 && s.queue.length === 0), `${f.body.operation} was granted out of turn`);
        check(f.body.token > this.lastToken, 'a token did not grow');
        this.lastToken = f.body.token;
        this.holder = f.body.operation;
        this.claims.set(f.body.token, f.body.operation);
      }
      if (f.kind === 'lease.released') {
        check(this.holder === f.body.operation, `${f.body.operation} released a copy it did not hold`);
        this.holder = null;
        this.releasedTokens.add(f.body.token);
      }
      s = applyLeaseFact(s, f);
    }
    check((this.l.state.holder?.operation ?? null) === this.holder, 'the holder differs from its grants and releases');
  }

  checkState(s: LeaseState): void {
    const queued = s.queue.map((e) => e.operation);
    check(new Set(queued).size === queued.length, 'an operation is queued twice');
    check(!s.holder || !queued.includes(s.holder.operation), 'the holder is also queued');
    check(!s.pending || s.pending.operation === s.holder?.operation, 'a park is pending for an operation that does not hold');
    for (const op of Object.keys(s.areas)) check(op === s.holder?.operation || queued.includes(op), `${op} is followed but neither holds nor waits`);
  }

  carry(effects: LeaseEffect[], ev: LeaseEvent, releasedBefore: Set<number>): void {
    for (const e of effects) {
      if (e.type === 'start') {
        // A parked operation's session never runs while another holds the copy: a wake waits for the copy.
        const s = this.l.state;
        if (this.parkedWakes) check(!(s.parked[e.operation] !== undefined && s.holder !== null && s.holder.operation !== e.operation), `a session of parked ${e.operation} started while ${s.holder?.operation} holds the copy`);
        // Started under a grant of its own operation that had not ended before this decision.
        if (e.token !== null) {
          check(this.claims.get(e.token) === e.operation, `started under a token of another operation`);
          check(!releasedBefore.has(e.token), 'started under a grant already released');
        }
        for (const t of e.triggers) {
          // A trigger that waited for the copy starts only under a grant of its own operation.
          check(!this.queuedTriggers.has(t.id) || e.token !== null, `queued trigger ${t.id} started without the copy`);
          this.startedTriggers.add(t.id);
          const th = this.threads.get(t.thread);
          if (th) th.triggered = true;
        }
      } else if (e.type === 'queued') {
        const trigger = (ev as { trigger?: Trigger | null }).trigger;
        if (trigger) this.queuedTriggers.set(trigger.id, e.operation);
      } else if (e.type === 'park' || e.type === 'restore') {
        // Every park is restorable: the restore carries exactly what the park handed back.
        if (e.type === 'restore') check(JSON.stringify(e.record) === JSON.stringify(this.parks.get(e.operation)), `restore of ${e.operation} lost its park`);
        if (!this.moves.some((m) => m.kind === e.type && m.operation === e.operation && m.token === e.token)) {
          this.moves.push({ kind: e.type, operation: e.operation, token: e.token });
        }
      } else if (e.type === 'stop') {
        for (const id of e.discharge) this.threads.get(id)!.owing = false;
      }
    }
  }

  /** The operation's threads as the engine's fold knows them (all but `except`), for a lease that starts following it. */
  area(op: string, except: string | null = null): ThreadSnapshot[] {
    return this.of(op, (t) => t.id !== except).map((t) => ({
      thread: t.id, parent: t.parent, opener: t.opener, person: false, owing: t.owing, since: this.l.now, window_ms: null,
      handback: t.handback ? ('escalation' as const) : null, expected: t.handback ? t.target : null, session: `s-${t.id}`,
      proc: this.l.live.has(`s-${t.id}`) ? ('running' as const) : ('none' as const), run: null,
    }));
  }

  trigger(thread: string, run: Trigger['run']): Trigger {
    return { id: `${thread}#${++this.seq}`, thread, run };
  }

  run(c: Cmd): void {
    const op = OPS[('op' in c ? c.op : 0) % OPS.length]!;
    switch (c.k) {
      case 'open': {
        const root = this.threads.get(op);
        const parent = root ? this.pick(this.of(op, () => true), c.pick)! : null;
        const id = parent ? `${op}.${++this.seq}` : op;
        const by = parent ? { handle: parent.target, session: `s-${parent.id}` } : alice;
        const th: MThread = { id, op, parent: parent?.id ?? null, opener: by.handle, target: `h-${id}`, owing: true, handback: false, triggered: false };
        this.threads.set(id, th);
        const run = c.run && parent ? { id: `${op}-run`, step: this.seq } : null;
        const area = this.area(op, id);
        this.feed({ type: 'commission', operation: op, thread: id, parent: th.parent, by, person: false, exclusive: c.exclusive, window_ms: c.window, trigger: this.trigger(id, run), root: alice, area, facts: this.facts() });
        return;
      }
      case 'reply': {
        const t = this.pick(this.of(op, (x) => x.owing), c.pick);
        if (!t) return;
        // The engine reads the operation's threads before the reply is stored.
        const area = this.area(op);
        t.owing = false;
        t.handback = c.outcome !== 'answer';
        const wakes = t.parent ? this.trigger(t.parent, null) : null;
        this.feed({ type: 'reply', operation: op, thread: t.id, by: { handle: t.target, session: `s-${t.id}` }, outcome: c.outcome, wakes, root: alice, area, facts: this.facts() });
        return;
      }
      case 'handback': {
        const t = this.pick(this.of(op, (x) => x.handback), c.pick);
        if (!t) return;
        if (c.expected) t.handback = false;
        this.feed({ type: 'reply', operation: op, thread: t.id, by: { handle: c.expected ? t.target : 'mallory', session: null }, outcome: 'answer', wakes: null, root: alice, area: [], facts: this.facts() });
        return;
      }
      case 'reopen': {
        const t = this.pick(this.of(op, (x) => !x.owing), c.pick);
        if (!t) return;
        t.owing = true;
        t.handback = false;
        this.feed({ type: 'reopen', operation: op, thread: t.id, parent: t.parent, by: { handle: t.opener, session: null }, person: false, exclusive: true, window_ms: null, trigger: this.trigger(t.id, null), root: alice, area: [], facts: this.facts() });
        return;
      }
      case 'above': {
        const t = this.pick(this.of(op, () => true), c.pick);
        if (t) this.feed({ type: 'answered_from_above', operation: op, thread: t.id, by: c.engine ? null : { handle: t.opener, session: null } });
        return;
      }
      case 'session': {
        const t = this.pick(this.of(op, (x) => x.triggered), c.pick);
        if (!t) return;
        const session = `s-${t.id}`;
        if (c.what === 'start') this.l.live.add(session);
        else this.l.live.delete(session);
        const type = c.what === 'start' ? 'session_started' : c.what === 'end' ? 'session_ended' : 'session_crashed';
        this.feed({ type, operation: op, thread: t.id, session });
        return;
      }
      case 'tick': {
        this.known = c.known;
        if (c.die) this.l.live.clear(); // processes die without a word
        this.feed({ type: 'tick', facts: world({ liveness_known: c.known, alive: [...this.l.live], boundary: c.boundary === null ? [] : [OPS[c.boundary]!] }) });
        return;
      }
      case 'advance':
        this.l.advance(c.ms);
        return;
      case 'withdraw': {
        const thread = c.first ? op : this.pick(this.of(op, (t) => t.parent !== null), 0)?.id ?? op;
        const by = c.who === 'alice' ? alice : c.who === 'bob' ? { handle: 'bob', session: null } : { handle: 'alice', session: 's-x' };
        const before = this.l.state;
        try {
          this.feed({ type: 'withdraw', thread, by, facts: this.facts() });
          if (before.areas[op] && thread === op) {
            for (const [id, of] of this.queuedTriggers) if (of === op && !this.startedTriggers.has(id)) this.excused.add(id);
          }
        } catch (err) {
          if (!isNexusError(err)) throw err;
          expect(this.l.state).toBe(before); // a refused withdrawal changes nothing
        }
        return;
      }
      case 'move':
        this.deliver(c.pick, c.outcome);
    }
  }

  deliver(n: number, outcome: 'ok' | 'passable' | 'unpassable'): void {
    const m = this.moves.splice(n % Math.max(1, this.moves.length), 1)[0];
    if (!m) return;
    if (m.kind === 'restore') {
      this.feed({ type: 'restore_result', operation: m.operation, token: m.token, result: { applied: true, notice: 'back' } });
      return;
    }
    if (outcome === 'ok') {
      const record = parkRecord(m.operation, m.token, this.l.now);
      // Known before the result is fed: the same decision may grant the copy back and restore it at once.
      if (this.l.state.pending?.token === m.token) this.parks.set(m.operation, record);
      this.feed({ type: 'park_result', operation: m.operation, token: m.token, result: { outcome: 'parked', record } });
    } else if (outcome === 'passable') {
      this.feed({ type: 'park_result', operation: m.operation, token: m.token, result: { outcome: 'refused_passable', what: 'a merge is in progress' } });
    } else {
      this.feed({ type: 'park_result', operation: m.operation, token: m.token, result: { outcome: 'refused_unpassable', why: 'no base branch recorded' } });
    }
  }

  /** Answers everything, ends every session, delivers every move and lets time pass until the lease is quiet. */
  quiesce(): void {
    for (let round = 0; round < 200; round++) {
      const s = this.l.state;
      if (s.holder === null && s.queue.length === 0 && s.pending === null && this.moves.length === 0) return;
      while (this.moves.length > 0) this.deliver(0, 'ok');
      for (const t of this.threads.values()) {
        const session = `s-${t.id}`;
        if (this.l.live.has(session)) {
          this.l.live.delete(session);
          this.feed({ type: 'session_ended', operation: t.op, thread: t.id, session });
        }
        if (t.owing) this.run({ k: 'reply', op: OPS.indexOf(t.op), pick: this.of(t.op, (x) => x.owing).indexOf(t), outcome: 'answer' });
        if (t.handback) this.run({ k: 'handback', op: OPS.indexOf(t.op), pick: this.of(t.op, (x) => x.handback).indexOf(t), expected: true });
      }
      this.l.advance(3 * HOUR);
      this.feed({ type: 'tick', facts: world({ alive: [...this.l.live] }) });
    }
    throw new Error(`the lease never went quiet: ${JSON.stringify(this.l.state)}`);
  }
}

/** Runs random interleavings through the model, drives each to quiet, and checks every queued trigger started. */
function holdsOverAnyInterleaving(parkedWakes: boolean): void {
  fc.assert(
    fc.property(fc.array(Cmd, { minLength: 10, maxLength: 60 }), (cmds) => {
      const m = new Model(parkedWakes);
      for (const c of cmds) m.run(c);
      m.quiesce();
      for (const [id, op] of m.queuedTriggers) {
        expect(m.startedTriggers.has(id) || m.excused.has(id), `queued trigger ${id} of ${op}`).toBe(true);
      }
    }),
    { numRuns: RUNS },
  );
}

describe('working-copy lease model', () => {
  it('keeps one holder, first-in first-out, growing tokens and restorable parks over any interleaving', () => {
    holdsOverAnyInterleaving(false);
  });

  it('never runs a parked operation\'s session while another holds the copy, over any interleaving', () => {
    holdsOverAnyInterleaving(true);
  });
});
