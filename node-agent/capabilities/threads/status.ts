// The rows `nxc status` is made of: an operation's threads as a tree, each row read from the fold. Pure;
// the status capability puts them together with what the lease and the rounds say.
import type { OperationLease, StatusOperation, StatusRow } from '../../../protocol/receipts.js';
import type { OperationBudget, OperationUsage } from '../../../protocol/usage.js';
import { isDone, openSubRounds, spendOf, turnsUsed, type OperationState, type ThreadState } from './fold.js';

/** The root of an operation: the thread with no parent (its id is the operation's id). */
function rootOf(state: OperationState): ThreadState | undefined {
  return state.threads[state.id] ?? Object.values(state.threads).find((t) => t.parent === null);
}

/** The root that awaits a person: the root of a finished operation, opened by a person who has not read its answer yet. */
function awaitingRoot(state: OperationState, finished: boolean): ThreadState | undefined {
  const root = finished ? rootOf(state) : undefined;
  return root !== undefined && root.opener.session === null && !isDone(root) ? root : undefined;
}


/** One thread as a status row. `finished`: whether its operation is. */
export function statusRow(state: OperationState, t: ThreadState, finished: boolean): StatusRow {
  const s = t.session === null ? undefined : state.sessions[t.session];
  const awaiting = awaitingRoot(state, finished)?.id === t.id;
  return {
    thread: t.id,
    parent: t.parent,
    subject: t.subject,
    opener: t.opener.handle,
    to: t.target.handle,
    state: t.state,
    escalated: t.escalated,
    substituted: t.substituted,
    written_by: t.state === 'answered' ? (t.written_by ?? null) : null,
    withdrawn: t.withdrawn ?? false,
    waiting_on_sub_round: t.state === 'open' && s !== undefined && !s.in_turn && openSubRounds(state, s.id).length > 0,
    // Nobody waits inside the flow: only the root of a finished operation, opened by a person, awaits one.
    awaiting_human: awaiting,
    // The person it awaits belongs to the workspace that opened the root (a synced log names people bare).
    awaiting_workspace: awaiting ? t.workspace : null,
    done: isDone(t),
    opened_in: t.workspace,
    // Whether this workspace trusts the one that opened it is the status capability's to say (trust.json).
    untrusted: false,
    answered_by: t.answered_by,
    session: s ? { id: s.id, handle: s.handle, depth: s.depth, turn: s.turn, running: s.in_turn, declaration_hash: s.declaration_hash ?? null, last_run: null } : null,
    messages: t.messages,
    updated: t.updated_ts,
    working_copy: t.last_message?.working_copy ?? null,
    rejected_code: t.rejected?.code ?? null,
    rejected_reason: t.rejected?.message ?? null,
  };
}

/** Orders a thread tree depth-first from its root, so rows read as the chain they are. */
function treeOrder(state: OperationState): ThreadState[] {
  const children = new Map<string | null, ThreadState[]>();
  for (const t of Object.values(state.threads)) {
    const key = t.parent !== null && state.threads[t.parent] ? t.parent : null;
    children.set(key, [...(children.get(key) ?? []), t]);
  }
  const out: ThreadState[] = [];
  const walk = (parent: string | null) => {
    for (const t of (children.get(parent) ?? []).sort((a, b) => (a.id < b.id ? -1 : 1))) {
      out.push(t);
      walk(t.id);
    }
  };
  walk(null);
  return out;
}

/** An operation's usage: this log's turns, what was carried in, and the total against the budget. */
export function operationUsage(state: OperationState, budget: OperationBudget): OperationUsage {
  const u = state.usage ?? { tokens_in: 0, tokens_out: 0, cost: 0, unpriced_turns: 0 };
  const total = spendOf(state);
  return {
    tokens_in: u.tokens_in,
    tokens_out: u.tokens_out,
    tokens: total.tokens,
    cost: total.cost,
    unpriced_turns: u.unpriced_turns,
    carried: state.usage_carried ?? { tokens: 0, cost: 0 },
    budget: { max_tokens: budget.max_tokens, max_cost: budget.max_cost },
  };
}

export function operationReport(state: OperationState, finished: boolean, budget: OperationBudget, lease: OperationLease | null = null): StatusOperation {
  const root = rootOf(state);
  const threads = treeOrder(state).map((t) => statusRow(state, t, finished));
  return {
    operation: state.id,
    subject: root?.subject ?? null,
    opener: root?.opener.handle ?? '',
    finished,
    threads,
    open: threads.filter((r) => r.state === 'open').length,
    turns: { used: turnsUsed(state), budget: budget.max_turns },
    usage: operationUsage(state, budget),
    lease,
    untrusted: false,
  };
}
