// What an operation costs: each turn's tokens and cost recorded with its end (so it syncs), summed over every
// session of the operation in every workspace, and the budgets that stop it. In process, with the test clock;
// ops move between workspaces only when the test delivers them, as a node would.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { spendFigures } from '../node-agent/capabilities/status/index.js';
import { collect, renderMetrics, type NodeMetricsView } from '../node-agent/host/node/metrics.js';
import { NodeCounters } from '../node-agent/host/node/counters.js';
import { deliver } from './helpers/deliver.js';
import { waitFor } from './helpers/until.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

const EXTERNAL = 'addressable: { external: true }';

let made: TestWorkspace[] = [];
afterEach(async () => {
  await Promise.all(made.map((w) => w.cleanup()));
  made = [];
});

async function workspace(): Promise<TestWorkspace> {
  const w = await makeWorkspace({ git: false });
  made.push(w);
  return w;
}

function operationOf(status: any, id: string): any {
  return status.operations.find((o: any) => o.operation === id);
}

async function trust(who: TestWorkspace, whom: TestWorkspace): Promise<void> {
  const r = await who.nxs(['sync', 'trust', 'add', '--workspace', whom.id, '--key', join(whom.root, '.nxs', 'keys', 'workspace.pub.jwk'), '--json']);
  expect(r.code, r.stdout + r.stderr).toBe(0);
}

/** A file the gated scripts wait for, in the folder their sandbox may read. */
const gateOf = (w: TestWorkspace) => join(w.root, '..', 'shared', 'gate');

async function send(w: TestWorkspace, to: string, text = 'go'): Promise<any> {
  const r = await w.nxc(['send', to, '--subject', 'work', '--json', text]);
  return r;
}

describe('usage per operation in one workspace', () => {
  it('records each turn\'s tokens and the runtime\'s cost with its end, sums them per operation, and shows them in status and threads show', async () => {
    const w = await workspace();
    w.persona('lead', { mode: 'steps', arg: 'spend:100,20,0.5+send:coder|spend:30,10+reply' });
    w.persona('coder', { mode: 'steps', arg: 'spend:200,40+reply' });
    w.config({ prices: { 'fake-model': { input_per_mtok: 3, output_per_mtok: 15 } } });
    const sent = await send(w, 'lead');
    expect(sent.code, sent.stderr).toBe(0);
    await w.waitIdle();
    const op = operationOf(await w.status(true), sent.json.operation);
    // 120 + 240 + 40 tokens; the lead's first turn cost what its runtime said, the others priced from the table.
    const priced = (200 * 3 + 40 * 15 + 30 * 3 + 10 * 15) / 1_000_000;
    expect(op.usage).toMatchObject({ tokens_in: 330, tokens_out: 70, tokens: 400, unpriced_turns: 0, budget: { max_tokens: null, max_cost: null } });
    expect(op.usage.cost).toBeCloseTo(0.5 + priced, 10);
    const text = await w.nxc(['status', '--all']);
    expect(text.stdout).toContain('tokens 400 · cost $0.5');
    // The same figures, as an exporter reads them.
    const figures = await w.inproc!.serve((h) => spendFigures(h.deps, { all: true }));
    expect(figures.operations).toMatchObject([{ operation: sent.json.operation, finished: true, turns: 3, usage: { tokens: 400 } }]);
    expect(figures.today.tokens).toBe(400);
    // And as a node's /metrics exports them, from the same function.
    const exported = await w.inproc!.serve(async (h) => {
      const entry = { workspace: { id: w.id }, host: h };
      const served = { all: () => [entry], inQueue: (_e: unknown, fn: () => Promise<unknown>) => fn(), size: 1 };
      return renderMetrics(await collect({ served, counters: new NodeCounters(), version: 'test', registered: () => 1 } as unknown as NodeMetricsView));
    });
    expect(exported).toContain(`nexus_spend_today_tokens{workspace="${w.id}"} 400`);
    expect(exported).toMatch(new RegExp(`nexus_spend_today_cost_usd\\{workspace="${w.id}"\\} 0\\.5\\d*`));

    const view = await w.nxc(['threads', 'show', sent.json.thread, '--json']);
    expect(view.json.turns).toMatchObject([
      { turn: 1, outcome: 'waiting', usage: { tokens_in: 100, tokens_out: 20, tokens_source: 'runtime', cost: 0.5, cost_source: 'runtime', model: 'fake-model' } },
      { turn: 2, outcome: 'replied', usage: { tokens_in: 30, tokens_out: 10, cost_source: 'price_table' } },
    ]);
    const shown = await w.nxc(['threads', 'show', sent.json.thread]);
    expect(shown.stdout).toContain('turn 1 waiting · 100 in, 20 out (runtime) · $0.5000 (runtime)');
    expect(shown.stdout).toContain('(price_table)');
  });

  it('leaves the cost unknown (counted as unpriced) when neither the runtime nor the price table gives one', async () => {
    const w = await workspace();
    w.persona('coder', { mode: 'steps', arg: 'spend:10,5+reply' });
    const sent = await send(w, 'coder');
    await w.waitIdle();
    const op = operationOf(await w.status(true), sent.json.operation);
    expect(op.usage).toMatchObject({ tokens: 15, cost: 0, unpriced_turns: 1 });
  });

  it('refuses a turn\'s end report with negative tokens: the turn ends, the total is not lowered, and the refusal is said', async () => {
    const w = await workspace();
    w.persona('lead', { mode: 'steps', arg: 'spend:100,0+send:coder|reply' });
    w.persona('coder', { mode: 'steps', arg: 'spend:-90,0+reply' });
    const sent = await send(w, 'lead');
    await w.waitIdle();
    const op = operationOf(await w.status(true), sent.json.operation);
    expect(op.usage.tokens).toBe(100);
    expect(op.finished).toBe(true);
    const coderThread = op.threads.find((t: any) => t.to.endsWith('/coder')).thread;
    const view = await w.nxc(['threads', 'show', coderThread, '--json']);
    expect(view.json.turns).toMatchObject([{ turn: 1, usage: null }]);
    const done = JSON.parse(readFileSync(join(w.root, '.nxs', 'sessions', view.json.thread.session.id, 'turn-1.done'), 'utf8'));
    expect(done.warnings).toMatchObject([{ class: 'usage_refused' }]);
  });
});

