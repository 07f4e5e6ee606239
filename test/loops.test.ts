// Loops the depth guard cannot see: a chain that stops going deeper and goes round at a fixed depth.
// The operation budget stops it, and hands the operation back to the person who opened it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eq } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { checkOps, signStamp } from '../crypto/index.js';
import { tables } from '../node-agent/adapters/store/index.js';
import { appendOps, ingestChecked, wireTextOf } from '../node-agent/kernel/index.js';
import { foldOperation, turnsUsed } from '../node-agent/capabilities/threads/index.js';
import type { Op } from '../protocol/ops.js';
import { newMessageId, newThreadId } from '../protocol/ids.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';
import { declareChannel, opsOf } from './channels/scenario.js';

type Row = {
  thread: string;
  parent: string | null;
  state: string;
  escalated: boolean;
  substituted: boolean;
  awaiting_human: boolean;
  session: { id: string; depth: number; turn: number; running: boolean } | null;
};

function operationOf(status: any, id: string): { finished: boolean; turns: { used: number; budget: number }; threads: Row[] } {
  const op = status.operations.find((o: any) => o.operation === id);
  if (!op) throw new Error(`operation ${id} is not in status`);
  return op;
}

function starts(ws: TestWorkspace): any[] {
  return ws.agentLog().filter((e) => e.cmd === 'start');
}

