// The brakes beside the depth guard: loops at a fixed depth never go deeper, so they are stopped by what
// they cost (the operation budget in turns, tokens and money, and the workspace's daily ceiling) and by what
// they repeat. All are declared, never set per call.
import { and, eq, gte, inArray, isNull, sql } from 'drizzle-orm';
import { NexusError } from '../../../protocol/errors.js';
import type { Persona } from '../../../protocol/persona.js';
import type { Warning } from '../../../protocol/receipts.js';
import { NO_SPEND, utcDay, type BudgetName, type DailyBudget, type OperationBudget, type Spend } from '../../../protocol/usage.js';
import { tables } from '../../adapters/store/index.js';
import { declaredOperationBudget } from '../../adapters/workspace/index.js';
import type { Exec } from '../../kernel/index.js';
import type { EngineDeps } from '../context.js';
import { spendOf, turnsUsed, type OperationState, type SessionState } from './fold.js';

/**
 * The turns all sessions of one operation may start together when the workspace declares no other
 * (`operation_budget` in `.nxs/config.json`). The deepest chain the depth guard admits costs 63 turns
 * (32 down, 31 woken on the way back); an orchestrator's hundred rounds with a persona cost 201, and
 * with a three-step channel 401. 500 lets those through, and stops a loop of two sessions after 250 passes.
 */
export const DEFAULT_OPERATION_BUDGET = 500;

/**
 * The budget in force for this workspace now: its config's, or the default turns with tokens and cost
 * uncapped. With `persona` (the persona the operation was opened to), each figure it declares lower
 * applies instead; one it declares higher is ignored, so nothing raises the workspace's.
 */
export function operationBudget(deps: Pick<EngineDeps, 'workspace'>, persona?: Persona | null): OperationBudget {
  const declared = declaredOperationBudget(deps.workspace.paths);
  const own = { max_turns: declared.max_turns ?? DEFAULT_OPERATION_BUDGET, max_tokens: declared.max_tokens, max_cost: declared.max_cost };
  const lower = persona?.operation_budget;
  if (lower === undefined) return own;
  const min = (a: number | null, b: number | undefined) => (b === undefined ? a : a === null ? b : Math.min(a, b));
  return { max_turns: min(own.max_turns, lower.max_turns)!, max_tokens: min(own.max_tokens, lower.max_tokens), max_cost: min(own.max_cost, lower.max_cost) };
}

/** The budget for `state`'s operation: the workspace's, lowered by the persona its first thread was opened to here. */
export async function budgetOf(deps: Pick<EngineDeps, 'workspace' | 'loadPersona'>, state: OperationState): Promise<OperationBudget> {
  const root = state.threads[state.id];
  if (root === undefined || root.target.kind !== 'persona' || root.owner !== deps.workspace.id) return operationBudget(deps);
  const persona = await deps.loadPersona(deps.workspace.paths.root, root.target.role).catch(() => null);
  return operationBudget(deps, persona);
}

/** The warning reasons a turn refused by a budget carries: the operation's, and the workspace's day's. */
export const BUDGET_REASON = 'operation_budget_exhausted';
export const DAILY_BUDGET_REASON = 'daily_budget_exhausted';

/** A refusal by either budget: no further turn starts, and the operation is handed back. */
export function isBudgetRefusal(reason: string | undefined): boolean {
  return reason === BUDGET_REASON || reason === DAILY_BUDGET_REASON;
}

/** Which of the operation's budgets is used up with `planned` more turns counted, and how far: null when none is. */
export function exhaustedBudget(state: OperationState, budget: OperationBudget, planned = 0): { name: BudgetName; text: string } | null {
  const turns = turnsUsed(state) + planned;
  if (turns >= budget.max_turns) return { name: 'max_turns', text: `has used ${turns} of its budget of ${budget.max_turns} turns (operation_budget.max_turns)` };
  const spend = spendOf(state);
  if (budget.max_tokens !== null && spend.tokens >= budget.max_tokens) {
    return { name: 'max_tokens', text: `has spent ${spend.tokens} of its budget of ${budget.max_tokens} tokens (operation_budget.max_tokens)` };
  }
  if (budget.max_cost !== null && spend.cost >= budget.max_cost) {
    return { name: 'max_cost', text: `has spent $${money(spend.cost)} of its budget of $${money(budget.max_cost)} (operation_budget.max_cost)` };
  }
  return null;
}

/** Which daily ceiling today's spend has reached, with when it resets: null when none. */
export function exhaustedDaily(today: Spend, daily: DailyBudget | null, now: Date): { name: BudgetName; text: string; resetsAt: string } | null {
  if (daily === null) return null;
  const { resetsAt } = utcDay(now);
  if (daily.max_tokens !== undefined && today.tokens >= daily.max_tokens) {
    return { name: 'daily_max_tokens', resetsAt, text: `this workspace has spent ${today.tokens} of its daily budget of ${daily.max_tokens} tokens today (daily_budget.max_tokens); it resets at ${resetsAt}` };
  }
  if (daily.max_cost !== undefined && today.cost >= daily.max_cost) {
    return { name: 'daily_max_cost', resetsAt, text: `this workspace has spent $${money(today.cost)} of its daily budget of $${money(daily.max_cost)} today (daily_budget.max_cost); it resets at ${resetsAt}` };
  }
  return null;
}