describe('the operation budget in tokens and cost', () => {
  it('stops the next turn once max_tokens is reached, naming the budget, and hands the root back to the person', async () => {
    const w = await workspace();
    w.config({ operation_budget: { max_turns: 50, max_tokens: 300 } });
    w.persona('lead', { mode: 'steps', arg: 'spend:300,50+send:coder|reply' });
    // The coder answers only once the lead's turn has ended (a turn's spend counts from its end).
    w.persona('coder', { mode: 'steps', arg: `gate:${gateOf(w)}+reply` });
    const sent = await send(w, 'lead');
    await waitFor('the lead\'s turn to end', async () => operationOf(await w.status(true), sent.json.operation).usage.tokens === 350);
    writeFileSync(gateOf(w), '');
    await w.waitIdle();
    const op = operationOf(await w.status(true), sent.json.operation);
    expect(op.usage.tokens).toBe(350);
    const root = op.threads.find((t: any) => t.thread === sent.json.thread);
    expect(root).toMatchObject({ state: 'answered', escalated: true, awaiting_human: true });
    const view = await w.nxc(['threads', 'show', sent.json.thread, '--json']);
    expect(view.json.messages.at(-1).text).toContain('operation_budget.max_tokens');
    const refused = w.agentLog().filter((e) => e.cmd === 'reply' && e.role?.endsWith('/coder'));
    expect(refused.at(-1).out.warnings).toMatchObject([{ reason: 'operation_budget_exhausted', budget: 'max_tokens', class: 'requester_not_woken' }]);
    // The coder's runtime was told what the operation had left when it started (nothing spent yet).
    const coder = op.threads.find((t: any) => t.to.endsWith('/coder')).session.id;
    const spec = JSON.parse(readFileSync(join(w.root, '.nxs', 'sessions', coder, 'spec.json'), 'utf8'));
    expect(spec.env.NXC_OPERATION_TOKENS_LEFT).toBe('300');
    const text = await w.nxc(['status', '--all']);
    expect(text.stdout).toContain('tokens 350 of 300');
    expect(text.stdout).toContain('(budget used up)');
  });

  it('stops at max_cost too, priced from the table', async () => {
    const w = await workspace();
    w.config({ operation_budget: { max_cost: 0.01 }, prices: { 'fake-model': { input_per_mtok: 10, output_per_mtok: 10 } } });
    w.persona('lead', { mode: 'steps', arg: 'spend:1500,0+send:coder|reply' });
    w.persona('coder', { mode: 'steps', arg: `gate:${gateOf(w)}+reply` });
    const sent = await send(w, 'lead');
    await waitFor('the lead\'s turn to end', async () => operationOf(await w.status(true), sent.json.operation).usage.tokens === 1500);
    writeFileSync(gateOf(w), '');
    await w.waitIdle();
    const op = operationOf(await w.status(true), sent.json.operation);
    expect(op.usage.cost).toBeCloseTo(0.015, 10);
    const refused = w.agentLog().filter((e) => e.cmd === 'reply' && e.role?.endsWith('/coder'));
    expect(refused.at(-1).out.warnings).toMatchObject([{ reason: 'operation_budget_exhausted', budget: 'max_cost' }]);
  });

  it('takes a persona\'s lower budget for the operations opened to it, and ignores one higher than the workspace\'s', async () => {
    const w = await workspace();
    w.config({ operation_budget: { max_tokens: 1000 } });
    w.persona('lead', { mode: 'steps', arg: 'spend:200,0+send:coder|reply', extra: 'operation_budget: { max_tokens: 150 }' });
    w.persona('boss', { mode: 'steps', arg: 'spend:200,0+send:coder|reply', extra: 'operation_budget: { max_tokens: 5000 }' });
    w.persona('coder', { mode: 'steps', arg: `gate:${gateOf(w)}+reply` });
    const low = await send(w, 'lead');
    const high = await send(w, 'boss');
    for (const sent of [low, high]) await waitFor('the first turn to end', async () => operationOf(await w.status(true), sent.json.operation).usage.tokens === 200);
    writeFileSync(gateOf(w), '');
    await w.waitIdle();
    const status = await w.status(true);
    expect(operationOf(status, low.json.operation).usage.budget.max_tokens).toBe(150);
    expect(operationOf(status, low.json.operation).threads[0]).toMatchObject({ escalated: true });
    expect(operationOf(status, high.json.operation).usage.budget.max_tokens).toBe(1000);
    expect(operationOf(status, high.json.operation).threads[0]).toMatchObject({ escalated: false, state: 'answered' });
  });

  it.each([{ max_tokens: 0 }, { max_cost: -1 }, { max_tokens: 2.5 }, { max_turns: 10, other: 1 }])('a config declaring operation_budget %j is refused (CONFIG_INVALID, exit 2) and the send writes nothing', async (bad) => {
    const w = await workspace();
    w.persona('coder', { mode: 'reply' });
    w.config({ operation_budget: bad });
    const r = await send(w, 'coder');
    expect(r.code).toBe(2);
    expect(r.json.error.code).toBe('CONFIG_INVALID');
    expect(r.json.error.message).toContain('operation_budget');
  });
});