/** What every settled turn reported (the warnings of its end included), from the markers its supervisor wrote. */
function turnEnds(ws: TestWorkspace): any[] {
  const out: any[] = [];
  for (const s of ws.sessionDirs()) {
    const dir = join(ws.root, '.nxs', 'sessions', s);
    for (const f of readdirSync(dir)) if (/^turn-\d+\.done$/.test(f)) out.push(JSON.parse(readFileSync(join(dir, f), 'utf8')));
  }
  return out;
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

let ws: TestWorkspace | undefined;
afterEach(async () => {
  await ws?.cleanup();
  ws = undefined;
});

/** Runs the looping persona from a person's send until nothing more runs; returns the send's receipt. */
async function runLoop(w: TestWorkspace, timeoutMs: number): Promise<any> {
  w.persona('looper', { mode: 'loop', arg: 'looper' });
  const sent = await w.nxc(['send', 'looper', '--subject', 'loop', '--json', 'keep going']);
  expect(sent.code, sent.stdout + sent.stderr).toBe(0);
  expect(sent.json.woke).toMatchObject({ depth: 1, turn: 1 });
  await w.waitIdle(timeoutMs);
  return sent.json;
}

describe('a persona whose script commissions itself on every turn', () => {
  it('goes down to depth 32, then round 31, 32, 31, 32 ... until the operation budget stops it and hands the root back', { timeout: 120_000 }, async () => {
    ws = await makeWorkspace();
    ws.config({ operation_budget: 40 });
    const sent = await runLoop(ws, 100_000);

    // 32 turns down the chain, then the loop at a fixed depth: the refused depth-32 session's stand-in answer
    // wakes depth 31, which commissions again. The budget (40) ends it after four passes.
    const hops = starts(ws).map((e) => Number(e.hop));
    expect(hops).toEqual([...range(1, 32), 31, 32, 31, 32, 31, 32, 31, 32]);
    const deepest = new Set(starts(ws).filter((e) => e.hop === '32').map((e) => e.session));
    expect(deepest.size).toBe(5);
    const refused = ws.agentLog().filter((e) => e.cmd === 'send' && e.code === 2);
    expect(refused).toHaveLength(5);
    for (const r of refused) expect(r).toMatchObject({ hop: '32', out: { error: { code: 'DEPTH_EXCEEDED' } } });

    // Each refused depth-32 session exited without answering: what was written in its name is a hand-back.
    const status = await ws.status(true);
    const atCap = operationOf(status, sent.operation).threads.filter((t) => t.session?.depth === 32);
    expect(atCap).toHaveLength(5);
    for (const t of atCap) expect(t).toMatchObject({ state: 'answered', escalated: true, substituted: true });
    const capView = await ws.nxc(['threads', 'show', atCap[0]!.thread, '--json']);
    expect(capView.json.messages.at(-1)).toMatchObject({ effect: 'escalate', substituted: true });
    expect(capView.json.messages.at(-1).text).toContain('DEPTH_EXCEEDED');

    // The last stand-in answer could not wake depth 31: the wake was refused by the budget, with its stable reason.
    const stopped = turnEnds(ws).flatMap((e) => e.warnings ?? []).filter((w: any) => w.reason === 'operation_budget_exhausted');
    expect(stopped).toHaveLength(1);
    expect(stopped[0]).toMatchObject({ class: 'requester_not_woken', role: 'looper' });

    // Every thread the loop left owed is handed back, its root to the person who opened it, naming the budget.
    const op = operationOf(await ws.status(true), sent.operation);
    expect(op.turns).toEqual({ used: 40, budget: 40 });
    expect(op.finished).toBe(true);
    const root = op.threads.find((t) => t.thread === sent.thread)!;
    expect(root).toMatchObject({ state: 'answered', escalated: true, substituted: true, awaiting_human: true, session: { depth: 1, running: false } });
    for (const t of op.threads) expect(t).toMatchObject({ state: 'answered', session: { running: false } });
    const view = await ws.nxc(['threads', 'show', sent.thread, '--json']);
    expect(view.json.messages.at(-1)).toMatchObject({ effect: 'escalate', substituted: true });
    expect(view.json.messages.at(-1).text).toContain('budget of 40 turns');

    const text = await ws.nxc(['status', '--all']);
    expect(text.stdout).toContain('turns 40 of 40 (budget used up)');
    expect(text.stdout).toContain('awaiting you');

    // Nothing starts again: the clock's work and a follow-up by the person leave the count where it is.
    await ws.nxc(['tick', '--json']);
    await ws.waitIdle();
    expect(starts(ws)).toHaveLength(40);
  });

});

/** Takes in at `to` every op `from` wrote (as their signed wire texts, verified as synced ops are) and lets `to` react. */
async function deliver(from: TestWorkspace, to: TestWorkspace): Promise<void> {
  const raws = await from.withStore(async (store) =>
    (await store.db.select().from(tables.ops).where(eq(tables.ops.workspace, from.id))).flatMap((r) => wireTextOf(r) ?? []),
  );
  await to.inproc!.serve(async (h) => {
    const checked = await checkOps(raws);
    const report = await h.deps.db.transaction((tx) => ingestChecked(tx, checked, { projections: h.deps.projections }));
    expect(report.refusals).toEqual([]);
    await h.engine.react(report.fresh);
  });
}

describe('the budget across a workspace border', () => {
  let b: TestWorkspace | undefined;
  afterEach(async () => {
    await b?.cleanup();
    b = undefined;
  });

  it('a stamped commission carries the asking operation\'s turns, and the default budget of 500 stops the loop it starts 10 turns later', { timeout: 120_000 }, async () => {
    ws = await makeWorkspace({ git: false });
    b = await makeWorkspace({ git: false });
    const a = ws;
    const trusted = await b.nxs(['sync', 'trust', 'add', '--workspace', a.id, '--key', join(a.root, '.nxs', 'keys', 'workspace.pub.jwk'), '--json']);
    expect(trusted.code, trusted.stdout + trusted.stderr).toBe(0);
    b.persona('looper', { mode: 'loop', arg: 'looper', extra: 'addressable: { external: true }' });

    // A's person asks B's looper from an operation that (A's coordinator says) has used 490 turns already.
    const thread = newThreadId();
    await a.inproc!.serve(async (h) => {
      const stamp = await signStamp(h.deps.keys.key, { sub: `alice@${a.short}`, role: null, aud: b!.id, target_role: 'looper', thread, depth: 0, turns: 490 });
      const writer = { workspace: a.id, origin: h.deps.origin, now: h.deps.now, projections: h.deps.projections, signer: h.deps.keys.signer };
      const alice = { handle: `alice@${a.short}`, session: null };
      await h.deps.db.transaction((tx) =>
        appendOps(tx, writer, [
          { operation: thread, thread, session: null, kind: 'thread.opened', body: { parent: null, subject: 'far away', opener: alice, target: { kind: 'remote', workspace: b!.id, role: 'looper', handle: `${b!.short}/looper` }, stamp } },
          { operation: thread, thread, session: null, kind: 'message.posted', body: { message: newMessageId(), author: alice, text: 'keep going', effect: 'commission', substituted: false, refs: { working_copy: null } } },
        ]),
      );
    });
    await deliver(a, b);
    await b.waitIdle(100_000);

    // B declares no budget: 490 carried + 10 of its own is the default's 500. Its looper went 10 deep, and the
    // tenth session's commission was posted and not started.
    const hops = starts(b).map((e) => Number(e.hop));
    expect(hops).toEqual(range(1, 10));
    const last = b.agentLog().filter((e) => e.cmd === 'send').at(-1);
    expect(last).toMatchObject({ hop: '10', code: 3 });
    expect(last.out.warnings).toMatchObject([{ class: 'step_skipped', reason: 'operation_budget_exhausted' }]);
    const atB = operationOf(await b.status(true), thread);
    expect(atB.turns).toEqual({ used: 500, budget: 500 });
    expect(atB.finished).toBe(true);
    expect(atB.threads.find((t) => t.thread === thread)).toMatchObject({ state: 'answered', escalated: true, substituted: true });

    // The hand-back travels to the asker: A's person finds the thread handed back, and A counts the same turns.
    await deliver(b, a);
    const atA = operationOf(await a.status(true), thread);
    expect(atA.turns.used).toBe(500);
    expect(atA.threads.find((t) => t.thread === thread)).toMatchObject({ state: 'answered', escalated: true, awaiting_human: true });
  });
});

describe('a stand-in answer after a refusal', () => {
  it.each([
    ['DEPTH_EXCEEDED', { mode: 'hop', arg: 'coder:32' }],
    ['REPLY_ONLY', { mode: 'loop', arg: 'coder', tools: [] as string[] }],
  ] as const)('after %s, is an escalation that says so, and the person finds the task handed back', async (code, spec) => {
    ws = await makeWorkspace({ git: false });
    ws.persona('coder', { mode: 'reply' });
    ws.persona('stuck', spec);
    const sent = await ws.nxc(['send', 'stuck', '--subject', 's', '--json', 'do it']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    await ws.waitIdle();
    expect(ws.agentLog().find((e) => e.cmd === 'send')).toMatchObject({ code: 2, out: { error: { code } } });
    const op = operationOf(await ws.status(true), sent.json.operation);
    expect(op.threads).toHaveLength(1);
    expect(op.threads[0]).toMatchObject({ state: 'answered', escalated: true, substituted: true, awaiting_human: true });
    const view = await ws.nxc(['threads', 'show', sent.json.thread, '--json']);
    const last = view.json.messages.at(-1);
    expect(last).toMatchObject({ effect: 'escalate', substituted: true });
    expect(last.text).toContain(`refused (${code}:`);
    expect(last.text).toContain('could not carry its task out');
    const text = await ws.nxc(['status', '--all']);
    expect(text.stdout).toContain('ESCALATED');
  });

  it('wakes the requesting session with a hand-back, not an answer', async () => {
    ws = await makeWorkspace({ git: false });
    ws.persona('coder', { mode: 'reply' });
    ws.persona('stuck', { mode: 'hop', arg: 'coder:32' });
    ws.persona('planner', { mode: 'wait', arg: 'stuck' });
    const sent = await ws.nxc(['send', 'planner', '--subject', 's', '--json', 'plan it']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    await ws.waitIdle();
    const op = operationOf(await ws.status(true), sent.json.operation);
    const round = op.threads.find((t) => t.parent === sent.json.thread)!;
    expect(round).toMatchObject({ state: 'answered', escalated: true, substituted: true, awaiting_human: false });
    // The planner was started again for it, and its prompt reads the round as handed back.
    const root = op.threads.find((t) => t.thread === sent.json.thread)!;
    expect(root).toMatchObject({ state: 'answered', escalated: false, session: { turn: 2 } });
    const prompt = readFileSync(join(ws.root, '.nxs', 'sessions', root.session!.id, 'turn-2.prompt'), 'utf8');
    expect(prompt).toContain(`handed back by ${ws.short}/stuck`);
  });

  it('is a plain answer, as before, when nothing the session ran was refused', async () => {
    ws = await makeWorkspace({ git: false });
    ws.persona('quiet', { mode: 'exit0' });
    const sent = await ws.nxc(['send', 'quiet', '--subject', 's', '--json', 'do it']);
    await ws.waitIdle();
    const op = operationOf(await ws.status(true), sent.json.operation);
    expect(op.threads[0]).toMatchObject({ state: 'answered', escalated: false, substituted: true });
  });
});

describe('repeat detection', () => {
  it('refuses the fourth identical commission, answered three times, with REPEATED_COMMISSION and the reason', async () => {
    ws = await makeWorkspace({ git: false });
    ws.persona('coder', { mode: 'reply' });
    ws.persona('nagger', { mode: 'loop', arg: 'coder:same' });
    const sent = await ws.nxc(['send', 'nagger', '--subject', 's', '--json', 'get it done']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    await ws.waitIdle();
    const sends = ws.agentLog().filter((e) => e.cmd === 'send');
    expect(sends.map((e) => e.code)).toEqual([0, 0, 0, 2]);
    const refused = sends[3].out.error;
    expect(refused).toMatchObject({ code: 'REPEATED_COMMISSION', details: { count: 3, limit: 3 } });
    expect(refused.message).toContain(`${ws.short}/nagger has commissioned ${ws.short}/coder with these same words 3 times`);
    // Nothing was written for the refused one: three rounds, each answered; the nagger then exited without
    // answering after a refusal, so its thread is handed back to the person, naming the code.
    const op = operationOf(await ws.status(true), sent.json.operation);
    expect(op.threads).toHaveLength(4);
    expect(op.turns.used).toBe(7);
    const root = op.threads.find((t) => t.thread === sent.json.thread)!;
    expect(root).toMatchObject({ state: 'answered', escalated: true, substituted: true, awaiting_human: true });
    const view = await ws.nxc(['threads', 'show', sent.json.thread, '--json']);
    expect(view.json.messages.at(-1).text).toContain('REPEATED_COMMISSION');
  });

  it('stops the 31/32 loop with the same words in seconds, well before the budget, every thread handed back', { timeout: 120_000 }, async () => {
    ws = await makeWorkspace({ git: false });
    ws.persona('looper', { mode: 'loop', arg: 'looper:same' });
    const sent = await ws.nxc(['send', 'looper', '--subject', 'loop', '--json', 'keep going']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    await ws.waitIdle(100_000);
    // Down to 32; depth 31 asks again twice more (three answered), its fourth ask is refused, and so is every
    // identical ask above it on the way back up.
    const hops = starts(ws).map((e) => Number(e.hop));
    expect(hops).toEqual([...range(1, 32), 31, 32, 31, 32, 31, ...range(1, 30).reverse()]);
    const repeats = ws.agentLog().filter((e) => e.cmd === 'send' && e.out?.error?.code === 'REPEATED_COMMISSION');
    expect(repeats.map((e) => Number(e.hop))).toEqual(range(1, 31).reverse());
    const op = operationOf(await ws.status(true), sent.json.operation);
    expect(op.turns).toEqual({ used: 67, budget: 500 });
    expect(op.finished).toBe(true);
    for (const t of op.threads) expect(t).toMatchObject({ state: 'answered', escalated: true, substituted: true });
    expect(op.threads.find((t) => t.thread === sent.json.thread)).toMatchObject({ awaiting_human: true });
  });

  it('keys on the target role: after three answered identical asks to one role, the same words to another role are accepted', async () => {
    ws = await makeWorkspace({ git: false });
    ws.persona('coder', { mode: 'reply' });
    ws.persona('reviewer', { mode: 'reply' });
    ws.persona('switcher', { mode: 'switch', arg: 'coder:3:reviewer' });
    const sent = await ws.nxc(['send', 'switcher', '--subject', 's', '--json', 'get it done']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    await ws.waitIdle();
    const sends = ws.agentLog().filter((e) => e.cmd === 'send');
    expect(sends.map((e) => e.code)).toEqual([0, 0, 0, 0]);
    const op = operationOf(await ws.status(true), sent.json.operation);
    expect(op.threads).toHaveLength(5);
    const root = op.threads.find((t) => t.thread === sent.json.thread)!;
    expect(root).toMatchObject({ state: 'answered', escalated: false, substituted: false });
  });

  it('counts only asks answered before the asking turn began: a fan-out of one text in one turn is not a repeat, however fast its answers land', async () => {
    ws = await makeWorkspace({ git: false });
    ws.persona('coder', { mode: 'reply' });
    ws.persona('fanner', { mode: 'steps', arg: 'send:coder+send:coder+send:coder+send:coder+send:coder' });
    const sent = await ws.nxc(['send', 'fanner', '--subject', 's', '--json', 'fan out']);
    expect(sent.code).toBe(0);
    await ws.waitIdle();
    expect(ws.agentLog().filter((e) => e.cmd === 'send').map((e) => e.code)).toEqual([0, 0, 0, 0, 0]);
  });

  it('counts per operation: the same ask in a new operation starts from nothing', async () => {
    ws = await makeWorkspace({ git: false });
    ws.persona('coder', { mode: 'reply' });
    ws.persona('nagger', { mode: 'loop', arg: 'coder:same' });
    for (const n of [1, 2]) {
      const sent = await ws.nxc(['send', 'nagger', '--subject', `s${n}`, '--json', 'get it done']);
      expect(sent.code).toBe(0);
      await ws.waitIdle();
    }
    expect(ws.agentLog().filter((e) => e.cmd === 'send').map((e) => e.code)).toEqual([0, 0, 0, 2, 0, 0, 0, 2]);
  });
});

describe('the budget inside a channel round', () => {
  it('skips the steps it refuses, and the round still ends: the operation is handed back, nothing left owed', { timeout: 60_000 }, async () => {
    ws = await makeWorkspace({ git: false });
    ws.config({ operation_budget: 4 });
    ws.persona('orchestrator', { mode: 'rounds', arg: '#review:3' });
    ws.persona('owner', { mode: 'reply' });
    ws.persona('coder', { mode: 'reply' });
    declareChannel(ws, 'review', 'members: [coder]\nowner: owner\n');
    const sent = await ws.nxc(['send', 'orchestrator', '--subject', 'rounds', '--json', 'ask #review three times']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    await ws.waitIdle();
    // Round 1 costs three turns and wakes the orchestrator (the fourth); round 2's steps are refused and skipped.
    expect(starts(ws)).toHaveLength(4);
    const skipped = await opsOf(ws, 'step.skipped');
    expect(skipped.length).toBeGreaterThan(0);
    for (const k of skipped) expect(k.body.reason).toBe('operation_budget_exhausted');
    const op = operationOf(await ws.status(true), sent.json.operation);
    expect(op.turns).toEqual({ used: 4, budget: 4 });
    expect(op.finished).toBe(true);
    expect(op.threads.find((t) => t.thread === sent.json.thread)).toMatchObject({ state: 'answered', escalated: true, awaiting_human: true });
  });
});

describe('the operation budget as declared', () => {
  it.each([0, -5, 2.5, '200'])('a config declaring operation_budget %j is refused (CONFIG_INVALID, exit 2, naming the member), and the send writes nothing', async (bad) => {
    ws = await makeWorkspace({ git: false });
    ws.persona('coder', { mode: 'reply' });
    ws.config({ operation_budget: bad });
    const r = await ws.nxc(['send', 'coder', '--subject', 's', '--json', 'hello']);
    expect(r.code).toBe(2);
    expect(r.json.error.code).toBe('CONFIG_INVALID');
    expect(r.json.error.message).toContain('operation_budget');
    ws.config({ operation_budget: undefined });
    expect((await ws.status(true)).operations).toEqual([]);
    expect(ws.agentLog()).toEqual([]);
  });

  it('status shows the budget in force, and a change to the config applies to the next command without a restart', async () => {
    ws = await makeWorkspace({ git: false });
    ws.persona('coder', { mode: 'reply' });
    const sent = await ws.nxc(['send', 'coder', '--subject', 's', '--json', 'hello']);
    await ws.waitIdle();
    expect(operationOf(await ws.status(true), sent.json.operation).turns).toEqual({ used: 1, budget: 500 });
    ws.config({ operation_budget: 1 });
    expect(operationOf(await ws.status(true), sent.json.operation).turns).toEqual({ used: 1, budget: 1 });
    // A follow-up would be this operation's second turn: posted, and refused to start with the stable reason.
    const follow = await ws.nxc(['reply', '--thread', sent.json.thread, '--json', 'one more thing']);
    expect(follow.code).toBe(3);
    expect(follow.json).toMatchObject({ posted: true, woke: null, warnings: [{ class: 'step_skipped', reason: 'operation_budget_exhausted' }] });
    const row = operationOf(await ws.status(true), sent.json.operation).threads[0]!;
    expect(row).toMatchObject({ state: 'answered', escalated: true, substituted: true, awaiting_human: true });
  });
});

describe('turns used, as the fold counts them', () => {
  const W = 'a'.repeat(26);
  const T = 't-01aaaaaaaaaaaaaaaaaaaaaaaa';
  let lamport = 0;
  const op = (kind: string, session: string | null, body: object): Op =>
    ({ id: String(++lamport).padStart(4, '0'), workspace: W, origin: 'o', lamport, ts: '2026-01-01T00:00:00.000Z', operation: T, thread: T, session, key: 'k', kind, body }) as Op;
  const created = (session: string, carried?: number) => op('session.created', session, { role: 'r', handle: 'aaaa/r', depth: 1, ...(carried === undefined ? {} : { carried_turns: carried }) });
  const turn = (session: string, n: number) => op('session.turn_started', session, { role: 'r', turn: n, reason: 'commissioned', declaration_hash: 'h' });

  it('counts each turn once, and what a commission carried in only beyond the turns already folded, in any arrival order', () => {
    // Sessions are created in a thread the fold knows (an op about an unknown thread is inert).
    const opened = op('thread.opened', null, { parent: null, subject: null, opener: { handle: 'alice', session: null }, target: { kind: 'persona', role: 'r', handle: 'aaaa/r' } });
    const ops = [opened, created('s-1'), turn('s-1', 1), turn('s-1', 2), turn('s-1', 2), turn('s-1', 3), created('s-2', 10), turn('s-2', 1), created('s-3', 5), turn('s-3', 1)];
    const state = foldOperation(T, ops);
    // 3 turns folded when 10 were carried in: 7 more; the later carry of 5 is below what is counted already.
    expect(turnsUsed(state)).toBe(3 + 7 + 1 + 1);
    expect(foldOperation(T, [...ops].reverse())).toEqual(state);
  });
});
