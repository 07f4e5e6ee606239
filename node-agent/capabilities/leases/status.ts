// What `nxc status` says about the working-copy lease, operation by operation: who holds the copy (with its token
// and bound), who queues behind whom, whose work is parked where, and a park that is refused and retried.
import type { LeaseState } from '../../../protocol/leases.js';
import type { OperationLease } from '../../../protocol/receipts.js';
import type { Exec } from '../../kernel/index.js';
import type { EngineDeps } from '../context.js';
import { loadLease } from './store.js';
import { leaseView, LIVENESS_NOTE, queuePlace } from './view.js';

export type LeaseStatus = {
  /** The lease line of an operation, or null when the lease has nothing to say about it. */
  of(operation: string): OperationLease | null;
  /** Every operation the lease names: status lists them even when their threads are all answered. */
  operations: string[];
  notes: string[];
  answersLiveness: boolean;
};

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const short = (sha: string): string => sha.slice(0, 12);

export async function leaseStatus(deps: EngineDeps, db: Exec): Promise<LeaseStatus> {
  return describeLease(await loadLease(db, deps.workspace.id), deps.answersLiveness !== false);
}

/** Pure: the per-operation lease lines of a lease state. */
export function describeLease(state: LeaseState, answersLiveness: boolean): LeaseStatus {
  const view = leaseView(state);
  const lines = new Map<string, OperationLease>();
  const base = (state_: OperationLease['state']): OperationLease => ({
    state: state_,
    text: '',
    token: null,
    bound: null,
    position: null,
    behind: null,
    parked: null,
    park_refused: null,
    held_for_handback: null,
    contention_deadline: null,
    withdrawn: false,
    woken: false,
  });
  for (const [operation, r] of Object.entries(state.parked)) {
    const line = base('parked');
    line.parked = r.work === null
      ? { branch: r.branch, commit: r.head, from_branch: r.branch, work: false }
      : { branch: r.park_branch, commit: r.work, from_branch: r.branch, work: true };
    lines.set(operation, line);
  }
  for (const q of view.queue) {
    const line = { ...(lines.get(q.operation) ?? base('queued')), state: 'queued' as const };
    const place = queuePlace(state, q.operation)!;
    line.position = place.position;
    line.behind = place.behind;
    line.woken = q.woken;
    lines.set(q.operation, line);
  }
  const h = view.holder;
  if (h !== null) {
    const line = { ...(lines.get(h.operation) ?? base('holds')), state: 'holds' as const };
    Object.assign(line, {
      token: h.token,
      bound: iso(h.bound),
      park_refused: h.park_refused,
      held_for_handback: h.held_for_handback,
      contention_deadline: iso(h.contention_deadline),
      withdrawn: h.withdrawn,
    });
    lines.set(h.operation, line);
  }
  for (const line of lines.values()) line.text = textOf(line);
  return {
    of: (operation) => lines.get(operation) ?? null,
    operations: [...lines.keys()],
    notes: answersLiveness ? [] : [LIVENESS_NOTE],
    answersLiveness,
  };
}

function textOf(l: OperationLease): string {
  const parts: string[] = [];
  if (l.state === 'holds') {
    parts.push(`holds working tree (token ${l.token})`);
    parts.push(l.bound === null ? 'no bound while nothing is owed' : `bound ${l.bound}`);
    if (l.withdrawn) parts.push('withdrawn: its work is parked once its sessions are gone');
    if (l.held_for_handback !== null) parts.push(`held for the hand-back in ${l.held_for_handback}`);
    if (l.contention_deadline !== null) parts.push(`another operation waits: parked at ${l.contention_deadline} unless answered`);
  } else if (l.state === 'queued') {
    parts.push(l.behind === null ? `queued (position ${l.position})` : `queued (position ${l.position} behind ${l.behind})`);
    if (l.woken) parts.push('an answer woke its session, which starts when the copy is free, with its work put back first');
  }
  if (l.parked !== null) {
    parts.push(
      l.parked.work
        ? `parked on ${l.parked.branch} at ${short(l.parked.commit)}`
        : `parked on ${l.parked.branch} at ${short(l.parked.commit)} (nothing was uncommitted)`,
    );
  }
  if (l.park_refused !== null) parts.push(`PARK REFUSED: ${l.park_refused}`);
  return parts.join(' · ');
}
