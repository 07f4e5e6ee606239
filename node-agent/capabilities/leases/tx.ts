// The working state of one decision: every change goes through `record`, so the facts it collects fold back
// into exactly the state it returns.
import type { LeaseEffect, LeaseOpPayload, LeaseState, ThreadFact, Trigger, WorldFacts } from '../../../protocol/leases.js';
import { applyLeaseFact } from './state.js';

/** What one event decided: the new state, what the engine must do (in order), and the facts to record as ops. */
export type LeaseDecision = { state: LeaseState; effects: LeaseEffect[]; facts: LeaseOpPayload[] };

export type Tx = { state: LeaseState; effects: LeaseEffect[]; facts: LeaseOpPayload[]; now: number; facts_in: WorldFacts | null };

// State changes only by recording a fact: that is what keeps the stored state equal to the fold of the ops.
export function record(tx: Tx, fact: LeaseOpPayload): void {
  tx.facts.push(fact);
  tx.state = applyLeaseFact(tx.state, fact);
}

export function patchThread(tx: Tx, operation: string, thread: string, patch: Partial<ThreadFact>, lastWord: 'handback' | 'other' | null = null): void {
  const t = tx.state.areas[operation]?.threads[thread];
  if (!t) return;
  record(tx, { kind: 'lease.noted', body: { operation, thread, fact: { ...t, ...patch }, last_word: lastWord } });
}

export function position(state: LeaseState, operation: string): number {
  return state.queue.findIndex((e) => e.operation === operation) + 1;
}

export function startEffect(tx: Tx, operation: string, triggers: Trigger[]): void {
  if (triggers.length === 0) return;
  const h = tx.state.holder;
  const token = h?.operation === operation ? h.token : null;
  for (const t of triggers) {
    if (tx.state.areas[operation]?.threads[t.thread]) patchThread(tx, operation, t.thread, { proc: 'starting' });
  }
  tx.effects.push({ type: 'start', operation, triggers, token, notice: null });
}
