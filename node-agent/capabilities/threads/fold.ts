// The pure fold: an operation's state is a function of its ops in (lamport, workspace, id) order. Each op
// is first judged for authority (who may open, answer, follow up or move what) from the log alone, so
// every node holding the same ops reaches the same verdict; an op without authority is inert.
import type { Author, MessageEffect, Op, Target } from '../../../protocol/ops.js';
import { compareOps } from '../../../protocol/ops.js';
import type { WorkingCopy } from '../../../protocol/working-copy.js';
import { writtenBy, type WrittenBy } from '../../../protocol/receipts.js';
import type { Spend } from '../../../protocol/usage.js';

export type ThreadState = {
  id: string;
  parent: string | null;
  subject: string | null;
  opener: Author;
  target: Target;
  /** The workspace that opened the thread (signed its `thread.opened`). */
  workspace: string;
  /** The workspace that owes its answer: a remote target's workspace, otherwise the one that opened it. */
  owner: string;
  /** Another workspace opened a thread by this id too: nothing moves it any more (see `authority`). */
  contested?: true;
  /** The session that owes this thread its answer, when the target is a persona. */
  session: string | null;
  /** open: somebody owes an answer. answered: the turn was discharged. */
  state: 'open' | 'answered';
  escalated: boolean;
  substituted: boolean;
  /** Who wrote the text of its answer (unset while open, and in states folded before it was kept). */
  written_by?: WrittenBy | null;
  /** Its answer is the discharge written when its operation was withdrawn. */
  withdrawn?: boolean;
  /** On an escalated thread, the only handle whose reply counts as the hand-back's answer. */
  expected_handle: string | null;
  answered_by: string | null;
  /** Lamport of the op that last discharged the thread; 0 while never answered. */
  answered_at: number;
  messages: number;
  last_message: { id: string; author: Author; effect: MessageEffect; ts: string; working_copy: WorkingCopy | null } | null;
  opened_ts: string;
  updated_ts: string;
  /** Set when the workspace a remote commission was addressed to refused it (nothing ran there). */
  rejected?: { code: string; message: string };
  /**
   * Lamport of the newest `thread.done` (the person who opened the operation read its result; on its first
   * thread only). An answer after it (answered_at above it) awaits that person again.
   */
  done_at?: number;
};

export type SessionState = {
  id: string;
  /** The workspace that runs it (signed its `session.created`): only that one moves it. */
  workspace: string;
  thread: string;
  role: string;
  handle: string;
  depth: number;
  turn: number;
  /** A turn has started and its end has not been recorded. */
  in_turn: boolean;
  /** Lamport of the op that started the current (or last) turn. */
  turn_started_at: number;
  declaration_hash: string | null;
  last_outcome: string | null;
  /** Lamport of this session's newest answer or escalation anywhere. */
  last_answer_at: number;
  /** Lamport of the newest thing it has to read: a message to its thread, or an answer to a round it opened. */
  last_input_at: number;
};

export type OperationState = {
  /** The fold's rules this state was made by; a state made by other rules is folded again from the log. */
  v: typeof FOLD_VERSION;
  id: string;
  threads: Record<string, ThreadState>;
  sessions: Record<string, SessionState>;
  /** Sort key of the newest folded op, so a late arrival can be recognised. */
  head: { lamport: number; workspace: string; id: string } | null;
  /**
   * Turns started elsewhere that this log does not show: the most a cross-workspace commission carried in
   * (`carried_turns`) beyond the turns folded before it. Absent while nothing was carried.
   */
  turns_carried?: number;
  /**
   * What the turns folded here spent (each turn's end counted once, when it ends the running turn). Absent
   * while no turn reported usage.
   */
  usage?: FoldedUsage;
  /**
   * Spend this log does not show: the most a commission's stamp or an answer from another workspace said the
   * operation had spent beyond what was folded before it. Only ever grows. Absent while nothing was carried.
   */
  usage_carried?: Spend;
};

