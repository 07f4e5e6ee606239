// The lease fold: the lease state is a pure function of its recorded facts, applied in log order.
import { emptyLeaseState, type Holder, type LeaseOpPayload, type LeaseState } from '../../../protocol/leases.js';

/**
 * Applies one recorded fact. Pure: returns a new state and leaves the input untouched. The rules change state
 * only through this function, so folding the facts they recorded always gives back the state they returned.
 * A fact that names something the state does not know is inert (a fact is never re-judged here).
 */
export function applyLeaseFact(prev: LeaseState, fact: LeaseOpPayload): LeaseState {
  const s: LeaseState = { ...prev };
  const holderOf = (operation: string): Holder | null =>
    s.holder !== null && s.holder.operation === operation ? s.holder : null;
  switch (fact.kind) {
    case 'lease.followed': {
      const { operation, root, base, threads } = fact.body;
      s.areas = { ...s.areas, [operation]: { root, base, last_word: 'other', threads } };
      break;
    }
    case 'lease.noted': {
      const { operation, thread, fact: next, last_word } = fact.body;
      const area = s.areas[operation];
      if (!area) break;
      const threads = { ...area.threads };
      if (next === null) delete threads[thread];
      else threads[thread] = next;
      s.areas = { ...s.areas, [operation]: { ...area, threads, last_word: last_word ?? area.last_word } };
      break;
    }
    case 'lease.queued': {
      const { operation, trigger, at, woken } = fact.body;
      const at_ = s.queue.findIndex((e) => e.operation === operation);
      const add = trigger === null ? [] : [trigger];
      if (woken === true) {
        // A woken parked operation goes ahead of every commission, behind the parked operations woken before it.
        const entry = at_ === -1 ? { operation, since: at, triggers: add } : { ...s.queue[at_]!, triggers: [...s.queue[at_]!.triggers, ...add] };
        const rest = s.queue.filter((e) => e.operation !== operation);
        const ahead = rest.findIndex((e) => e.woken !== true);
        const cut = ahead === -1 ? rest.length : ahead;
        s.queue = [...rest.slice(0, cut), { ...entry, woken: true }, ...rest.slice(cut)];
      } else if (at_ === -1) s.queue = [...s.queue, { operation, since: at, triggers: add }];
      else s.queue = s.queue.map((e, i) => (i === at_ ? { ...e, triggers: [...e.triggers, ...add] } : e));
      break;
    }
    case 'lease.claimed': {
      const { operation, token, at, ready, waiting } = fact.body;
      s.token = Math.max(s.token, token);
      s.holder = { operation, token, since: at, ready, withdrawn: false, contention_since: null, waiting, notice: null };
      s.queue = s.queue.filter((e) => e.operation !== operation);
      break;
    }
    case 'lease.base': {
      const area = s.areas[fact.body.operation];
      if (area) s.areas = { ...s.areas, [fact.body.operation]: { ...area, base: fact.body.branch } };
      break;
    }
    case 'lease.waiting': {
      const h = holderOf(fact.body.operation);
      if (!h) break;
      const started = new Set(fact.body.started);
      s.holder = { ...h, waiting: [...h.waiting.filter((t) => !started.has(t.id)), ...fact.body.add] };
      break;
    }
    case 'lease.contention': {
      const h = holderOf(fact.body.operation);
      if (h) s.holder = { ...h, contention_since: fact.body.since };
      break;
    }
    case 'lease.park_requested':
      s.pending = fact.body;
      break;
    case 'lease.parked': {
      s.parked = { ...s.parked, [fact.body.operation]: fact.body.record };
      s.pending = null;
      break;
    }
    case 'lease.refused': {
      const { operation, passable, reason, text, at } = fact.body;
      s.pending = null;
      // An unpassable refusal is followed by a release; only a passable one is retried and marked.
      if (passable) s.refusal = { operation, reason, text, since: s.refusal?.operation === operation ? s.refusal.since : at };
      break;
    }
    case 'lease.refusal_cleared':
      if (s.refusal?.operation === fact.body.operation) s.refusal = null;
      break;
    case 'lease.restored': {
      const h = holderOf(fact.body.operation);
      if (!h || h.token !== fact.body.token) break;
      const parked = { ...s.parked };
      delete parked[fact.body.operation];
      s.parked = parked;
      s.holder = { ...h, ready: true, notice: fact.body.notice };
      break;
    }
    case 'lease.notice_given': {
      const h = holderOf(fact.body.operation);
      if (h) s.holder = { ...h, notice: null };
      break;
    }
    case 'lease.released': {
      const h = holderOf(fact.body.operation);
      if (!h || h.token !== fact.body.token) break;
      s.holder = null;
      if (s.pending?.operation === h.operation) s.pending = null;
      if (s.refusal?.operation === h.operation) s.refusal = null;
      if (fact.body.requeue.length > 0) {
        s.queue = [...s.queue, { operation: h.operation, since: fact.body.at, triggers: fact.body.requeue }];
      } else {
        const areas = { ...s.areas };
        delete areas[h.operation];
        s.areas = areas;
      }
      break;
    }
    case 'lease.withdrawn': {
      const { operation } = fact.body;
      const h = holderOf(operation);
      if (h) {
        s.holder = { ...h, withdrawn: true, waiting: [] };
      } else if (s.queue.some((e) => e.operation === operation)) {
        s.queue = s.queue.filter((e) => e.operation !== operation);
        const areas = { ...s.areas };
        delete areas[operation];
        s.areas = areas;
      }
      break;
    }
    case 'lease.liveness':
      s.liveness_known = fact.body.known;
      break;
  }
  return s;
}

/** Folds lease facts from nothing: the state a store keeps, rebuilt from the op log. */
export function foldLease(facts: readonly LeaseOpPayload[]): LeaseState {
  return facts.reduce(applyLeaseFact, emptyLeaseState());
}
