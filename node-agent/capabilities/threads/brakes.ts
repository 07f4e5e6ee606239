// The brakes beside the depth guard: loops at a fixed depth never go deeper, so they are stopped by what
// they cost (the operation budget) and by what they repeat. Both are declared, never set per call.
import { and, eq, inArray, sql } from 'drizzle-orm';
import { NexusError } from '../../../protocol/errors.js';
import type { Warning } from '../../../protocol/receipts.js';
import { tables } from '../../adapters/store/index.js';
import { declaredOperationBudget } from '../../adapters/workspace/index.js';
import type { Exec } from '../../kernel/index.js';
import type { EngineDeps } from '../context.js';
import { turnsUsed, type OperationState, type SessionState } from './fold.js';

/**
 * The turns all sessions of one operation may start together when the workspace declares no other
 * (`operation_budget` in `.nxs/config.json`). The deepest chain the depth guard admits costs 63 turns
 * (32 down, 31 woken on the way back); an orchestrator's hundred rounds with a persona cost 201, and
 * with a three-step channel 401. 500 lets those through, and stops a loop of two sessions after 250 passes.
 */
export const DEFAULT_OPERATION_BUDGET = 500;

/** The budget in force for this workspace now: its config's, or the default. */
export function operationBudget(deps: Pick<EngineDeps, 'workspace'>): number {
  return declaredOperationBudget(deps.workspace.paths) ?? DEFAULT_OPERATION_BUDGET;
}

/** The warning reason a turn refused by the budget carries. */
export const BUDGET_REASON = 'operation_budget_exhausted';

/**
 * Whether one more turn may start in `state`'s operation; `planned` counts the turns the command has
 * planned there already. Null when it may; otherwise the warning that says why not.
 */
export function budgetRefusal(
  state: OperationState,
  session: SessionState,
  planned: number,
  budget: number,
  failureClass: Warning['class'],
): Warning | null {
  const used = turnsUsed(state) + planned;
  if (used < budget) return null;
  return {
    class: failureClass,
    reason: BUDGET_REASON,
    session: session.id,
    thread: session.thread,
    role: session.role,
    message: `${session.handle} was not started: operation ${state.id} has used ${used} of its budget of ${budget} turns (operation_budget). The message is posted; no further turn starts in this operation, and it is handed back to whoever opened it`,
  };
}

/** The hand-back written in the name of each session the budget stops, the root's included. */
export function budgetHandBack(operation: string, used: number, budget: number): string {
  return (
    `nexus: operation ${operation} has used ${used} of its budget of ${budget} turns (operation_budget), so no further turn starts in it ` +
    `and this task is handed back unfinished. The threads beneath this one show what was done; send a new commission to go on.`
  );
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
