// Usage as the fold counts it, and as a turn's end takes it from its runtime: pure, by table and by property.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Op } from '../protocol/ops.js';
import { OpPayloadSchema } from '../protocol/ops.js';
import { turnUsageOf, utcDay } from '../protocol/usage.js';
import { foldOperation, spendOf } from '../node-agent/capabilities/threads/index.js';
import { exhaustedBudget, exhaustedDaily } from '../node-agent/capabilities/threads/brakes.js';

const A = 'a'.repeat(26);
const B = 'b'.repeat(26);
const T = 't-01aaaaaaaaaaaaaaaaaaaaaaaa';
const T2 = 't-01bbbbbbbbbbbbbbbbbbbbbbbb';

function ops(): Op[] {
  let lamport = 0;
  const op = (workspace: string, kind: string, thread: string, session: string | null, body: object): Op =>
    ({ id: String(++lamport).padStart(4, '0'), workspace, origin: 'o', lamport, ts: '2026-01-01T00:00:00.000Z', operation: T, thread, session, key: 'k', kind, body }) as Op;
  const usage = (tin: number, tout: number, cost: number | null) => ({ tokens_in: tin, tokens_out: tout, tokens_source: 'runtime', cost, cost_source: cost === null ? null : 'runtime', model: 'm' });
  const started = (w: string, th: string, s: string, n: number) => op(w, 'session.turn_started', th, s, { role: 'r', turn: n, reason: 'commissioned', declaration_hash: 'h' });
  const ended = (w: string, th: string, s: string, n: number, u?: object) => op(w, 'session.turn_ended', th, s, { turn: n, outcome: 'replied', exit_code: 0, signal: null, timed_out: false, ...(u ? { usage: u } : {}) });
  return [
    op(A, 'thread.opened', T, null, { parent: null, subject: null, opener: { handle: 'alice', session: null }, target: { kind: 'persona', role: 'r', handle: 'aaaa/r' } }),
    op(A, 'session.created', T, 's-1', { role: 'r', handle: 'aaaa/r', depth: 1 }),
    started(A, T, 's-1', 1),
    op(A, 'thread.opened', T2, null, { parent: T, subject: null, opener: { handle: 'aaaa/r', session: 's-1' }, target: { kind: 'remote', workspace: B, role: 'w', handle: 'bbbb/w' } }),
    ended(A, T, 's-1', 1, usage(100, 20, 0.25)),
    // B admits the commission with what A's stamp said the operation had spent (already folded here: nothing extra).
    op(B, 'session.created', T2, 's-2', { role: 'w', handle: 'bbbb/w', depth: 2, carried_usage: { tokens: 120, cost: 0.25 } }),
    started(B, T2, 's-2', 1),
    // A second report of the same turn's end counts nothing again.
    ended(B, T2, 's-2', 1, usage(300, 0, null)),
    ended(B, T2, 's-2', 1, usage(900, 0, 5)),
    // B's answer says the operation spent 1000 tokens as B counts it: 580 beyond what is folded here.
    op(B, 'message.posted', T2, 's-2', { message: 'm-1', author: { handle: 'bbbb/w', session: 's-2' }, text: 'done', effect: 'answer', substituted: false, refs: { working_copy: null }, usage: { tokens: 1000, cost: 0.25 } }),
  ];
}

