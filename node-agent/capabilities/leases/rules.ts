// The working-copy lease's rules: one pure decision per event. No I/O, no clock: `now` comes in.
import { NexusError } from '../../../protocol/errors.js';
import {
  LEASE_TIMES,
  type Area,
  type LeaseEvent,
  type LeaseEventOf,
  type LeaseState,
  type ThreadFact,
  type Trigger,
} from '../../../protocol/leases.js';
import { anyAlive, finished, heldForHandback, isBelow, liveSessions, threadsOf } from './area.js';
import { splitOrdered } from './ordered.js';
import { onParkResult, onTick, reclaimable, requestPark, scheduleWhileWaiting } from './reclaim.js';
import { patchThread, position, record, startEffect, type LeaseDecision, type Tx } from './tx.js';

export type { LeaseDecision } from './tx.js';

/**
 * Decides one event. Pure: the input state is never changed. Throws a `NexusError` (and decides nothing) only
 * for a withdrawal the caller may not make.
 */
export function decide(state: LeaseState, event: LeaseEvent, now: number): LeaseDecision {
  const facts_in = 'facts' in event ? event.facts : null;
  const tx: Tx = { state, effects: [], facts: [], now, facts_in };
  switch (event.type) {
    case 'commission':
    case 'reopen':
      onCommission(tx, event);
      break;
    case 'reply':
      onReply(tx, event);
      break;
    case 'answered_from_above':
      if (event.by !== null) clearFromAbove(tx, event.operation, event.thread, event.by.handle);
      break;
    case 'session_started':
    case 'session_ended':
    case 'session_crashed': {
      const proc = event.type === 'session_started' ? 'running' : event.type === 'session_ended' ? 'ended' : 'crashed';
      patchThread(tx, event.operation, event.thread, { proc, session: event.session });
      break;
    }
    case 'start_failed':
      patchThread(tx, event.operation, event.thread, { proc: 'none' });
      break;
    case 'base_recorded': {
      const h = tx.state.holder;
      const area = tx.state.areas[event.operation];
      if (h?.operation === event.operation && h.token === event.token && area?.base === null && event.branch !== null) {
        record(tx, { kind: 'lease.base', body: { operation: event.operation, branch: event.branch } });
      }
      break;
    }
    case 'tick':
      onTick(tx, event.facts);
      break;
    case 'withdraw':
      onWithdraw(tx, event);
      break;
    case 'park_result':
      onParkResult(tx, event);
      break;
    case 'restore_result': {
      const h = tx.state.holder;
      if (h?.operation !== event.operation || h.token !== event.token || h.ready) break;
      const { applied, notice } = event.result;
      record(tx, { kind: 'lease.restored', body: { operation: h.operation, token: h.token, applied, notice } });
      break;
    }
  }
  settle(tx);
  markChange(tx, state);
  return { state: tx.state, effects: tx.effects, facts: tx.facts };
}

// A commissioning trigger going down: inherit inside the held area, start when the copy is not needed,
// take the copy when it is free (or reclaimable), queue otherwise.
function onCommission(tx: Tx, ev: LeaseEventOf<'commission'> | LeaseEventOf<'reopen'>): void {
  const op = ev.operation;
  const s = tx.state;
  const inside = s.holder?.operation === op;
  const needsCopy = inside || ev.exclusive || s.parked[op] !== undefined;
  if (!s.areas[op] && needsCopy && ev.trigger !== null) {
    const threads: Record<string, ThreadFact> = {};
    for (const { thread, ...fact } of ev.area) threads[thread] = fact;
    record(tx, { kind: 'lease.followed', body: { operation: op, root: ev.root, base: s.parked[op]?.base ?? null, threads } });
  }
  const area = tx.state.areas[op];
  if (area) {
    const before = area.threads[ev.thread];
    const fact: ThreadFact = {
      parent: before?.parent ?? ev.parent,
      opener: before?.opener ?? ev.by.handle,
      person: ev.person,
      owing: true,
      since: tx.now,
      window_ms: ev.window_ms,
      handback: null,
      expected: null,
      session: before?.session ?? null,
      proc: before?.proc ?? 'none',
      run: ev.trigger?.run ?? before?.run ?? null,
    };
    record(tx, { kind: 'lease.noted', body: { operation: op, thread: ev.thread, fact, last_word: null } });
    // The commissioner writing in its own thread and asking again answers the escalations beneath it.
    if (ev.type === 'reopen' && before && before.opener === ev.by.handle) clearFromAbove(tx, op, ev.thread, ev.by.handle);
  }
  const trigger = ev.trigger;
  if (trigger === null) return;
  if (inside) {
    record(tx, { kind: 'lease.waiting', body: { operation: op, add: [trigger], started: [] } });
    return;
  }
  if (!needsCopy) {
    startEffect(tx, op, [trigger]);
    return;
  }
  const free = tx.state.holder === null && tx.state.pending === null && tx.state.queue.length === 0;
  if (free) {
    grant(tx, op, [trigger]);
    return;
  }
  record(tx, { kind: 'lease.queued', body: { operation: op, trigger, at: tx.now } });
  // The copy is held (or on its way to the head of the queue): the first thread names the operation.
  const holder = tx.state.holder?.operation ?? tx.state.queue[0]!.operation;
  tx.effects.push({ type: 'queued', operation: op, thread: ev.thread, position: position(tx.state, op), holder: { operation: holder, thread: holder } });
  // Whoever waited first goes first: reclaiming hands the turn to the head; the newcomer is already behind it.
  if (tx.state.holder !== null && tx.state.pending === null && reclaimable(tx, ev.facts) !== null) requestPark(tx, 'takeover');
  else scheduleWhileWaiting(tx);
}