describe('the daily ceiling', () => {
  it('refuses a new operation once the day\'s spend reaches it, with the reset time, and starts again the next UTC day', async () => {
    const w = await workspace();
    w.persona('coder', { mode: 'steps', arg: 'spend:80,40+reply' });
    w.config({ daily_budget: { max_tokens: 100 } });
    const first = await send(w, 'coder');
    expect(first.code).toBe(0);
    await w.waitIdle();
    const second = await send(w, 'coder');
    expect(second.code).toBe(3);
    const warning = second.json.warnings[0];
    expect(warning).toMatchObject({ class: 'step_skipped', reason: 'daily_budget_exhausted', budget: 'daily_max_tokens' });
    const now = w.inproc!.clock.now();
    const reset = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString();
    expect(warning.resets_at).toBe(reset);
    expect(warning.message).toContain(`resets at ${reset}`);
    const status = await w.status(true);
    expect(status.spend_today).toMatchObject({ tokens: 120, budget: { max_tokens: 100 }, resets_at: reset });
    expect(operationOf(status, second.json.operation).threads[0]).toMatchObject({ state: 'answered', escalated: true, awaiting_human: true });
    // The next UTC day starts from nothing.
    w.advance(Date.parse(reset) - now.getTime() + 1000);
    const third = await send(w, 'coder');
    expect(third.code, JSON.stringify(third.json)).toBe(0);
    await w.waitIdle();
  });
});