/** The usage of the turns one log holds. */
export type FoldedUsage = { tokens_in: number; tokens_out: number; cost: number; unpriced_turns: number };

/** How the answer written when an operation is withdrawn begins (the seed's `sidecar:` prefix, then who withdrew it). */
export const WITHDRAWN_PREFIX = 'sidecar: withdrawn by ';

/** Bumped whenever the rules change what a stored state holds: older states are re-folded from the log. */
export const FOLD_VERSION = 4;

/**
 * Why the fold took nothing from an op (it stays in the log, inert). Stable words: `nxs sync status`
 * counts inert ops by them.
 */
export const INERT_REASONS = [
  'not_owner', // answers, hand-backs, refusals, sessions: only the workspace the thread is addressed to
  'not_opener', // a thread's first message, or its result marked read (thread.done): only the workspace that opened it
  'not_party', // follow-ups: only the workspace that opened the thread or the one it is addressed to
  'not_session_owner', // a session's turns: only the workspace that runs it
  'forged_author', // the message names, as its author, a session another workspace runs
  'contested', // the thread was opened by two workspaces: nothing moves it any more
  'unknown_thread', // the thread is not (yet) known here
  'unknown_session', // the session is not (yet) known here
] as const;
export type InertReason = (typeof INERT_REASONS)[number];

/** A session as `session.created` makes it: anchored at its depth, no turn run yet. */
export function newSessionState(s: Pick<SessionState, 'id' | 'workspace' | 'thread' | 'role' | 'handle' | 'depth'>): SessionState {
  return {
    ...s,
    turn: 0,
    in_turn: false,
    turn_started_at: 0,
    declaration_hash: null,
    last_outcome: null,
    last_answer_at: 0,
    last_input_at: 0,
  };
}

export function emptyOperation(id: string): OperationState {
  return { v: FOLD_VERSION, id, threads: {}, sessions: {}, head: null };
}

/** Whether the person who opened `t` has read its newest answer (`nxc done` after it). */
export function isDone(t: Pick<ThreadState, 'state' | 'answered_at' | 'done_at'>): boolean {
  return t.state === 'answered' && (t.done_at ?? 0) > t.answered_at;
}

/** An operation is finished when no thread in it owes an answer (a contested thread never will: it does not count). */
export function isFinished(state: OperationState): boolean {
  const threads = Object.values(state.threads);
  return threads.length > 0 && threads.every((t) => t.state === 'answered' || t.contested === true);
}

/**
 * The turns all sessions of the operation have started together: every turn folded here (each session's
 * turns are numbered from 1, so its count is its last number), plus what a commission from another
 * workspace carried in. The operation budget is measured against this.
 */
export function turnsUsed(state: OperationState): number {
  let turns = 0;
  for (const s of Object.values(state.sessions)) turns += s.turn;
  return turns + (state.turns_carried ?? 0);
}

/**
 * The state with `carried` turns (what a commission from another workspace says its operation had used)
 * taken in: what the asker had used counts from here on, and the turns folded so far are not counted twice.
 */
export function withCarriedTurns(state: OperationState, carried: number): OperationState {
  // The turns folded here are never negative: a claim no larger than what was carried in already moves
  // nothing, and most claim nothing (the count of every session's turns is not walked for them).
  if (carried <= (state.turns_carried ?? 0)) return state;
  const extra = carried - turnsUsed({ ...state, turns_carried: 0 });
  return extra > (state.turns_carried ?? 0) ? { ...state, turns_carried: extra } : state;
}

/** What the turns folded here spent, in the two figures budgets count. */
function ownSpend(state: OperationState): Spend {
  const u = state.usage;
  return u === undefined ? { tokens: 0, cost: 0 } : { tokens: u.tokens_in + u.tokens_out, cost: u.cost };
}

/**
 * What the operation has spent, as budgets count it: every turn folded here plus what commissions and
 * answers from other workspaces carried in beyond them.
 */
export function spendOf(state: OperationState): Spend {
  const own = ownSpend(state);
  const carried = state.usage_carried;
  return carried === undefined ? own : { tokens: own.tokens + carried.tokens, cost: own.cost + carried.cost };
}

