// A lease driven by hand in tests: builds events, feeds them with an injected clock, and checks after every
// decision that the recorded facts fold back into exactly the state returned.
import { expect } from 'vitest';
import { applyLeaseFact, decide } from '../../node-agent/capabilities/leases/index.js';
import {
  emptyLeaseState,
  type LeaseActor,
  type LeaseEffect,
  type LeaseEvent,
  type LeaseOpPayload,
  type LeaseState,
  type ParkRecord,
  type ThreadSnapshot,
  type Trigger,
  type WorldFacts,
} from '../../protocol/leases.js';

export const MIN = 60_000;
export const HOUR = 60 * MIN;
export const alice: LeaseActor = { handle: 'alice', session: null };

export function world(over: Partial<WorldFacts> = {}): WorldFacts {
  return { liveness_known: true, alive: [], boundary: [], ...over };
}

export type SendOpts = {
  parent?: string | null;
  by?: LeaseActor;
  exclusive?: boolean;
  window_ms?: number | null;
  person?: boolean;
  run?: { id: string; step: number } | null;
  area?: ThreadSnapshot[];
  facts?: WorldFacts;
  root?: LeaseActor;
  noTrigger?: boolean;
};

export function trig(thread: string, run: Trigger['run'] = null): Trigger {
  return { id: `${thread}#go`, thread, run };
}

export function parkRecord(operation: string, token: number, at = 0): ParkRecord {
  return {
    token,
    branch: `feat/${operation}`,
    head: 'a'.repeat(40),
    base: 'main',
    base_commit: 'b'.repeat(40),
    park_branch: `nexus/park/${operation}`,
    work: 'c'.repeat(40),
    at,
  };
}

export class Lease {
  state: LeaseState = emptyLeaseState();
  now = 1_000_000;
  facts: LeaseOpPayload[] = [];
  last: LeaseEffect[] = [];
  /** Sessions whose process runs, as the worker would report them: started and not yet over. */
  live = new Set<string>();
  private folded: LeaseState = emptyLeaseState();

  /** The facts a worker that can tell liveness reports now. */
  world(over: Partial<WorldFacts> = {}): WorldFacts {
    return world({ alive: [...this.live], ...over });
  }

  /**
   * Feeds one event and returns its effects. Like the engine, it then reports every session it was told to start
   * (session `s-<thread>`), unless `reportStarts` is off.
   */
  feed(event: LeaseEvent): LeaseEffect[] {
    const effects = this.decideOne(event);
    if (this.reportStarts) {
      for (const e of effects) {
        if (e.type !== 'start') continue;
        for (const t of e.triggers) {
          this.live.add(`s-${t.thread}`);
          this.decideOne({ type: 'session_started', operation: e.operation, thread: t.thread, session: `s-${t.thread}` });
        }
      }
    }
    this.last = effects;
    return effects;
  }

  reportStarts = true;

  private decideOne(event: LeaseEvent): LeaseEffect[] {
    const d = decide(this.state, event, this.now);
    this.state = d.state;
    this.facts.push(...d.facts);
    this.folded = d.facts.reduce(applyLeaseFact, this.folded);
    // Compared as text first: a deep equality on every step would dominate the property test's time.
    if (JSON.stringify(this.folded) !== JSON.stringify(this.state)) expect(this.folded).toEqual(this.state);
    return d.effects;
  }

  advance(ms: number): this {
    this.now += ms;
    return this;
  }

  send(operation: string, thread: string, o: SendOpts = {}): LeaseEffect[] {
    return this.feed({
      type: 'commission',
      operation,
      thread,
      parent: o.parent === undefined ? (thread === operation ? null : operation) : o.parent,
      by: o.by ?? alice,
      person: o.person ?? false,
      exclusive: o.exclusive ?? true,
      window_ms: o.window_ms ?? null,
      trigger: o.noTrigger ? null : trig(thread, o.run ?? null),
      root: o.root ?? alice,
      area: o.area ?? [],
      facts: o.facts ?? this.world(),
    });
  }

  reopen(operation: string, thread: string, by: LeaseActor, o: SendOpts = {}): LeaseEffect[] {
    return this.feed({
      type: 'reopen',
      operation,
      thread,
      parent: o.parent ?? null,
      by,
      person: false,
      exclusive: o.exclusive ?? true,
      window_ms: o.window_ms ?? null,
      trigger: trig(thread),
      root: o.root ?? alice,
      area: [],
      facts: o.facts ?? this.world(),
    });
  }

  reply(operation: string, thread: string, handle: string, outcome: 'answer' | 'escalate' | 'question' | 'none', wakes: Trigger | null = null, o: SendOpts = {}): LeaseEffect[] {
    return this.feed({ type: 'reply', operation, thread, by: { handle, session: `s-${thread}` }, outcome, wakes, root: o.root ?? alice, area: o.area ?? [], facts: o.facts ?? this.world() });
  }

  started(operation: string, thread: string): LeaseEffect[] {
    this.live.add(`s-${thread}`);
    return this.feed({ type: 'session_started', operation, thread, session: `s-${thread}` });
  }

  ended(operation: string, thread: string): LeaseEffect[] {
    this.live.delete(`s-${thread}`);
    return this.feed({ type: 'session_ended', operation, thread, session: `s-${thread}` });
  }

  crashed(operation: string, thread: string): LeaseEffect[] {
    this.live.delete(`s-${thread}`);
    return this.feed({ type: 'session_crashed', operation, thread, session: `s-${thread}` });
  }

  tick(facts: WorldFacts = this.world()): LeaseEffect[] {
    return this.feed({ type: 'tick', facts });
  }

  /** Answers the pending park as the mover would. */
  parked(operation: string): LeaseEffect[] {
    const token = this.state.pending!.token;
    return this.feed({ type: 'park_result', operation, token, result: { outcome: 'parked', record: parkRecord(operation, token, this.now) } });
  }

  restored(operation: string, notice = `your work is back (${operation})`): LeaseEffect[] {
    return this.feed({ type: 'restore_result', operation, token: this.state.holder!.token, result: { applied: true, notice } });
  }

  holder(): string | null {
    return this.state.holder?.operation ?? null;
  }
}

export function ofType<T extends LeaseEffect['type']>(effects: readonly LeaseEffect[], type: T): Array<Extract<LeaseEffect, { type: T }>> {
  return effects.filter((e): e is Extract<LeaseEffect, { type: T }> => e.type === type);
}

/** The thread ids the effects start. */
export function startedThreads(effects: readonly LeaseEffect[]): string[] {
  return ofType(effects, 'start').flatMap((e) => e.triggers.map((t) => t.thread));
}
