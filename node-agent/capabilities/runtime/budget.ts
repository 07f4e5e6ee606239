// The run's budget accounting: a pure function of (state, event, now) that says go, refuse one call, or stop.
import {
  BUDGET_DEFAULTS,
  type BudgetDeclaration,
  type RunLimits,
  type RunUsage,
  type TerminalStatus,
} from '../../../protocol/runs.js';

export type BudgetState = { readonly limits: RunLimits; readonly usage: RunUsage };

export type BudgetEvent =
  /** A request is about to be sent: a first attempt, a retry or a correction alike. */
  | { kind: 'model_call' }
  /** A request returned; `tokens` is the provider's usage, null when it reported none. */
  | { kind: 'model_reply'; tokens: { input: number; output: number } | null }
  /** A request failed in a way worth trying again; `attempt` is the number of the attempt that failed (1 = first). */
  | { kind: 'transient_failure'; attempt: number; error: string }
  /** One tool call is about to run. */
  | { kind: 'tool_call' }
  /** The model's output was malformed and a correction is about to be asked for. */
  | { kind: 'correction'; reason: string };

export type Verdict =
  | { kind: 'go' }
  /** This one tool call is refused; the run goes on. */
  | { kind: 'refuse_call'; reason: string }
  | { kind: 'stop'; status: Exclude<TerminalStatus, 'completed' | 'cancelled'>; reason: string };

export type Decision = { state: BudgetState; verdict: Verdict };

const GO: Verdict = { kind: 'go' };

function tokensUsed(u: RunUsage): number {
  return u.tokens_in + u.tokens_out;
}

function spent(state: BudgetState, usage: Partial<RunUsage>): BudgetState {
  return { limits: state.limits, usage: { ...state.usage, ...usage } };
}

/**
 * Applies one event to the budget. Never reads a clock: `now` (ms since the epoch) is given.
 * A stop verdict leaves the state as it was, so what the run spent is what it really spent.
 */
export function account(state: BudgetState, event: BudgetEvent, now: number): Decision {
  const { limits, usage } = state;
  switch (event.kind) {
    case 'model_call': {
      if (now >= limits.deadline_at) return { state, verdict: { kind: 'stop', status: 'timed_out', reason: `the ${seconds(limits.timeout_ms)} deadline passed before the next model request` } };
      if (usage.model_calls >= limits.max_model_calls) {
        return { state, verdict: { kind: 'stop', status: 'budget_exhausted', reason: `the model-call budget of ${limits.max_model_calls} is used` } };
      }
      if (limits.max_tokens !== null && tokensUsed(usage) >= limits.max_tokens) {
        return { state, verdict: { kind: 'stop', status: 'budget_exhausted', reason: `the token budget of ${limits.max_tokens} is used (${tokensUsed(usage)} spent)` } };
      }
      if (limits.operation_tokens_left !== undefined && tokensUsed(usage) >= limits.operation_tokens_left) {
        const reason = `the operation's token budget is used: this turn spent ${tokensUsed(usage)} of the ${limits.operation_tokens_left} its operation had left (operation_budget.max_tokens)`;
        return { state, verdict: { kind: 'stop', status: 'budget_exhausted', reason } };
      }
      return { state: spent(state, { model_calls: usage.model_calls + 1 }), verdict: GO };
    }
    case 'model_reply': {
      if (event.tokens === null) {
        if (limits.max_tokens === null) return { state, verdict: GO };
        return { state, verdict: { kind: 'stop', status: 'failed', reason: 'the provider reported no token usage, and a token budget is set' } };
      }
      const next = spent(state, { tokens_in: usage.tokens_in + event.tokens.input, tokens_out: usage.tokens_out + event.tokens.output });
      // The reply is kept even when it crosses the budget: its cost is known only now. The next request is what gets refused.
      return { state: next, verdict: GO };
    }
    case 'transient_failure': {
      if (event.attempt > limits.retries) {
        const tries = limits.retries + 1;
        return { state, verdict: { kind: 'stop', status: 'failed', reason: `the provider failed ${tries} time${tries === 1 ? '' : 's'} in a row (${event.error})` } };
      }
      return { state, verdict: GO };
    }
    case 'tool_call': {
      if (now >= limits.deadline_at) return { state, verdict: { kind: 'stop', status: 'timed_out', reason: `the ${seconds(limits.timeout_ms)} deadline passed before a tool call` } };
      if (usage.tool_calls >= limits.max_tool_calls) {
        return { state, verdict: { kind: 'refuse_call', reason: `the tool-call budget of ${limits.max_tool_calls} is used; answer from what you have` } };
      }
      return { state: spent(state, { tool_calls: usage.tool_calls + 1 }), verdict: GO };
    }
    case 'correction': {
      if (usage.corrections >= limits.retries) {
        return { state, verdict: { kind: 'stop', status: 'failed', reason: `the model's output was still malformed after ${limits.retries} correction${limits.retries === 1 ? '' : 's'} (${event.reason})` } };
      }
      return { state: spent(state, { corrections: usage.corrections + 1 }), verdict: GO };
    }
  }
}