function onReply(tx: Tx, ev: LeaseEventOf<'reply'>): void {
  // A parked operation's woken session will wait for the copy: follow the operation first, so the reply counts in it.
  if (ev.wakes !== null && wakeWaits(tx.state, ev.operation) && !tx.state.areas[ev.operation]) {
    const threads: Record<string, ThreadFact> = {};
    for (const { thread, ...fact } of ev.area) threads[thread] = fact;
    record(tx, { kind: 'lease.followed', body: { operation: ev.operation, root: ev.root, base: tx.state.parked[ev.operation]!.base, threads } });
  }
  const t = tx.state.areas[ev.operation]?.threads[ev.thread];
  if (t) {
    if (ev.outcome === 'answer') {
      if (t.owing) patchThread(tx, ev.operation, ev.thread, { owing: false, handback: null, expected: null }, 'other');
      // On a direct thread only the handle that handed back can answer the hand-back in place.
      else if (t.handback !== null && ev.by.handle === t.expected) {
        patchThread(tx, ev.operation, ev.thread, { handback: null, expected: null }, 'other');
      }
    } else if ((ev.outcome === 'escalate' || ev.outcome === 'question') && t.owing) {
      const handback = ev.outcome === 'escalate' ? 'escalation' : 'question';
      patchThread(tx, ev.operation, ev.thread, { owing: false, handback, expected: ev.by.handle, since: tx.now }, 'handback');
    }
  }
  if (ev.wakes !== null) wake(tx, ev, ev.wakes);
}

/** Whether a session of `operation` woken now must wait for the copy: its work is parked and another may hold it. */
export function wakeWaits(state: LeaseState, operation: string): boolean {
  return state.parked[operation] !== undefined && state.holder?.operation !== operation;
}

/**
 * An answer going up is never held back by a commission: the answer whose arrival releases the lease must not
 * wait for it. But the copy has one operation at a time: a session of a parked operation waits for the copy, at
 * the head of the queue, and starts once its work is back; so does one whose work is being put back now.
 */
function wake(tx: Tx, ev: LeaseEventOf<'reply'>, trigger: Trigger): void {
  const op = ev.operation;
  const s = tx.state;
  const h = s.holder;
  if (h?.operation === op) {
    if (h.ready || h.withdrawn) startEffect(tx, op, [trigger]);
    else record(tx, { kind: 'lease.waiting', body: { operation: op, add: [trigger], started: [] } });
    return;
  }
  if (!wakeWaits(s, op)) {
    startEffect(tx, op, [trigger]);
    return;
  }
  record(tx, { kind: 'lease.queued', body: { operation: op, trigger, at: tx.now, woken: true } });
  // Nobody holds or is being parked: settle grants the copy to the head, which is this operation, and restores it.
  if (tx.state.holder === null && tx.state.pending === null) return;
  const holder = tx.state.holder?.operation ?? tx.state.pending!.operation;
  tx.effects.push({ type: 'queued', operation: op, thread: trigger.thread, position: position(tx.state, op), holder: { operation: holder, thread: holder } });
  if (tx.state.holder !== null && tx.state.pending === null && reclaimable(tx, ev.facts) !== null) requestPark(tx, 'takeover');
  else scheduleWhileWaiting(tx);
}

/**
 * The commissioner of `above` wrote in it and asked again: the escalations beneath it count as answered, and so
 * does `above`'s own hand-back when it was theirs passed through. One that only `above` itself raised is not:
 * on a direct thread only the handle that escalated answers it.
 */
function clearFromAbove(tx: Tx, operation: string, above: string, handle: string): void {
  const area = tx.state.areas[operation];
  const top = area?.threads[above];
  if (!area || !top || top.opener !== handle) return;
  let cleared = false;
  for (const [id, t] of threadsOf(area)) {
    // A question is answered in its own thread only, never from above.
    if (t.handback === 'escalation' && isBelow(area, id, above)) {
      patchThread(tx, operation, id, { handback: null, expected: null }, 'other');
      cleared = true;
    }
  }
  if (cleared && top.handback === 'escalation') patchThread(tx, operation, above, { handback: null, expected: null }, 'other');
}