/**
 * The state with a claim of spend (what another workspace said this operation had spent) taken in: only
 * what exceeds the turns folded so far counts, and the carried figure never shrinks. A claim can raise the
 * total, never lower it.
 */
export function withCarriedUsage(state: OperationState, claim: Spend | undefined): OperationState {
  if (claim === undefined) return state;
  const own = ownSpend(state);
  const was = state.usage_carried ?? { tokens: 0, cost: 0 };
  const next = { tokens: Math.max(was.tokens, claim.tokens - own.tokens), cost: Math.max(was.cost, claim.cost - own.cost) };
  if (next.tokens === was.tokens && next.cost === was.cost) return state;
  return { ...state, usage_carried: next };
}

/** Open threads opened by this session: the rounds it commissioned and still waits on. */
export function openSubRounds(state: OperationState, session: string): ThreadState[] {
  return Object.values(state.threads).filter((t) => t.opener.session === session && t.state === 'open' && t.contested !== true);
}

/** True when `op` sorts after everything already folded, so it can be applied in place. */
export function appliesInOrder(state: OperationState, op: Op): boolean {
  return state.head === null || compareOps(state.head, op) < 0;
}

/** The workspace that owes a thread opened by `opener` to `target` its answer. */
export function ownerOf(opener: string, target: Target): string {
  return target.kind === 'remote' ? target.workspace : opener;
}

/**
 * Workspaces that may withdraw a thread (a substituted answer in someone's name): the one that opened
 * it, the one whose person opened the operation, and any whose commission the thread's owner admitted
 * in this operation (a node that took in only part of the operation knows that much).
 */
function withdrawers(state: OperationState, t: ThreadState): Set<string> {
  const out = new Set([t.workspace]);
  const root = state.threads[state.id];
  if (root && !root.contested) out.add(root.workspace);
  for (const x of Object.values(state.threads)) {
    if (x.target.kind === 'remote' && x.owner === t.owner && x.session !== null) out.add(x.workspace);
  }
  return out;
}

/**
 * Whether `op` (signed by `op.workspace`) may do what it claims in this operation, as a function of the
 * operation's ops folded so far: null when it may (or when it is not this fold's to judge), else why it
 * is inert. Decided from the log alone, never from local trust entries, so every node agrees.
 */
