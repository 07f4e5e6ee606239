// Taking the copy away from its holder: when a park is due (contention, backstop drain, provably dead, a
// newcomer taking over, a withdrawal), asking for it, and what its answer does. Pure.
import {
  LEASE_TIMES,
  type LeaseEventOf,
  type ParkReason,
  type WorldFacts,
} from '../../../protocol/leases.js';
import { anyAlive, bound, provablyDead, threadsOf } from './area.js';
import { patchThread, record, type Tx } from './tx.js';

/** Why the holder's copy may be taken from it now on behalf of somebody else, or null. */
export function reclaimable(tx: Tx, facts: WorldFacts): 'drain' | 'dead' | null {
  const h = tx.state.holder;
  const area = h ? tx.state.areas[h.operation] : undefined;
  if (!h || !area || h.withdrawn || !h.ready) return null;
  const b = bound(area);
  // Past its bound an abandoned lease stops refusing; a live process still keeps it.
  if (b !== null && tx.now >= b && !anyAlive(area, facts)) return 'drain';
  if (provablyDead(h.operation, area, facts, h.waiting)) return 'dead';
  return null;
}

export function onTick(tx: Tx, facts: WorldFacts): void {
  if (tx.state.liveness_known !== facts.liveness_known) {
    record(tx, { kind: 'lease.liveness', body: { known: facts.liveness_known } });
  }
  // The engine reports every start before it takes the next command; a start still unreported at a tick was
  // lost, and nothing runs behind it. A session the worker says is gone is over, though it never said so.
  // Left alone, either would hold an ordered run, and a withdrawal, for ever.
  const alive = new Set(facts.alive);
  for (const [operation, area] of Object.entries(tx.state.areas)) {
    for (const [thread, t] of threadsOf(area)) {
      if (t.proc === 'starting') patchThread(tx, operation, thread, { proc: 'none' });
      else if (t.proc === 'running' && facts.liveness_known && (t.session === null || !alive.has(t.session))) {
        patchThread(tx, operation, thread, { proc: 'crashed' });
      }
    }
  }
  const h = tx.state.holder;
  const pending = tx.state.pending;
  // A move asked for and not answered (the engine stopped mid-way): ask again; the mover finishes it idempotently.
  if (pending !== null) {
    const base = tx.state.areas[pending.operation]?.base ?? null;
    tx.effects.push({ type: 'park', operation: pending.operation, token: pending.token, base, reason: pending.reason });
    scheduleWhileWaiting(tx);
    return;
  }
  if (h !== null && !h.ready) {
    const rec = tx.state.parked[h.operation];
    if (rec) tx.effects.push({ type: 'restore', operation: h.operation, token: h.token, record: rec });
  }
  const occasion = parkOccasion(tx, facts);
  if (occasion !== null) requestPark(tx, occasion);
  else if (tx.state.refusal !== null) {
    // Nothing is attempting that park any more, so nothing says it is.
    record(tx, { kind: 'lease.refusal_cleared', body: { operation: tx.state.refusal.operation } });
  }
  scheduleWhileWaiting(tx);
}

/** Why the holder must be parked at this tick, or null. */
function parkOccasion(tx: Tx, facts: WorldFacts): ParkReason | null {
  const h = tx.state.holder;
  const area = h ? tx.state.areas[h.operation] : undefined;
  if (!h || !area || !h.ready) return null;
  if (h.withdrawn) return anyAlive(area, facts) ? null : 'withdraw';
  if (tx.state.queue.length === 0) return null;
  if (h.contention_since !== null && tx.now >= h.contention_since + LEASE_TIMES.contention_ms) return 'contention';
  return reclaimable(tx, facts);
}

export function requestPark(tx: Tx, reason: ParkReason): void {
  const h = tx.state.holder!;
  const base = tx.state.areas[h.operation]?.base ?? null;
  record(tx, { kind: 'lease.park_requested', body: { operation: h.operation, token: h.token, reason, at: tx.now } });
  tx.effects.push({ type: 'park', operation: h.operation, token: h.token, base, reason });
}

export function onParkResult(tx: Tx, ev: LeaseEventOf<'park_result'>): void {
  const p = tx.state.pending;
  const h = tx.state.holder;
  if (!p || !h || p.operation !== ev.operation || p.token !== ev.token || h.token !== ev.token) return;
  const r = ev.result;
  if (r.outcome === 'parked') {
    record(tx, { kind: 'lease.parked', body: { operation: p.operation, record: r.record } });
    record(tx, { kind: 'lease.released', body: { operation: p.operation, token: p.token, why: 'parked', requeue: h.waiting, at: tx.now } });
    return;
  }
  const passable = r.outcome === 'refused_passable';
  const text = passable ? r.what : r.why;
  record(tx, { kind: 'lease.refused', body: { operation: p.operation, token: p.token, passable, reason: p.reason, text, at: tx.now } });
  if (passable) {
    tx.effects.push({
      type: 'warn',
      class: 'work_not_parked',
      reason: p.reason,
      operation: p.operation,
      message: `the working copy held by ${p.operation} was not parked: ${text}; it stays with that operation and the park is tried again on every tick`,
    });
    tx.effects.push({ type: 'schedule_tick', at: tx.now + LEASE_TIMES.sweep_ms });
  } else {
    tx.effects.push({
      type: 'warn',
      class: 'work_handed_on_unparked',
      reason: p.reason,
      operation: p.operation,
      message: `the working copy was handed on from ${p.operation} without parking its work (${text}): whatever it left uncommitted is still in the tree`,
    });
    record(tx, { kind: 'lease.released', body: { operation: p.operation, token: p.token, why: 'unparked', requeue: h.waiting, at: tx.now } });
  }
}

export function scheduleWhileWaiting(tx: Tx): void {
  const h = tx.state.holder;
  if (!h) return;
  const area = tx.state.areas[h.operation];
  if (tx.state.queue.length === 0 && !h.withdrawn) return;
  const at = [tx.now + LEASE_TIMES.sweep_ms];
  const b = area ? bound(area) : null;
  if (b !== null && b > tx.now) at.push(b);
  if (h.contention_since !== null) at.push(h.contention_since + LEASE_TIMES.contention_ms);
  for (const t of new Set(at.filter((x) => x > tx.now))) tx.effects.push({ type: 'schedule_tick', at: t });
}
