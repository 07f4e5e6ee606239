// The operation's token budget inside a running turn of the built-in runtime: the engine says how many tokens
// the operation had left (NXC_OPERATION_TOKENS_LEFT), and the run stops at its next model call once it has
// spent them. Against the fake provider, which reports usage on every reply.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, claudeReader, operationTokensLeft, resolveLimits } from '../../node-agent/capabilities/runtime/index.js';
import { EMPTY_USAGE } from '../../protocol/runs.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider/index.js';
import { makeWorkingCopy, runAgainst } from './fixture.js';

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(async () => {
  await fake.close();
});

describe('the operation\'s tokens in a running turn', () => {
  it('stops the run with budget_exhausted at its next model call once the tokens its operation had left are spent', { timeout: 60_000 }, async () => {
    const wc = makeWorkingCopy();
    try {
      fake.requests.length = 0;
      // Every reply costs 150 tokens and asks for another look: only the budget ends it.
      fake.setScript(() => ({ reply: { tool_calls: [{ name: 'LS', input: {} }], usage: { input: 100, output: 50 } } }));
      const r = await runAgainst(fake, wc.root, { limits: { operation_tokens_left: 250, max_model_calls: 50, max_tool_calls: 50 } });
      expect(r.status).toBe('budget_exhausted');
      expect(r.reason).toContain('operation_budget.max_tokens');
      expect(r.usage).toMatchObject({ model_calls: 2, tokens_in: 200, tokens_out: 100 });
      expect(fake.requests).toHaveLength(2);
    } finally {
      wc.cleanup();
    }
  });

  it('runs on as before when the engine sets no figure', () => {
    const limits = resolveLimits(undefined, 60_000, 0, operationTokensLeft({}));
    expect(limits).not.toHaveProperty('operation_tokens_left');
    const d = account({ limits, usage: { ...EMPTY_USAGE, tokens_in: 10_000_000 } }, { kind: 'model_call' }, 1);
    expect(d.verdict.kind).toBe('go');
  });

  it.each([
    [{ NXC_OPERATION_TOKENS_LEFT: '1200' }, 1200],
    [{ NXC_OPERATION_TOKENS_LEFT: '0' }, 0],
    [{ NXC_OPERATION_TOKENS_LEFT: '-5' }, undefined],
    [{ NXC_OPERATION_TOKENS_LEFT: '1e9' }, undefined],
    [{}, undefined],
  ])('reads %j as %s', (env, want) => {
    expect(operationTokensLeft(env)).toBe(want);
  });
});

describe('what a coding CLI says it cost', () => {
  it('takes claude-code\'s total_cost_usd from its result event, and nothing that is not an amount', () => {
    const r = claudeReader();
    r.feed({ type: 'result', subtype: 'success', result: 'ok', total_cost_usd: 0.0123, usage: { input_tokens: 10, output_tokens: 2 } });
    expect(r.tally).toMatchObject({ cost_usd: 0.0123, tokens_in: 10, tokens_out: 2 });
    const bad = claudeReader();
    bad.feed({ type: 'result', subtype: 'success', result: 'ok', total_cost_usd: -1 });
    expect(bad.tally.cost_usd).toBeNull();
  });
});