export function authority(state: OperationState, op: Op): InertReason | null {
  switch (op.kind) {
    case 'thread.opened': {
      if (op.thread === null) return 'unknown_thread';
      // Only an operation's first thread has no parent (its id is the operation's), and none is its own.
      if ((op.body.parent === null && op.thread !== op.operation) || op.body.parent === op.thread) return 'not_owner';
      const known = state.threads[op.thread];
      // Two openings of the operation's first thread cannot be told apart (its id is not bound to the
      // workspace that made it): a contest, which freezes it. A repeat by its own workspace is ignored.
      if (known && known.workspace !== op.workspace && known.parent === null) return 'contested';
      if (op.body.parent === null) return null;
      const parent = state.threads[op.body.parent];
      // Beneath a thread only the workspace that owes it opens threads (its sessions' commissions); a
      // thread whose parent has not been folded waits for it (in an honest log the parent sorts first).
      if (!parent) return 'unknown_thread';
      if (parent.contested) return 'contested';
      if (parent.owner !== op.workspace) return 'not_owner';
      // Another opening of a known id beneath a thread: its first opening was by that thread's owner too.
      if (known && known.workspace !== op.workspace) return 'not_owner';
      const by = op.body.opener.session === null ? undefined : state.sessions[op.body.opener.session];
      if (by && by.workspace !== op.workspace) return 'forged_author';
      return null;
    }
    case 'message.posted': {
      const t = op.thread === null ? undefined : state.threads[op.thread];
      if (!t) return 'unknown_thread';
      if (t.contested) return 'contested';
      const by = op.body.author.session === null ? undefined : state.sessions[op.body.author.session];
      if (by && by.workspace !== op.workspace) return 'forged_author';
      switch (op.body.effect) {
        case 'commission':
          return op.workspace === t.workspace ? null : 'not_opener';
        case 'answer':
        case 'escalate':
          if (op.workspace === t.owner) return null;
          if (op.body.effect === 'answer' && op.body.substituted && withdrawers(state, t).has(op.workspace)) return null;
          // A commission to another workspace that no node there took up is handed back by the asking side at
          // its deadline: a stand-in escalation by the opener, only while no session of the target holds it.
          if (op.body.effect === 'escalate' && op.body.substituted && t.target.kind === 'remote' && op.workspace === t.workspace && t.session === null) return null;
          return 'not_owner';
        case 'reopen':
        case 'none':
          return op.workspace === t.workspace || op.workspace === t.owner ? null : 'not_party';
      }
      return null;
    }
    case 'commission.rejected': {
      const t = op.thread === null ? undefined : state.threads[op.thread];
      if (!t) return 'unknown_thread';
      if (t.contested) return 'contested';
      // Only a remote commission can be refused, and only by the workspace it was addressed to.
      return t.target.kind === 'remote' && t.owner === op.workspace ? null : 'not_owner';
    }
    case 'session.created': {
      const t = op.thread === null ? undefined : state.threads[op.thread];
      if (!t) return 'unknown_thread';
      if (t.contested) return 'contested';
      return t.owner === op.workspace ? null : 'not_owner';
    }
    case 'thread.done': {
      const t = op.thread === null ? undefined : state.threads[op.thread];
      if (!t) return 'unknown_thread';
      if (t.contested) return 'contested';
      // Only the workspace whose person opened the operation says that person has read its result.
      return t.parent === null && t.workspace === op.workspace ? null : 'not_opener';
    }
    case 'session.turn_started':
    case 'session.turn_ended': {
      const s = op.session === null ? undefined : state.sessions[op.session];
      if (!s) return 'unknown_session';
      return s.workspace === op.workspace ? null : 'not_session_owner';
    }
    default:
      // Other capabilities' ops (rounds, leases) and kinds newer than this node: not this fold's to judge.
      return null;
  }
}

/**
 * One step of the fold: the state after `op`, and why it was inert (null when it was not). `owned`: the
 * caller made `prev`'s thread and session maps itself and keeps no other reference to them (an earlier step
 * of the same run copied them, see {@link foldRun}), so this step writes into them instead of copying.
 */
export function foldStep(prev: OperationState, op: Op, owned = false): { state: OperationState; inert: InertReason | null } {
  const inert = authority(prev, op);
  if (inert === null) return { state: applyAuthorized(prev, op, owned), inert };
  const state: OperationState = { ...prev, head: { lamport: op.lamport, workspace: op.workspace, id: op.id } };
  // A second opening by another workspace freezes the thread: neither claimant may move it from now on.
  if (inert === 'contested' && op.kind === 'thread.opened' && op.thread !== null) {
    const t = prev.threads[op.thread];
    if (t && t.workspace !== op.workspace && !t.contested) state.threads = { ...prev.threads, [t.id]: { ...t, contested: true } };
  }
  return { state, inert };
}

/** Applies one op (inert ones only move the head). Pure: returns a new state and leaves the input untouched. */
export function applyOp(prev: OperationState, op: Op): OperationState {
  return foldStep(prev, op).state;
}

/**
 * Folds `ops`, in the order given, onto `start`, and tells `inert` each op the fold took nothing from.
 * `start` is left untouched, as by {@link applyOp}: the first op that moves anything copies its thread
 * and session maps, and the ops after it write into that copy. So a run costs one copy of an operation's
 * maps, not one per op: a copy grows with the operation (~0.2 ms for 500 entries), and one op at a time
 * made a refold, or a long operation's every command, pay it again for each op.
 */
