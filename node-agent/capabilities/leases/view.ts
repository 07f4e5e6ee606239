// What `nxc status` says about the working copy: who holds it and why, who waits, what is parked. Pure.
import { LEASE_TIMES, type LeaseState } from '../../../protocol/leases.js';
import { bound, heldForHandback } from './area.js';

export type LeaseView = {
  holder: {
    operation: string;
    /** The operation's first thread: the id status lists it under, marked "holds working tree". */
    thread: string;
    token: number;
    since: number;
    /** The thread whose unanswered hand-back keeps the copy while no thread is open, or null. */
    held_for_handback: string | null;
    /** The words of PARK REFUSED while a refused park is being retried, or null. */
    park_refused: string | null;
    withdrawn: boolean;
    bound: number | null;
    contention_deadline: number | null;
  } | null;
  /** `woken`: a parked operation whose session an answer woke, waiting for the copy ahead of commissions. */
  queue: Array<{ operation: string; position: number; threads: string[]; woken: boolean }>;
  parked: Array<{ operation: string; branch: string; park_branch: string; work: string | null }>;
  /** Null until a tick has asked the worker. */
  worker_answers_liveness: boolean | null;
  /** Closing notes for the human listing. */
  notes: string[];
};

export const LIVENESS_NOTE = "this workspace's runtime cannot say whether a session's process is alive";

export function leaseView(state: LeaseState): LeaseView {
  const h = state.holder;
  const area = h ? state.areas[h.operation] : undefined;
  return {
    holder:
      h === null
        ? null
        : {
            operation: h.operation,
            thread: h.operation,
            token: h.token,
            since: h.since,
            held_for_handback: area ? heldForHandback(area) : null,
            park_refused: state.refusal?.operation === h.operation ? state.refusal.text : null,
            withdrawn: h.withdrawn,
            bound: area ? bound(area) : null,
            contention_deadline: h.contention_since === null ? null : h.contention_since + LEASE_TIMES.contention_ms,
          },
    queue: state.queue.map((e, i) => ({ operation: e.operation, position: i + 1, threads: [...new Set(e.triggers.map((t) => t.thread))], woken: e.woken === true })),
    parked: Object.entries(state.parked).map(([operation, r]) => ({ operation, branch: r.branch, park_branch: r.park_branch, work: r.work })),
    worker_answers_liveness: state.liveness_known,
    notes: state.liveness_known === false ? [LIVENESS_NOTE] : [],
  };
}

/**
 * An operation's place in the queue for the copy, or null when it is not queued: its position (1 is next) and
 * the operation it waits behind (the holder, or with no holder the one queued ahead of it). The one source for
 * a receipt's `queued` and status's "queued (position N behind X)", so the two never disagree.
 */
export function queuePlace(state: LeaseState, operation: string): { position: number; behind: string | null } | null {
  const i = state.queue.findIndex((e) => e.operation === operation);
  if (i < 0) return null;
  return { position: i + 1, behind: state.holder?.operation ?? (i > 0 ? state.queue[i - 1]!.operation : null) };
}