describe('an operation fanning out across three workspaces', () => {
  it('totals equal on all three, the budget stops the next turn in every workspace once crossed, the root handed back, the daily ceiling refuses a new operation', { timeout: 120_000 }, async () => {
    const [a, b, c] = [await workspace(), await workspace(), await workspace()];
    // B and C trust A: they admit its commissions. A trusts nobody; it only takes in their answers.
    await trust(b, a);
    await trust(c, a);
    const gate = gateOf;
    for (const w of [a, b, c]) w.config({ operation_budget: { max_tokens: 500 } });
    a.persona('planner', { mode: 'steps', arg: `spend:60,40+send:${b.id}/worker+send:${c.id}/worker|reply|reply` });
    for (const w of [b, c]) {
      w.persona('worker', { mode: 'steps', arg: 'spend:200,100+send:helper|reply', extra: EXTERNAL });
      w.persona('helper', { mode: 'steps', arg: `gate:${gate(w)}+spend:1,1+reply` });
    }
    const sent = await send(a, 'planner');
    expect(sent.code, sent.stderr).toBe(0);
    const op = sent.json.operation;
    await a.waitIdle();
    await deliver(a, b);
    await deliver(a, c);
    // Each worker spends 300 and waits on its helper, which waits at its gate.
    const workerWaits = async (w: TestWorkspace) =>
      (await w.status(true)).operations.find((o: any) => o.operation === op)?.threads.some((t: any) => t.to.endsWith('/worker') && t.session?.turn === 1 && !t.session.running) === true;
    await waitFor('B\'s worker to end its turn', () => workerWaits(b));
    await waitFor('C\'s worker to end its turn', () => workerWaits(c));
    const everywhere = async () => {
      for (const from of [a, b, c]) for (const to of [a, b, c]) if (from !== to) await deliver(from, to);
    };
    await everywhere();
    const totals = async () => Promise.all([a, b, c].map(async (w) => operationOf(await w.status(true), op).usage));
    // 100 in A, 300 in B, 300 in C: every node counts 700, past the budget of 500.
    for (const u of await totals()) expect(u).toMatchObject({ tokens: 700, tokens_in: 460, tokens_out: 240 });

    // The helpers answer; the workers' wakes are refused in B and C, naming the token budget.
    writeFileSync(gate(b), '');
    writeFileSync(gate(c), '');
    await b.waitIdle();
    await c.waitIdle();
    for (const w of [b, c]) {
      const reply = w.agentLog().filter((e) => e.cmd === 'reply' && e.role?.endsWith('/helper')).at(-1);
      expect(reply.out.warnings).toMatchObject([{ reason: 'operation_budget_exhausted', budget: 'max_tokens' }]);
      expect(w.agentLog().filter((e) => e.cmd === 'start' && e.role?.endsWith('/worker'))).toHaveLength(1);
    }
    // Their hand-backs reach A, whose planner is not woken: its root is handed back to the person, with the reason.
    await everywhere();
    await a.waitIdle();
    expect(a.agentLog().filter((e) => e.cmd === 'start' && e.role?.endsWith('/planner'))).toHaveLength(1);
    const atA = operationOf(await a.status(true), op);
    expect(atA.threads.find((t: any) => t.thread === sent.json.thread)).toMatchObject({ state: 'answered', escalated: true, awaiting_human: true });
    const root = await a.nxc(['threads', 'show', sent.json.thread, '--json']);
    expect(root.json.messages.at(-1).text).toContain('tokens (operation_budget.max_tokens)');
    await everywhere();
    const final = await totals();
    expect(final[0].tokens).toBe(704);
    expect(final[1]).toEqual(final[0]);
    expect(final[2]).toEqual(final[0]);

    // A's own turns spent 100 today: a daily ceiling of 100 refuses a new operation there.
    a.config({ daily_budget: { max_tokens: 100 } });
    const next = await send(a, 'planner', 'another');
    expect(next.code).toBe(3);
    expect(next.json.warnings[0]).toMatchObject({ reason: 'daily_budget_exhausted', budget: 'daily_max_tokens' });
    expect(next.json.warnings[0].message).toMatch(/resets at \d{4}-\d\d-\d\dT00:00:00\.000Z/);
  });
});
