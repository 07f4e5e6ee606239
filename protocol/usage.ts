// What turns cost: the figures a turn's end records, where each came from, and the budgets that cap them.
import { z } from 'zod';

/** Where a cost figure came from: the runtime said so itself, or the workspace's price table made it from the tokens. */
export const COST_SOURCES = ['runtime', 'price_table'] as const;
export const CostSourceSchema = z.enum(COST_SOURCES);
export type CostSource = z.infer<typeof CostSourceSchema>;

const tokens = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
/** Money in US dollars: finite and never negative, so no report can take anything off a total. */
const money = z.number().finite().min(0).max(1e12);

/**
 * One turn's usage as its end records it. Tokens always come from the runtime that ran the turn (it is the
 * only one that saw the provider's replies); the cost from the runtime when it reports one (claude-code's
 * `total_cost_usd`), else from the workspace's price table, else it is unknown (null).
 */
export const TurnUsageSchema = z.object({
  tokens_in: tokens,
  tokens_out: tokens,
  tokens_source: z.literal('runtime'),
  cost: money.nullable(),
  cost_source: CostSourceSchema.nullable(),
  /** The model the runtime says it called, when it says (the price table is keyed by it). */
  model: z.string().max(200).nullable(),
});
export type TurnUsage = z.infer<typeof TurnUsageSchema>;

/** An operation's spend in two figures: what a commission carries across a border, and what budgets count. */
export const SpendSchema = z.object({ tokens: tokens, cost: money });
export type Spend = z.infer<typeof SpendSchema>;

export const NO_SPEND: Spend = { tokens: 0, cost: 0 };

/** What a model costs per million tokens, as `.nxs/config.json`'s `prices` declares it. */
export const PriceSchema = z.strictObject({ input_per_mtok: money, output_per_mtok: money });
export type Price = z.infer<typeof PriceSchema>;
export const PriceTableSchema = z.record(z.string().min(1).max(200), PriceSchema);
export type PriceTable = z.infer<typeof PriceTableSchema>;

const turnsLimit = z.number().int().min(1).max(1_000_000);
const tokensLimit = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const costLimit = z.number().finite().positive().max(1e12);

/**
 * An operation budget: the turns, tokens and money all sessions of one operation may spend together.
 * A bare number is the turn budget alone (the form declared before tokens and cost were counted).
 */
export const OperationBudgetDeclarationSchema = z.union([
  turnsLimit,
  z.strictObject({ max_turns: turnsLimit.optional(), max_tokens: tokensLimit.optional(), max_cost: costLimit.optional() }),
]);
export type OperationBudgetDeclaration = z.infer<typeof OperationBudgetDeclarationSchema>;

/** What a persona may declare for the operations opened to it: only lower than the workspace's, never higher. */
export const PersonaOperationBudgetSchema = z.strictObject({ max_turns: turnsLimit.optional(), max_tokens: tokensLimit.optional(), max_cost: costLimit.optional() });

/** The ceiling across every operation of a workspace in one UTC day. */
export const DailyBudgetSchema = z.strictObject({ max_tokens: tokensLimit.optional(), max_cost: costLimit.optional() });
export type DailyBudget = z.infer<typeof DailyBudgetSchema>;

/** The budget in force for one operation: null means that figure is not capped. */
export const OperationBudgetSchema = z.object({ max_turns: z.number().int(), max_tokens: z.number().int().nullable(), max_cost: z.number().nullable() });
export type OperationBudget = z.infer<typeof OperationBudgetSchema>;

/** Which budget refused a turn: an operation's three, or the workspace's daily two. */
export const BUDGET_NAMES = ['max_turns', 'max_tokens', 'max_cost', 'daily_max_tokens', 'daily_max_cost'] as const;
export const BudgetNameSchema = z.enum(BUDGET_NAMES);
export type BudgetName = z.infer<typeof BudgetNameSchema>;

/** An operation's usage as the views show it. */
export const OperationUsageSchema = z.object({
  tokens_in: z.number().int(),
  tokens_out: z.number().int(),
  /** Everything counted against the budget: this log's turns plus what commissions and answers carried in. */
  tokens: z.number().int(),
  cost: z.number(),
  /** Turns ended here with no cost known (no runtime figure, no price for their model): `cost` leaves them out. */
  unpriced_turns: z.number().int(),
  /** What commissions and answers from other workspaces said was spent beyond the turns this log holds. */
  carried: SpendSchema,
  budget: z.object({ max_tokens: z.number().int().nullable(), max_cost: z.number().nullable() }),
});
export type OperationUsage = z.infer<typeof OperationUsageSchema>;

/** The workspace's spend in the current UTC day, against its daily ceiling. */
export const SpendTodaySchema = z.object({
  day: z.string(),
  tokens: z.number().int(),
  cost: z.number(),
  resets_at: z.string(),
  budget: z.object({ max_tokens: z.number().int().nullable(), max_cost: z.number().nullable() }),
});
export type SpendToday = z.infer<typeof SpendTodaySchema>;

/** A turn's cost from the price table: per million tokens in and out. */
export function priceOf(price: Price, tokensIn: number, tokensOut: number): number {
  return (tokensIn * price.input_per_mtok + tokensOut * price.output_per_mtok) / 1_000_000;
}

/**
 * The usage a turn's end records from what its runtime reported: tokens as reported, the cost as reported
 * when there is one, else priced from the table by the model, else unknown. Null when the runtime reported
 * nothing, or reported figures that are not counts (negative, fractional, not finite): such a report is
 * refused, since taking it could lower what the operation has spent.
 */
export function turnUsageOf(
  reported: { tokens_in: unknown; tokens_out: unknown; cost_usd?: unknown; model?: unknown } | null,
  prices: PriceTable,
  declaredModel: string | null,
): { usage: TurnUsage | null; refused: string | null } {
  if (reported === null) return { usage: null, refused: null };
  const { tokens_in, tokens_out, cost_usd } = reported;
  const whole = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  if (!whole(tokens_in) || !whole(tokens_out)) return { usage: null, refused: `the runtime reported tokens ${String(tokens_in)} in and ${String(tokens_out)} out, which are not counts` };
  if (cost_usd !== undefined && cost_usd !== null && !(typeof cost_usd === 'number' && Number.isFinite(cost_usd) && cost_usd >= 0)) {
    return { usage: null, refused: `the runtime reported a cost of ${String(cost_usd)}, which is not an amount` };
  }
  const model = typeof reported.model === 'string' && reported.model !== '' ? reported.model.slice(0, 200) : declaredModel;
  if (typeof cost_usd === 'number') return { usage: { tokens_in, tokens_out, tokens_source: 'runtime', cost: cost_usd, cost_source: 'runtime', model }, refused: null };
  const price = model === null ? undefined : prices[model];
  if (price !== undefined) return { usage: { tokens_in, tokens_out, tokens_source: 'runtime', cost: priceOf(price, tokens_in, tokens_out), cost_source: 'price_table', model }, refused: null };
  return { usage: { tokens_in, tokens_out, tokens_source: 'runtime', cost: null, cost_source: null, model }, refused: null };
}

/** The start of the UTC day `at` falls in, and of the next (when a daily ceiling resets). */
export function utcDay(at: Date): { day: string; start: string; resetsAt: string } {
  const start = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
  return { day: new Date(start).toISOString().slice(0, 10), start: new Date(start).toISOString(), resetsAt: new Date(start + 86_400_000).toISOString() };
}
