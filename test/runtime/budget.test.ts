// The budget accounting as a pure function: every event against every limit, by table, and its invariants by property.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BUDGET_DEFAULTS, EMPTY_USAGE, type RunLimits, type RunUsage } from '../../protocol/runs.js';
import { account, describeUsage, remainingMs, resolveLimits, toolsOffered, type BudgetEvent, type BudgetState } from '../../node-agent/capabilities/runtime/index.js';

const T0 = 1_000_000;
const LIMITS: RunLimits = { timeout_ms: 30_000, deadline_at: T0 + 30_000, max_model_calls: 3, max_tool_calls: 2, max_tokens: 100, retries: 2, max_tool_output_chars: 16_000 };

function state(usage: Partial<RunUsage> = {}, limits: Partial<RunLimits> = {}): BudgetState {
  return { limits: { ...LIMITS, ...limits }, usage: { ...EMPTY_USAGE, ...usage } };
}

describe('the budget by table', () => {
  it.each<[string, BudgetState, BudgetEvent, number, string, Partial<RunUsage>]>([
    ['a first model call goes and is counted', state(), { kind: 'model_call' }, T0, 'go', { model_calls: 1 }],
    ['the last allowed model call goes', state({ model_calls: 2 }), { kind: 'model_call' }, T0, 'go', { model_calls: 3 }],
    ['a model call past the budget stops the run as budget_exhausted', state({ model_calls: 3 }), { kind: 'model_call' }, T0, 'stop:budget_exhausted', { model_calls: 3 }],
    ['a model call at the deadline stops the run as timed_out', state(), { kind: 'model_call' }, T0 + 30_000, 'stop:timed_out', {}],
    ['the deadline is checked before the call budget', state({ model_calls: 3 }), { kind: 'model_call' }, T0 + 30_001, 'stop:timed_out', {}],
    ['a model call once the tokens are spent stops as budget_exhausted', state({ tokens_in: 60, tokens_out: 40 }), { kind: 'model_call' }, T0, 'stop:budget_exhausted', {}],
    ['without a token budget any spend lets the call go', state({ tokens_in: 10 ** 9 }, { max_tokens: null }), { kind: 'model_call' }, T0, 'go', { model_calls: 1 }],
    ['a reply adds its tokens', state(), { kind: 'model_reply', tokens: { input: 7, output: 3 } }, T0, 'go', { tokens_in: 7, tokens_out: 3 }],
    ['a reply that crosses the token budget is still kept', state({ tokens_in: 90 }), { kind: 'model_reply', tokens: { input: 50, output: 50 } }, T0, 'go', { tokens_in: 140, tokens_out: 50 }],
    ['a reply without usage fails the run when a token budget is set', state(), { kind: 'model_reply', tokens: null }, T0, 'stop:failed', {}],
    ['a reply without usage is fine when no token budget is set', state({}, { max_tokens: null }), { kind: 'model_reply', tokens: null }, T0, 'go', {}],
    ['a first transient failure may be retried', state(), { kind: 'transient_failure', attempt: 1, error: 'HTTP 529' }, T0, 'go', {}],
    ['the last allowed retry may be made', state(), { kind: 'transient_failure', attempt: 2, error: 'HTTP 529' }, T0, 'go', {}],
    ['a failure past the retries fails the run', state(), { kind: 'transient_failure', attempt: 3, error: 'HTTP 529' }, T0, 'stop:failed', {}],
    ['with no retries the first failure fails the run', state({}, { retries: 0 }), { kind: 'transient_failure', attempt: 1, error: 'x' }, T0, 'stop:failed', {}],
    ['a tool call within budget goes and is counted', state({ tool_calls: 1 }), { kind: 'tool_call' }, T0, 'go', { tool_calls: 2 }],
    ['a tool call past the budget is refused, the run goes on', state({ tool_calls: 2 }), { kind: 'tool_call' }, T0, 'refuse_call', { tool_calls: 2 }],
    ['a tool call at the deadline stops the run as timed_out', state(), { kind: 'tool_call' }, T0 + 30_000, 'stop:timed_out', {}],
    ['a correction within the allowance goes and is counted', state({ corrections: 1 }), { kind: 'correction', reason: 'bad json' }, T0, 'go', { corrections: 2 }],
    ['a correction past the allowance fails the run', state({ corrections: 2 }), { kind: 'correction', reason: 'bad json' }, T0, 'stop:failed', { corrections: 2 }],
  ])('%s', (_name, s, event, now, expected, usage) => {
    const d = account(s, event, now);
    const verdict = d.verdict.kind === 'stop' ? `stop:${d.verdict.status}` : d.verdict.kind;
    expect(verdict).toBe(expected);
    expect(d.state.usage).toEqual({ ...s.usage, ...usage });
    expect(d.state.limits).toBe(s.limits);
  });

  it('offers tools until the tool budget is used, then no more', () => {
    expect(toolsOffered(state({ tool_calls: 1 }))).toBe(true);
    expect(toolsOffered(state({ tool_calls: 2 }))).toBe(false);
    expect(toolsOffered(state({}, { max_tool_calls: 0 }))).toBe(false);
  });

  it('gives a provider request what is left of the deadline, never less than nothing', () => {
    expect(remainingMs(state(), T0 + 10_000)).toBe(20_000);
    expect(remainingMs(state(), T0 + 40_000)).toBe(0);
  });

  it('takes the seed defaults for what a persona leaves out, and fixes the deadline from the start', () => {
    expect(resolveLimits(undefined, 30_000, T0)).toEqual({ timeout_ms: 30_000, deadline_at: T0 + 30_000, ...BUDGET_DEFAULTS });
    expect(resolveLimits({ max_tokens: 500, retries: 0 }, 1000, 5)).toMatchObject({ max_tokens: 500, retries: 0, max_model_calls: 20, deadline_at: 1005 });
  });

  it('says usage in words a person can act on', () => {
    const words = describeUsage({ model_calls: 3, tool_calls: 2, tokens_in: 100, tokens_out: 40, corrections: 1 }, LIMITS, 12_500);
    expect(words).toBe('3 of 3 model calls, 2 of 2 tool calls, 100 tokens in and 40 out of 100, 1 correction, after 12.5 s of 30 s');
  });
});