export function foldRun(start: OperationState, ops: Iterable<Op>, inert?: (op: Op, reason: InertReason) => void): OperationState {
  let state = start;
  let owned = false;
  for (const op of ops) {
    const step = foldStep(state, op, owned);
    state = step.state;
    // A step that moved something made the maps it returned; an inert one passed on the maps it was given.
    if (step.inert === null) owned = true;
    else inert?.(op, step.inert);
  }
  return state;
}

/**
 * Applies one op that has authority. Pure: returns a new state and leaves the input untouched.
 * Ops for things the state does not know yet are kept inert rather than
 * thrown on, since a synced log may deliver a child before its parent.
 */
function applyAuthorized(prev: OperationState, op: Op, owned: boolean): OperationState {
  const state: OperationState = {
    v: FOLD_VERSION,
    id: prev.id,
    threads: owned ? prev.threads : { ...prev.threads },
    sessions: owned ? prev.sessions : { ...prev.sessions },
    head: { lamport: op.lamport, workspace: op.workspace, id: op.id },
    ...(prev.turns_carried === undefined ? {} : { turns_carried: prev.turns_carried }),
    ...(prev.usage === undefined ? {} : { usage: prev.usage }),
    ...(prev.usage_carried === undefined ? {} : { usage_carried: prev.usage_carried }),
  };
  switch (op.kind) {
    case 'thread.opened': {
      if (op.thread === null) break;
      const known = state.threads[op.thread];
      if (known) break; // a repeat
      state.threads[op.thread] = {
        id: op.thread,
        parent: op.body.parent,
        subject: op.body.subject,
        opener: op.body.opener,
        target: op.body.target,
        workspace: op.workspace,
        owner: ownerOf(op.workspace, op.body.target),
        session: null,
        state: 'open',
        escalated: false,
        substituted: false,
        expected_handle: null,
        answered_by: null,
        answered_at: 0,
        messages: 0,
        last_message: null,
        opened_ts: op.ts,
        updated_ts: op.ts,
      };
      break;
    }
    case 'message.posted': {
      const t = op.thread === null ? undefined : state.threads[op.thread];
      if (!t) break;
      const next: ThreadState = {
        ...t,
        messages: t.messages + 1,
        updated_ts: op.ts,
        last_message: {
          id: op.body.message,
          author: op.body.author,
          effect: op.body.effect,
          ts: op.ts,
          working_copy: op.body.refs.working_copy,
        },
      };
      switch (op.body.effect) {
        case 'answer':
        case 'escalate':
          next.state = 'answered';
          next.escalated = op.body.effect === 'escalate';
          next.substituted = op.body.substituted;
          next.written_by = writtenBy(op.body);
          next.withdrawn = op.body.substituted && op.body.text.startsWith(WITHDRAWN_PREFIX);
          next.expected_handle = op.body.effect === 'escalate' ? op.body.author.handle : null;
          next.answered_by = op.body.author.handle;
          next.answered_at = op.lamport;
          break;
        case 'reopen':
          next.state = 'open';
          next.escalated = false;
          next.substituted = false;
          next.written_by = null;
          next.withdrawn = false;
          next.expected_handle = null;
          break;
        case 'commission':
        case 'none':
          break;
      }
      state.threads[t.id] = next;
      // An answer from the workspace that owes a remote commission says what the far side had spent.
      if (op.body.usage !== undefined && t.target.kind === 'remote' && op.workspace === t.owner && op.body.effect !== 'commission') {
        const carried = withCarriedUsage(state, op.body.usage).usage_carried;
        if (carried !== undefined) state.usage_carried = carried;
      }
      const discharges = op.body.effect === 'answer' || op.body.effect === 'escalate';
      // A session moves only through a thread whose side it is on: its author's own, the owner's for
      // the session owing the thread, the opening workspace's for the session that opened it.
      const touch = (id: string | null, side: string, patch: Partial<SessionState>) => {
        const s = id === null ? undefined : state.sessions[id];
        if (s && s.workspace === side) state.sessions[s.id] = { ...s, ...patch };
      };
      if (discharges) touch(op.body.author.session, op.workspace, { last_answer_at: op.lamport });
      if (t.session !== null && op.body.author.session !== t.session && op.body.effect !== 'commission') {
        touch(t.session, t.owner, { last_input_at: op.lamport });
      }
      if (discharges && t.opener.session !== null && t.opener.session !== op.body.author.session) {
        touch(t.opener.session, t.workspace, { last_input_at: op.lamport });
      }
      break;
    }
    case 'commission.rejected': {
      const t = op.thread === null ? undefined : state.threads[op.thread];
      if (!t || t.target.kind !== 'remote' || t.rejected) break;
      state.threads[t.id] = {
        ...t,
        state: 'answered',
        escalated: true,
        substituted: false,
        expected_handle: null,
        answered_by: t.target.handle,
        answered_at: op.lamport,
        updated_ts: op.ts,
        rejected: { code: op.body.code, message: op.body.message },
      };
      const s = t.opener.session === null ? undefined : state.sessions[t.opener.session];
      if (s && s.workspace === t.workspace) state.sessions[s.id] = { ...s, last_input_at: op.lamport };
      break;
    }
    case 'thread.done': {
      const t = op.thread === null ? undefined : state.threads[op.thread];
      if (!t || (t.done_at ?? 0) >= op.lamport) break;
      state.threads[t.id] = { ...t, done_at: op.lamport };
      break;
    }
    case 'session.created': {
      if (op.session === null || op.thread === null || state.sessions[op.session]) break;
      const carried = withCarriedTurns(state, op.body.carried_turns ?? 0).turns_carried;
      if (carried !== undefined) state.turns_carried = carried;
      const carriedUsage = withCarriedUsage(state, op.body.carried_usage).usage_carried;
      if (carriedUsage !== undefined) state.usage_carried = carriedUsage;
      state.sessions[op.session] = newSessionState({ id: op.session, workspace: op.workspace, thread: op.thread, role: op.body.role, handle: op.body.handle, depth: op.body.depth });
      const t = state.threads[op.thread];
      if (t) state.threads[op.thread] = { ...t, session: op.session };
      break;
    }
    case 'session.turn_started': {
      const s = op.session === null ? undefined : state.sessions[op.session];
      if (!s || op.body.turn <= s.turn) break;
      state.sessions[s.id] = {
        ...s,
        turn: op.body.turn,
        in_turn: true,
        turn_started_at: op.lamport,
        declaration_hash: op.body.declaration_hash,
        last_outcome: null,
      };
      break;
    }
    case 'session.turn_ended': {
      const s = op.session === null ? undefined : state.sessions[op.session];
      if (!s || op.body.turn !== s.turn) break;
      // A turn's usage counts once: a second report of the same turn's end changes nothing it spent.
      const u = op.body.usage;
      if (u !== undefined && s.in_turn) {
        const was = state.usage ?? { tokens_in: 0, tokens_out: 0, cost: 0, unpriced_turns: 0 };
        state.usage = {
          tokens_in: was.tokens_in + u.tokens_in,
          tokens_out: was.tokens_out + u.tokens_out,
          cost: was.cost + (u.cost ?? 0),
          unpriced_turns: was.unpriced_turns + (u.cost === null ? 1 : 0),
        };
      }
      state.sessions[s.id] = { ...s, in_turn: false, last_outcome: op.body.outcome };
      break;
    }
  }
  return state;
}

/** Folds a set of ops from scratch, in the canonical order. */
export function foldOperation(id: string, ops: readonly Op[]): OperationState {
  return foldWithVerdicts(id, ops).state;
}

/** Folds a set of ops from scratch, and names the ops that were inert (by id) with why. */
export function foldWithVerdicts(id: string, ops: readonly Op[]): { state: OperationState; inert: Map<string, InertReason> } {
  const inert = new Map<string, InertReason>();
  const state = foldRun(emptyOperation(id), [...ops].sort(compareOps), (op, reason) => inert.set(op.id, reason));
  return { state, inert };
}
