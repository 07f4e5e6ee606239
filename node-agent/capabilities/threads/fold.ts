// The pure fold: an operation's state is a function of its ops in (lamport, workspace, id) order.
import type { Author, MessageEffect, Op, Target } from '../../../protocol/ops.js';
import { compareOps } from '../../../protocol/ops.js';
import type { WorkingCopy } from '../../../protocol/working-copy.js';

export type ThreadState = {
  id: string;
  parent: string | null;
  subject: string | null;
  opener: Author;
  target: Target;
  /** The session that owes this thread its answer, when the target is a persona. */
  session: string | null;
  /** open: somebody owes an answer. answered: the turn was discharged. */
  state: 'open' | 'answered';
  escalated: boolean;
  substituted: boolean;
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
};

export type SessionState = {
  id: string;
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
};

/** A session as `session.created` makes it: anchored at its depth, no turn run yet. */
export function newSessionState(s: Pick<SessionState, 'id' | 'thread' | 'role' | 'handle' | 'depth'>): SessionState {
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
  return { id, threads: {}, sessions: {}, head: null };
}

/** An operation is finished when no thread in it owes an answer. */
export function isFinished(state: OperationState): boolean {
  const threads = Object.values(state.threads);
  return threads.length > 0 && threads.every((t) => t.state === 'answered');
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
  const extra = carried - turnsUsed({ ...state, turns_carried: 0 });
  return extra > (state.turns_carried ?? 0) ? { ...state, turns_carried: extra } : state;
}

/** Open threads opened by this session: the rounds it commissioned and still waits on. */
export function openSubRounds(state: OperationState, session: string): ThreadState[] {
  return Object.values(state.threads).filter((t) => t.opener.session === session && t.state === 'open');
}

/** True when `op` sorts after everything already folded, so it can be applied in place. */
export function appliesInOrder(state: OperationState, op: Op): boolean {
  return state.head === null || compareOps(state.head, op) < 0;
}

/**
 * Applies one op. Pure: returns a new state and leaves the input untouched.
 * Ops for things the state does not know yet are kept inert rather than
 * thrown on, since a synced log may deliver a child before its parent.
 */
export function applyOp(prev: OperationState, op: Op): OperationState {
  const state: OperationState = {
    id: prev.id,
    threads: { ...prev.threads },
    sessions: { ...prev.sessions },
    head: { lamport: op.lamport, workspace: op.workspace, id: op.id },
    ...(prev.turns_carried === undefined ? {} : { turns_carried: prev.turns_carried }),
  };
  switch (op.kind) {
    case 'thread.opened': {
      if (op.thread === null || state.threads[op.thread]) break;
      state.threads[op.thread] = {
        id: op.thread,
        parent: op.body.parent,
        subject: op.body.subject,
        opener: op.body.opener,
        target: op.body.target,
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
          next.expected_handle = op.body.effect === 'escalate' ? op.body.author.handle : null;
          next.answered_by = op.body.author.handle;
          next.answered_at = op.lamport;
          break;
        case 'reopen':
          next.state = 'open';
          next.escalated = false;
          next.substituted = false;
          next.expected_handle = null;
          break;
        case 'commission':
        case 'none':
          break;
      }
      state.threads[t.id] = next;
      const discharges = op.body.effect === 'answer' || op.body.effect === 'escalate';
      const touch = (id: string | null, patch: Partial<SessionState>) => {
        const s = id === null ? undefined : state.sessions[id];
        if (s) state.sessions[s.id] = { ...s, ...patch };
      };
      if (discharges) touch(op.body.author.session, { last_answer_at: op.lamport });
      if (t.session !== null && op.body.author.session !== t.session && op.body.effect !== 'commission') {
        touch(t.session, { last_input_at: op.lamport });
      }
      if (discharges && t.opener.session !== null && t.opener.session !== op.body.author.session) {
        touch(t.opener.session, { last_input_at: op.lamport });
      }
      break;
    }
    case 'commission.rejected': {
      const t = op.thread === null ? undefined : state.threads[op.thread];
      // Only a remote commission can be refused, and only by the workspace it was addressed to.
      if (!t || t.target.kind !== 'remote' || t.target.workspace !== op.workspace || t.rejected) break;
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
      if (s) state.sessions[s.id] = { ...s, last_input_at: op.lamport };
      break;
    }
    case 'session.created': {
      if (op.session === null || op.thread === null || state.sessions[op.session]) break;
      const carried = withCarriedTurns(state, op.body.carried_turns ?? 0).turns_carried;
      if (carried !== undefined) state.turns_carried = carried;
      state.sessions[op.session] = newSessionState({ id: op.session, thread: op.thread, role: op.body.role, handle: op.body.handle, depth: op.body.depth });
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
      state.sessions[s.id] = { ...s, in_turn: false, last_outcome: op.body.outcome };
      break;
    }
  }
  return state;
}

/** Folds a set of ops from scratch, in the canonical order. */
export function foldOperation(id: string, ops: readonly Op[]): OperationState {
  return [...ops].sort(compareOps).reduce(applyOp, emptyOperation(id));
}