function money(n: number): string {
  return n.toFixed(n < 1 ? 4 : 2);
}

/**
 * Whether one more turn may start in `state`'s operation; `planned` counts the turns the command has
 * planned there already, `today` what this workspace has spent today. Null when it may; otherwise the
 * warning that says which budget refused it.
 */
export function budgetRefusal(
  state: OperationState,
  session: SessionState,
  planned: number,
  budget: OperationBudget,
  failureClass: Warning['class'],
  daily: { today: Spend; rule: DailyBudget | null; now: Date } = { today: NO_SPEND, rule: null, now: new Date(0) },
): Warning | null {
  const base = { class: failureClass, session: session.id, thread: session.thread, role: session.role };
  const op = exhaustedBudget(state, budget, planned);
  if (op !== null) {
    return {
      ...base,
      reason: BUDGET_REASON,
      budget: op.name,
      message: `${session.handle} was not started: operation ${state.id} ${op.text}. The message is posted; no further turn starts in this operation, and it is handed back to whoever opened it`,
    };
  }
  const day = exhaustedDaily(daily.today, daily.rule, daily.now);
  if (day !== null) {
    return {
      ...base,
      reason: DAILY_BUDGET_REASON,
      budget: day.name,
      resets_at: day.resetsAt,
      message: `${session.handle} was not started: ${day.text}. The message is posted; no turn starts in any operation of this workspace until then, and this one is handed back to whoever opened it`,
    };
  }
  return null;
}

/** The hand-back written in the name of each session a budget stops, the root's included; `why` says which budget, in words. */
export function budgetHandBack(operation: string, why: string): string {
  return (
    `nexus: operation ${operation} ${why}, so no further turn starts in it ` +
    `and this task is handed back unfinished. The threads beneath this one show what was done; send a new commission to go on.`
  );
}

/** What this workspace's own turns that ended in the current UTC day spent, over all its operations. */
export async function spendToday(db: Exec, workspace: string, now: Date): Promise<Spend> {
  const { start } = utcDay(now);
  const rows = await db
    .select({
      tokens: sql<string | null>`sum(coalesce((${tables.ops.body}->'usage'->>'tokens_in')::bigint, 0) + coalesce((${tables.ops.body}->'usage'->>'tokens_out')::bigint, 0))`,
      cost: sql<string | null>`sum(coalesce((${tables.ops.body}->'usage'->>'cost')::float8, 0))`,
    })
    .from(tables.ops)
    .where(and(eq(tables.ops.workspace, workspace), eq(tables.ops.kind, 'session.turn_ended'), gte(tables.ops.ts, start), isNull(tables.ops.inert)));
  const r = rows[0];
  return { tokens: Number(r?.tokens ?? 0), cost: Number(r?.cost ?? 0) };
}

/**
 * How many times one persona may commission the same role with the same words in one operation and be
 * answered, before a further identical commission is refused as a loop (REPEATED_COMMISSION).
 */
export const REPEAT_LIMIT = 3;

/**
 * Refuses a commission that repeats one already answered REPEAT_LIMIT times in this operation: the same
 * asker (its handle, so every session of one persona counts together), the same target and the same
 * text. Only asks answered before the asking turn began count, the ones it is asking again after
 * seeing their answers: a fan-out of identical asks in one turn, or a chain going deeper, is not a
 * repeat. A runaway script or model stops here within seconds, long before the budget.
 */
export async function checkRepeat(db: Exec, state: OperationState, asker: SessionState, target: string, text: string): Promise<void> {
  const answered = Object.values(state.threads).filter(
    (t) => t.opener.handle === asker.handle && t.target.handle === target && t.answered_at > 0 && t.answered_at < asker.turn_started_at,
  );
  if (answered.length < REPEAT_LIMIT) return;
  const rows = await db
    .select({ thread: tables.ops.thread, text: sql<string>`${tables.ops.body}->>'text'` })
    .from(tables.ops)
    .where(
      and(
        eq(tables.ops.operation, state.id),
        eq(tables.ops.kind, 'message.posted'),
        inArray(
          tables.ops.thread,
          answered.map((t) => t.id),
        ),
        sql`${tables.ops.body}->>'effect' = 'commission'`,
      ),
    );
  const wanted = text.trim();
  const same = [...new Set(rows.filter((r) => r.text.trim() === wanted).map((r) => r.thread!))];
  if (same.length < REPEAT_LIMIT) return;
  throw new NexusError(
    'REPEATED_COMMISSION',
    `${asker.handle} has commissioned ${target} with these same words ${same.length} times in this operation and been answered each time; ` +
      `one more is refused as a loop (the limit is ${REPEAT_LIMIT}). Act on the answers, ask something different, or answer or escalate your own thread`,
    { count: same.length, limit: REPEAT_LIMIT, threads: same },
  );
}