describe('the budget by property', () => {
  const event = fc.oneof(
    fc.constant<BudgetEvent>({ kind: 'model_call' }),
    fc.constant<BudgetEvent>({ kind: 'tool_call' }),
    fc.record({ kind: fc.constant('model_reply' as const), tokens: fc.option(fc.record({ input: fc.nat(50), output: fc.nat(50) }), { nil: null }) }),
    fc.record({ kind: fc.constant('transient_failure' as const), attempt: fc.integer({ min: 1, max: 4 }), error: fc.constant('x') }),
    fc.record({ kind: fc.constant('correction' as const), reason: fc.constant('x') }),
  );

  it('never lets counted calls pass their limits, and usage only grows', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(event, fc.integer({ min: 0, max: 40_000 })), { maxLength: 60 }), (events) => {
        let s = state();
        for (const [e, dt] of events) {
          const d = account(s, e, T0 + dt);
          for (const k of Object.keys(s.usage) as (keyof RunUsage)[]) expect(d.state.usage[k]).toBeGreaterThanOrEqual(s.usage[k]);
          if (d.verdict.kind === 'stop') expect(d.state).toBe(s);
          s = d.state;
          expect(s.usage.model_calls).toBeLessThanOrEqual(LIMITS.max_model_calls);
          expect(s.usage.tool_calls).toBeLessThanOrEqual(LIMITS.max_tool_calls);
          expect(s.usage.corrections).toBeLessThanOrEqual(LIMITS.retries);
        }
      }),
    );
  });
});