function onWithdraw(tx: Tx, ev: LeaseEventOf<'withdraw'>): void {
  const op = ev.thread;
  const area = tx.state.areas[op];
  if (!area) {
    const owner = Object.entries(tx.state.areas).find(([, a]) => a.threads[op] !== undefined);
    if (owner) throw new NexusError('WITHDRAW_NOT_FIRST_THREAD', `name the operation's first thread: ${owner[0]}`, { operation: owner[0] });
    return;
  }
  if (ev.by.session !== null) {
    throw new NexusError('WITHDRAW_BY_SESSION', 'a session may not withdraw a commission; escalate to have a round stopped');
  }
  if (ev.by.handle !== area.root.handle) {
    throw new NexusError('WITHDRAW_NOT_SENDER', `only ${area.root.handle}, who sent the first commission, may withdraw it`);
  }
  const discharge = threadsOf(area).filter(([, t]) => t.owing).map(([id]) => id);
  const sessions = liveSessions(area);
  record(tx, { kind: 'lease.withdrawn', body: { operation: op, by: ev.by } });
  if (tx.state.holder?.operation === op) {
    for (const id of discharge) patchThread(tx, op, id, { owing: false });
  }
  tx.effects.push({ type: 'stop', operation: op, discharge, sessions });
}

function grant(tx: Tx, operation: string, triggers: Trigger[]): void {
  const token = tx.state.token + 1;
  const rec = tx.state.parked[operation];
  record(tx, { kind: 'lease.claimed', body: { operation, token, at: tx.now, ready: rec === undefined, waiting: triggers } });
  const area = tx.state.areas[operation];
  if (area && area.base === null && rec) record(tx, { kind: 'lease.base', body: { operation, branch: rec.base } });
  tx.effects.push({ type: 'fence', operation, token });
  if (rec) tx.effects.push({ type: 'restore', operation, token, record: rec });
}

// After every event: release a finished holder, run the contention clock, promote the head of the queue,
// start what the holder may start. Repeats until nothing changes (a grant can meet a finished area).
function settle(tx: Tx): void {
  for (let round = 0; round < 1000; round++) {
    const before = tx.facts.length;
    const s = tx.state;
    const h = s.holder;
    const area: Area | undefined = h ? s.areas[h.operation] : undefined;
    if (h && area && h.ready && !h.withdrawn && s.pending === null && h.waiting.length === 0 && finished(area)) {
      record(tx, { kind: 'lease.released', body: { operation: h.operation, token: h.token, why: 'finished', requeue: [], at: tx.now } });
      continue;
    }
    if (h && area && h.withdrawn && h.ready && s.pending === null && !anyAlive(area, tx.facts_in)) {
      requestPark(tx, 'withdraw');
      continue;
    }
    if (h && area) {
      const contended = s.queue.length > 0 && !h.withdrawn && heldForHandback(area) !== null;
      if (contended && h.contention_since === null) {
        record(tx, { kind: 'lease.contention', body: { operation: h.operation, since: tx.now } });
        tx.effects.push({ type: 'schedule_tick', at: tx.now + LEASE_TIMES.contention_ms });
      } else if (!contended && h.contention_since !== null) {
        record(tx, { kind: 'lease.contention', body: { operation: h.operation, since: null } });
      }
    }
    if (!h && s.pending === null && s.queue.length > 0) {
      const head = s.queue[0]!;
      grant(tx, head.operation, head.triggers);
    }
    const h2 = tx.state.holder;
    const area2 = h2 ? tx.state.areas[h2.operation] : undefined;
    // A withdrawn holder starts nothing more: what arrives for it now waits for its park and its next grant.
    if (h2 && area2 && h2.ready && !h2.withdrawn && h2.waiting.length > 0) {
      const { start } = splitOrdered(area2, h2.waiting, tx.now);
      if (start.length > 0) {
        record(tx, { kind: 'lease.waiting', body: { operation: h2.operation, add: [], started: start.map((t) => t.id) } });
        startEffect(tx, h2.operation, start);
        const notice = tx.state.holder?.notice ?? null;
        if (notice !== null) {
          const last = tx.effects[tx.effects.length - 1];
          if (last?.type === 'start') last.notice = notice;
          record(tx, { kind: 'lease.notice_given', body: { operation: h2.operation } });
        }
      }
    }
    if (tx.facts.length === before) return;
  }
}

/** PARK REFUSED is a status mark: say when it appears, changes its words, or goes. */
function markChange(tx: Tx, before: LeaseState): void {
  const a = before.refusal;
  const b = tx.state.refusal;
  if (a !== null && (b === null || b.operation !== a.operation)) {
    tx.effects.push({ type: 'mark', operation: a.operation, mark: 'park_refused', text: null });
  }
  if (b !== null && (a === null || a.operation !== b.operation || a.text !== b.text)) {
    tx.effects.push({ type: 'mark', operation: b.operation, mark: 'park_refused', text: b.text });
  }
}
