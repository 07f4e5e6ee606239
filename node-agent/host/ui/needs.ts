// "Needs you": what waits on a person, across every workspace the node serves. Pure: a snapshot in,
// the list out, so the rules read (and are tested) without a node.
import type { SyncReport } from '../../../protocol/commands.js';
import type { StatusOperation, StatusRow, ThreadView } from '../../../protocol/receipts.js';
import { mayNeedPerson, type Snapshot } from './data.js';

type Where = { workspace: string; workspace_name: string };
type Thread = Where & { thread: string; operation: string; subject: string | null; to: string; opener: string };

export type NeedItem =
  /** A root a person opened was handed back (`nxc reply --escalate`): the text says what is needed. */
  | (Thread & { kind: 'escalated'; by: string; text: string; ts: string })
  /** A person's operation finished and its answer waits to be read or answered. */
  | (Thread & { kind: 'awaiting'; by: string; text: string; ts: string })
  /** The workspace a commission was addressed to refused it. */
  | (Thread & { kind: 'rejected'; code: string; ts: string })
  /**
   * The working copy was due to move on and its holder's work cannot be parked until a person finishes
   * something in the tree (a merge, a rebase): `what` is the lease's PARK REFUSED text, as status prints it.
   */
  | (Thread & { kind: 'park_refused'; what: string; ts: string })
  /** A channel step whose window ran out unanswered: the round went on without it. The thread is the round's. */
  | (Thread & { kind: 'lapsed'; channel: string; step: string; address: string; step_thread: string | null; deadline: string | null; ts: string })
  /**
   * A commission posted and waiting for the working copy, which another operation holds: its place in line
   * and the first thread of the operation ahead of it (`holder`: the one holding the copy, when status names one).
   */
  | (Thread & { kind: 'queued'; position: number; behind: string | null; holder: { thread: string; subject: string | null } | null; ts: string })
  /** A workspace cannot be read, or is registered and not served. */
  | (Where & { kind: 'service'; code: string; message: string })
  | (Where & { kind: 'sync'; problems: SyncProblem[] });

export type SyncProblem = { code: 'refused' | 'unreachable' | 'lag' | 'outbox' | 'rejected' | 'pending'; text: string };

/** What is wrong with a workspace's sync, if anything; an unbound workspace has nothing wrong. */
export function syncProblems(r: SyncReport | null): SyncProblem[] {
  if (r === null || !r.bound) return [];
  const out: SyncProblem[] = [];
  if (r.refused) out.push({ code: 'refused', text: `the relay refused this binding${r.last_error ? `: ${r.last_error}` : ''}` });
  else if (!r.connected) out.push({ code: 'unreachable', text: `relay ${r.relay} unreachable${r.last_error ? `: ${r.last_error}` : ''}` });
  if ((r.lag ?? 0) > 0) out.push({ code: 'lag', text: `${r.lag} op(s) behind the stream head (cursor ${r.cursor} of ${r.head ?? '?'})` });
  // While connected the outbox drains on its own; it is trouble only when nothing can take it.
  if (r.outbox > 0 && !r.connected) out.push({ code: 'outbox', text: `${r.outbox} op(s) written here wait to be pushed` });
  const rejected = Object.entries(r.rejected).filter(([, n]) => n > 0);
  if (rejected.length > 0) out.push({ code: 'rejected', text: `ops refused on arrival: ${rejected.map(([why, n]) => `${why} ${n}`).join(', ')}` });
  if (r.pending > 0) out.push({ code: 'pending', text: `${r.pending} op(s) held until their signing key is known` });
  return out;
}

/** The newest message that discharged the thread (an answer or a hand-back). */
function discharge(view: ThreadView) {
  for (let i = view.messages.length - 1; i >= 0; i--) {
    const m = view.messages[i]!;
    if (m.effect === 'answer' || m.effect === 'escalate') return { index: i, message: m };
  }
  return null;
}

/** The operation's first thread (its id is the operation's), or its first row. */
function rootRow(op: StatusOperation): StatusRow | undefined {
  return op.threads.find((r) => r.thread === op.operation) ?? op.threads[0];
}

function threadOf(where: Where, operation: string, row: StatusRow): Thread {
  return { ...where, thread: row.thread, operation, subject: row.subject, to: row.to, opener: row.opener };
}