/** Whether the next request offers tools: once the tool budget is used it does not, so the model answers. */
export function toolsOffered(state: BudgetState): boolean {
  return state.usage.tool_calls < state.limits.max_tool_calls;
}

/** How long the next provider request may take: whatever is left before the deadline. */
export function remainingMs(state: BudgetState, now: number): number {
  return Math.max(0, state.limits.deadline_at - now);
}

/** The tokens the engine says the turn's operation has left (NXC_OPERATION_TOKENS_LEFT), or undefined when it set none or it is not a count. */
export function operationTokensLeft(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env['NXC_OPERATION_TOKENS_LEFT'];
  if (raw === undefined || !/^\d{1,15}$/.test(raw)) return undefined;
  return Number(raw);
}

/**
 * The limits a run starts with: the persona's budget over the defaults, the deadline fixed from `startedAt`,
 * and what its operation has left when the engine says (`operationTokensLeft`).
 */
export function resolveLimits(budget: BudgetDeclaration | undefined, timeoutMs: number, startedAt: number, operationTokensLeft?: number): RunLimits {
  const b = budget ?? {};
  return {
    ...(operationTokensLeft === undefined ? {} : { operation_tokens_left: operationTokensLeft }),
    timeout_ms: timeoutMs,
    deadline_at: startedAt + timeoutMs,
    max_model_calls: b.max_model_calls ?? BUDGET_DEFAULTS.max_model_calls,
    max_tool_calls: b.max_tool_calls ?? BUDGET_DEFAULTS.max_tool_calls,
    max_tokens: b.max_tokens ?? BUDGET_DEFAULTS.max_tokens,
    retries: b.retries ?? BUDGET_DEFAULTS.retries,
    max_tool_output_chars: b.max_tool_output_chars ?? BUDGET_DEFAULTS.max_tool_output_chars,
  };
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** Usage in words, for an escalation a person reads. */
export function describeUsage(usage: RunUsage, limits: RunLimits, elapsedMs: number): string {
  const tokens = limits.max_tokens === null ? `${usage.tokens_in} tokens in and ${usage.tokens_out} out` : `${usage.tokens_in} tokens in and ${usage.tokens_out} out of ${limits.max_tokens}`;
  const corrections = usage.corrections > 0 ? `, ${usage.corrections} correction${usage.corrections === 1 ? '' : 's'}` : '';
  return `${usage.model_calls} of ${limits.max_model_calls} model calls, ${usage.tool_calls} of ${limits.max_tool_calls} tool calls, ${tokens}${corrections}, after ${seconds(Math.round(elapsedMs))} of ${seconds(limits.timeout_ms)}`;
}