describe('usage in the fold', () => {
  it('sums each turn once, takes a claim from another workspace only beyond what is folded, and agrees in any arrival order', () => {
    const all = ops();
    const state = foldOperation(T, all);
    expect(state.usage).toEqual({ tokens_in: 400, tokens_out: 20, cost: 0.25, unpriced_turns: 1 });
    expect(state.usage_carried).toEqual({ tokens: 580, cost: 0 });
    expect(spendOf(state)).toEqual({ tokens: 1000, cost: 0.25 });
    fc.assert(
      fc.property(fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length }), (order) => {
        expect(foldOperation(T, order)).toEqual(state);
      }),
    );
  });

  it('never lowers an operation\'s total as ops arrive, whatever arrives', () => {
    const all = ops();
    fc.assert(
      fc.property(fc.shuffledSubarray(all), (arrived) => {
        // Folding one more op (in canonical order) never takes anything off either figure.
        const sorted = [...arrived].sort((a, b) => a.lamport - b.lamport);
        let before = { tokens: 0, cost: 0 };
        for (let i = 1; i <= sorted.length; i++) {
          const now = spendOf(foldOperation(T, sorted.slice(0, i)));
          expect(now.tokens).toBeGreaterThanOrEqual(before.tokens);
          expect(now.cost).toBeGreaterThanOrEqual(before.cost);
          before = now;
        }
      }),
    );
  });

  it.each([
    ['negative tokens', { tokens_in: -1, tokens_out: 0, tokens_source: 'runtime', cost: null, cost_source: null, model: null }],
    ['a negative cost', { tokens_in: 1, tokens_out: 0, tokens_source: 'runtime', cost: -0.5, cost_source: 'runtime', model: null }],
    ['fractional tokens', { tokens_in: 1.5, tokens_out: 0, tokens_source: 'runtime', cost: null, cost_source: null, model: null }],
    ['an unknown source', { tokens_in: 1, tokens_out: 0, tokens_source: 'guess', cost: null, cost_source: null, model: null }],
  ])('refuses a turn end op carrying %s at the edge (it does not parse)', (_what, usage) => {
    const r = OpPayloadSchema.safeParse({ kind: 'session.turn_ended', body: { turn: 1, outcome: 'replied', exit_code: 0, signal: null, timed_out: false, usage } });
    expect(r.success).toBe(false);
  });
});

describe('a turn\'s usage from its runtime\'s report', () => {
  const prices = { m: { input_per_mtok: 3, output_per_mtok: 15 } };
  it.each([
    ['the runtime\'s cost, marked runtime', { tokens_in: 1000, tokens_out: 100, cost_usd: 0.02, model: 'm' }, { cost: 0.02, cost_source: 'runtime' }],
    ['the price table\'s, marked price_table', { tokens_in: 1000, tokens_out: 100, model: 'm' }, { cost: 0.0045, cost_source: 'price_table' }],
    ['the declared model\'s price when the runtime names none', { tokens_in: 1000, tokens_out: 100 }, { cost: 0.0045, cost_source: 'price_table', model: 'm' }],
    ['no cost when no price is known', { tokens_in: 1, tokens_out: 1, model: 'other' }, { cost: null, cost_source: null }],
  ])('takes %s', (_what, report, want) => {
    const r = turnUsageOf(report, prices, 'm');
    expect(r.refused).toBeNull();
    expect(r.usage).toMatchObject({ tokens_source: 'runtime', ...want });
  });

  it.each([
    [{ tokens_in: -5, tokens_out: 0 }],
    [{ tokens_in: 5, tokens_out: Number.NaN }],
    [{ tokens_in: '5', tokens_out: 0 }],
    [{ tokens_in: 5, tokens_out: 0, cost_usd: -1 }],
    [{ tokens_in: 5, tokens_out: 0, cost_usd: Number.POSITIVE_INFINITY }],
  ])('refuses %j: taking it could lower the total', (report) => {
    const r = turnUsageOf(report, prices, 'm');
    expect(r.usage).toBeNull();
    expect(r.refused).not.toBeNull();
  });
});

describe('which budget is used up', () => {
  const state = foldOperation(T, ops());
  it.each([
    [{ max_turns: 2, max_tokens: null, max_cost: null }, 'max_turns'],
    [{ max_turns: 500, max_tokens: 1000, max_cost: null }, 'max_tokens'],
    [{ max_turns: 500, max_tokens: 1001, max_cost: 0.25 }, 'max_cost'],
    [{ max_turns: 500, max_tokens: 1001, max_cost: 0.26 }, null],
  ])('%j: %s', (budget, name) => {
    expect(exhaustedBudget(state, budget)?.name ?? null).toBe(name);
  });

  it('names the daily ceiling with the next UTC midnight as its reset', () => {
    const now = new Date('2026-03-04T22:15:00.000Z');
    expect(utcDay(now)).toEqual({ day: '2026-03-04', start: '2026-03-04T00:00:00.000Z', resetsAt: '2026-03-05T00:00:00.000Z' });
    expect(exhaustedDaily({ tokens: 10, cost: 2 }, { max_cost: 2 }, now)).toMatchObject({ name: 'daily_max_cost', resetsAt: '2026-03-05T00:00:00.000Z' });
    expect(exhaustedDaily({ tokens: 10, cost: 1 }, { max_tokens: 11, max_cost: 2 }, now)).toBeNull();
  });
});