/** What the working-copy lease asks of a person, or tells them: a refused park, a queued commission. */
function leaseItems(where: Where, ops: readonly StatusOperation[]): { refused: NeedItem[]; queued: NeedItem[] } {
  const refused: NeedItem[] = [];
  const queued: NeedItem[] = [];
  const holding = ops.find((o) => o.lease?.state === 'holds');
  const holderRoot = holding ? rootRow(holding) : undefined;
  for (const op of ops) {
    const lease = op.lease;
    const root = rootRow(op);
    if (lease === null || root === undefined) continue;
    const base = threadOf(where, op.operation, root);
    if (lease.park_refused !== null) refused.push({ kind: 'park_refused', ...base, what: lease.park_refused, ts: root.updated });
    if (lease.state === 'queued' && lease.position !== null) {
      const holder = holding && holderRoot ? { thread: holderRoot.thread, subject: holderRoot.subject } : null;
      queued.push({ kind: 'queued', ...base, position: lease.position, behind: lease.behind, holder, ts: root.updated });
    }
  }
  queued.sort((a, b) => (a.kind === 'queued' && b.kind === 'queued' ? a.position - b.position : 0));
  return { refused, queued };
}

/** The steps of the operation's rounds whose window ran out unanswered. */
function lapsedSteps(where: Where, op: StatusOperation): NeedItem[] {
  const out: NeedItem[] = [];
  for (const row of op.threads) {
    for (const step of row.round?.steps ?? []) {
      if (step.state !== 'lapsed') continue;
      out.push({
        kind: 'lapsed',
        ...threadOf(where, op.operation, row),
        channel: row.round!.channel,
        step: step.name,
        address: step.address,
        step_thread: step.thread,
        deadline: step.deadline,
        ts: step.deadline ?? row.updated,
      });
    }
  }
  return out;
}

function personItem(s: Snapshot, where: Where, operation: string, row: StatusRow): NeedItem | null {
  const view = s.views.get(`${where.workspace}/${row.thread}`);
  if (!view || view.thread.state !== 'answered') return null;
  // Only a thread a person opened waits on a person; a session's hand-back wakes that session.
  if (view.messages[0]?.session !== null) return null;
  const d = discharge(view);
  if (d === null) return null;
  // A person has written since the answer or the hand-back: it no longer waits on anyone.
  if (view.messages.slice(d.index + 1).some((m) => m.session === null)) return null;
  // Its sender withdrew it: the withdrawal (written in their name) is the answer, and they know it.
  if (d.message.session === null && d.message.author === row.opener) return null;
  const base = { ...where, thread: row.thread, operation, subject: row.subject, to: row.to, opener: row.opener, by: d.message.author, text: d.message.text, ts: d.message.ts };
  return row.escalated ? { kind: 'escalated', ...base } : { kind: 'awaiting', ...base };
}

/**
 * Needs you, most pressing first: the machinery's trouble (a workspace that cannot be read, sync that does not
 * move: everything else here may be stale until it is fixed), hand-backs, answers waiting, parks refused,
 * lapsed channel steps, refusals, then commissions queued for the working copy.
 */
export function needsOf(s: Snapshot): NeedItem[] {
  const people: NeedItem[] = [];
  const refusedParks: NeedItem[] = [];
  const lapsed: NeedItem[] = [];
  const rejected: NeedItem[] = [];
  const queued: NeedItem[] = [];
  const machinery: NeedItem[] = [];
  for (const w of s.workspaces) {
    const where = { workspace: w.id, workspace_name: w.name };
    if (w.error) machinery.push({ kind: 'service', ...where, code: w.error.code, message: w.error.message });
    const ops = w.status?.operations ?? [];
    const lease = leaseItems(where, ops);
    refusedParks.push(...lease.refused);
    queued.push(...lease.queued);
    for (const op of ops) {
      const before = people.length;
      for (const row of op.threads) {
        if (mayNeedPerson(row, w.id)) {
          const item = personItem(s, where, op.operation, row);
          if (item) people.push(item);
        }
        // A refused commission is the business of the workspace that sent it: another's, carried here, is its person's.
        if (row.rejected_code !== null && row.opened_in === w.id) {
          rejected.push({ kind: 'rejected', ...threadOf(where, op.operation, row), code: row.rejected_code, ts: row.updated });
        }
      }
      // A lapsed step matters while its operation runs, and beside the result it shaped while that waits on a
      // person here; once the person has read and written back, it is history (Operations still shows it).
      if (!op.finished || people.length > before) lapsed.push(...lapsedSteps(where, op));
    }
    const problems = syncProblems(w.sync);
    if (problems.length > 0) machinery.push({ kind: 'sync', ...where, problems });
  }
  for (const u of s.unserved) {
    machinery.push({ kind: 'service', workspace: u.id, workspace_name: u.root, code: 'NOT_SERVED', message: `registered with this node but not served: its store could not be opened (see the node log)` });
  }
  const newest = (a: NeedItem, b: NeedItem) => ('ts' in b ? b.ts : '').localeCompare('ts' in a ? a.ts : '');
  people.sort((a, b) => (a.kind === b.kind ? newest(a, b) : a.kind === 'escalated' ? -1 : 1));
  refusedParks.sort(newest);
  lapsed.sort(newest);
  rejected.sort(newest);
  return [...machinery, ...people, ...refusedParks, ...lapsed, ...rejected, ...queued];
}
