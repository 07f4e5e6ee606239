// Hand-backs, waiting on a round of one's own, who awaits a human, and answers written in a session's name.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from './helpers/until.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

/** True once the sidecar has settled `turn` of `session`. */
function turnSettled(ws: TestWorkspace, session: string, turn: number): boolean {
  return existsSync(join(ws.root, '.nxs', 'sessions', session, `turn-${turn}.done`));
}

function operationOf(status: any, operation: string): any {
  return status.operations.find((o: any) => o.operation === operation);
}

function rowOf(status: any, thread: string): any {
  for (const op of status.operations) for (const row of op.threads) if (row.thread === thread) return row;
  return undefined;
}

async function send(ws: TestWorkspace, role: string, subject: string, text: string, env?: Record<string, string>) {
  const r = await ws.nxc(['send', role, '--subject', subject, '--json', text], { env });
  expect(r.code, r.stdout + r.stderr).toBe(0);
  return r.json;
}

describe('a declared hand-back: nxc reply --escalate', () => {
  let ws: TestWorkspace;
  let sent: any;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('boss', { mode: 'escalate' });
    sent = await send(ws, 'boss', 'pricing', 'set the price');
    await ws.waitIdle();
  });
  afterAll(() => ws.cleanup());

  it('answers the thread as escalated, not substituted, and the finished root awaits the human', async () => {
    const all = await ws.status(true);
    const op = operationOf(all, sent.operation);
    expect(op.finished).toBe(true);
    expect(rowOf(all, sent.thread)).toMatchObject({
      state: 'answered',
      escalated: true,
      substituted: false,
      awaiting_human: true,
      waiting_on_sub_round: false,
      answered_by: `${ws.short}/boss`,
    });
    const view = await ws.nxc(['threads', 'show', sent.thread, '--json']);
    expect(view.json.messages.map((m: any) => m.effect)).toEqual(['commission', 'escalate']);
  });

  it('a reply from the opener on the escalated thread posts, wakes nobody, and the thread stays escalated', async () => {
    const r = await ws.nxc(['reply', '--thread', sent.thread, '--json', 'the price is 10']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json).toMatchObject({ posted: true, woke: null, warnings: [] });
    await ws.waitIdle();
    const all = await ws.status(true);
    expect(rowOf(all, sent.thread)).toMatchObject({ state: 'answered', escalated: true, answered_by: `${ws.short}/boss`, messages: 3 });
    expect(ws.sessionDirs()).toHaveLength(1);
    expect(ws.agentLog().filter((e) => e.cmd === 'start')).toHaveLength(1);
  });

  it('a reply from another person on the escalated thread also posts and wakes nobody', async () => {
    const r = await ws.nxc(['reply', '--thread', sent.thread, '--json', 'bob agrees'], { env: { NXC_ACTOR: 'bob' } });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json).toMatchObject({ posted: true, woke: null });
    await ws.waitIdle();
    const all = await ws.status(true);
    expect(rowOf(all, sent.thread)).toMatchObject({ state: 'answered', escalated: true, messages: 4 });
    const view = await ws.nxc(['threads', 'show', sent.thread, '--json']);
    expect(view.json.messages.slice(2).map((m: any) => [m.author, m.effect])).toEqual([
      ['alice', 'none'],
      ['bob', 'none'],
    ]);
    expect(ws.agentLog().filter((e) => e.cmd === 'start')).toHaveLength(1);
  });
});

describe('a person -> orchestrator -> coder chain: waiting on a round of one’s own, and who awaits a human', () => {
  let ws: TestWorkspace;
  let gate: string;
  let sent: any;
  let orchestrator: string;
  let coderThread: string;
  beforeAll(async () => {
    ws = await makeWorkspace();
    gate = join(ws.root, '..', 'gate-coder');
    ws.persona('orchestrator', { mode: 'wait', arg: 'coder' });
    ws.persona('coder', { mode: 'gate', arg: gate });
    sent = await send(ws, 'orchestrator', 'feature', 'build the feature');
    orchestrator = sent.woke.session;
    await waitFor('the orchestrator to end its first turn', () => turnSettled(ws, orchestrator, 1));
    coderThread = ws.agentLog().find((e) => e.role === `${ws.short}/orchestrator` && e.cmd === 'send').out.thread;
  });
  afterAll(async () => {
    writeFileSync(gate, '');
    await ws.cleanup();
  });

  it('a session that commissioned a round and ended its turn without replying is waiting: no message, thread open, waiting_on_sub_round', async () => {
    const open = await ws.status(false);
    const op = operationOf(open, sent.operation);
    expect(op).toMatchObject({ finished: false, open: 2 });
    expect(op.threads.map((r: any) => r.thread)).toEqual([sent.thread, coderThread]);
    expect(rowOf(open, sent.thread)).toMatchObject({
      state: 'open',
      waiting_on_sub_round: true,
      messages: 1,
      answered_by: null,
      session: { id: orchestrator, depth: 1, turn: 1, running: false },
    });
    expect(rowOf(open, coderThread)).toMatchObject({
      parent: sent.thread,
      opener: `${ws.short}/orchestrator`,
      state: 'open',
      waiting_on_sub_round: false,
      session: { depth: 2, running: true },
    });
  });

  it('while the operation is open, no row awaits a human, the root included', async () => {
    const all = await ws.status(true);
    for (const row of operationOf(all, sent.operation).threads) expect(row.awaiting_human).toBe(false);
  });

  it('a follow-up to the waiting session posts without starting it (it is not running, so no warning either)', async () => {
    const r = await ws.nxc(['reply', '--thread', sent.thread, '--json', 'also mind the tests']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json).toMatchObject({ posted: true, woke: null, warnings: [] });
    const open = await ws.status(false);
    expect(rowOf(open, sent.thread)).toMatchObject({ state: 'open', waiting_on_sub_round: true, messages: 2, session: { turn: 1, running: false } });
  });

  it('when the round is answered, the commissioner starts again: a new turn at the same depth, and it answers', async () => {
    writeFileSync(gate, '');
    await ws.waitIdle();
    const log = ws.agentLog();
    const coderReply = log.find((e) => e.role === `${ws.short}/coder` && e.cmd === 'reply');
    expect(coderReply.code).toBe(0);
    expect(coderReply.out.woke).toMatchObject({ session: orchestrator, turn: 2, depth: 1, thread: sent.thread });
    const starts = log.filter((e) => e.role === `${ws.short}/orchestrator` && e.cmd === 'start');
    expect(starts.map((e) => [e.turn, e.hop, e.prompt_has_rounds])).toEqual([
      [1, '1', false],
      [2, '1', true],
    ]);
    // The second turn reads both the round's answer and the follow-up that came while it waited.
    const prompt = readFileSync(join(ws.root, '.nxs', 'sessions', orchestrator, 'turn-2.prompt'), 'utf8');
    expect(prompt).toContain('also mind the tests');
    expect(prompt).toContain('through the gate');
    const all = await ws.status(true);
    expect(rowOf(all, sent.thread)).toMatchObject({
      state: 'answered',
      messages: 3,
      waiting_on_sub_round: false,
      answered_by: `${ws.short}/orchestrator`,
      session: { id: orchestrator, depth: 1, turn: 2, running: false },
    });
  });

  it('once finished, only the root opened by the person awaits the human; the middle row never does; and the operation shows only with --all', async () => {
    const all = await ws.status(true);
    const op = operationOf(all, sent.operation);
    expect(op.finished).toBe(true);
    expect(rowOf(all, sent.thread)).toMatchObject({ awaiting_human: true, escalated: false });
    expect(rowOf(all, coderThread)).toMatchObject({ state: 'answered', awaiting_human: false, answered_by: `${ws.short}/coder` });
    const open = await ws.status(false);
    expect(operationOf(open, sent.operation)).toBeUndefined();
  });

  it('a hand-back in the middle of the chain wakes the commissioner and never awaits a human', async () => {
    ws.persona('planner', { mode: 'wait', arg: 'critic' });
    ws.persona('critic', { mode: 'escalate' });
    const planned = await send(ws, 'planner', 'plan', 'make a plan');
    await ws.waitIdle();
    const all = await ws.status(true);
    const op = operationOf(all, planned.operation);
    expect(op.finished).toBe(true);
    const [root, mid] = op.threads;
    expect(root).toMatchObject({ thread: planned.thread, escalated: false, awaiting_human: true, answered_by: `${ws.short}/planner` });
    expect(mid).toMatchObject({ parent: planned.thread, escalated: true, awaiting_human: false, answered_by: `${ws.short}/critic` });
    expect(root.session).toMatchObject({ depth: 1, turn: 2 });
  });
});

describe('a plain reply while the session’s own round is still open', () => {
  let ws: TestWorkspace;
  let gate: string;
  beforeAll(async () => {
    ws = await makeWorkspace();
    gate = join(ws.root, '..', 'gate-helper');
    ws.persona('impatient', { mode: 'plain-while-waiting', arg: 'helper:escalate' });
    ws.persona('helper', { mode: 'gate', arg: gate });
  });
  afterAll(async () => {
    writeFileSync(gate, '');
    await ws.cleanup();
  });

  it('is refused with SUB_ROUND_OPEN (exit 2, nothing written), and --escalate in that state is allowed', async () => {
    const sent = await send(ws, 'impatient', 'urgent', 'do it now');
    const impatient = sent.woke.session;
    await waitFor('the impatient session to end its turn', () => turnSettled(ws, impatient, 1));
    const calls = ws.agentLog().filter((e) => e.session === impatient && e.cmd !== 'start');
    expect(calls.map((e) => [e.cmd, e.code])).toEqual([
      ['send', 0],
      ['reply', 2],
      ['reply', 0],
    ]);
    const helperThread = calls[0].out.thread;
    expect(calls[1].out).toMatchObject({ ok: false, error: { code: 'SUB_ROUND_OPEN', details: { open: [helperThread] } } });
    expect(calls[2].out).toMatchObject({ posted: true, thread: sent.thread, woke: null });

    const view = await ws.nxc(['threads', 'show', sent.thread, '--json']);
    expect(view.json.messages.map((m: any) => [m.author, m.effect])).toEqual([
      ['alice', 'commission'],
      [`${ws.short}/impatient`, 'escalate'],
    ]);
    expect(view.json.messages.some((m: any) => m.text === 'premature')).toBe(false);
    const mid = await ws.status(true);
    expect(rowOf(mid, sent.thread)).toMatchObject({ state: 'answered', escalated: true, substituted: false, awaiting_human: false });
    expect(rowOf(mid, helperThread)).toMatchObject({ state: 'open', awaiting_human: false });

    // The helper's late answer lands on its own thread; the escalated session is not woken for it.
    writeFileSync(gate, '');
    await ws.waitIdle();
    const all = await ws.status(true);
    expect(operationOf(all, sent.operation).finished).toBe(true);
    expect(rowOf(all, sent.thread)).toMatchObject({ escalated: true, awaiting_human: true, session: { turn: 1 } });
    expect(rowOf(all, helperThread)).toMatchObject({ state: 'answered', awaiting_human: false });
  });
});

describe('a session that ends its turn without replying gets an answer written in its name', () => {
  let ws: TestWorkspace;
  const sent: Record<string, any> = {};
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('quitter', { mode: 'exit0' });
    ws.persona('crasher', { mode: 'crash' });
    ws.persona('sloth', { mode: 'hang', timeout: '2s' });
    const [q, c, s] = await Promise.all([
      send(ws, 'quitter', 'q', 'please answer'),
      send(ws, 'crasher', 'c', 'please answer'),
      send(ws, 'sloth', 's', 'please answer'),
    ]);
    Object.assign(sent, { quitter: q, crasher: c, sloth: s });
    await ws.waitIdle();
  });
  afterAll(() => ws.cleanup());

  async function lastMessage(thread: string) {
    const view = await ws.nxc(['threads', 'show', thread, '--json']);
    return view.json.messages.at(-1);
  }

  it('exit 0 without a reply: substituted, not escalated', async () => {
    const all = await ws.status(true);
    expect(rowOf(all, sent.quitter.thread)).toMatchObject({
      state: 'answered',
      substituted: true,
      escalated: false,
      answered_by: `${ws.short}/quitter`,
      awaiting_human: true,
    });
    expect(await lastMessage(sent.quitter.thread)).toMatchObject({ author: `${ws.short}/quitter`, effect: 'answer', substituted: true });
  });

  it('a crash (non-zero exit): substituted and escalated', async () => {
    const all = await ws.status(true);
    expect(rowOf(all, sent.crasher.thread)).toMatchObject({ state: 'answered', substituted: true, escalated: true, answered_by: `${ws.short}/crasher` });
    const m = await lastMessage(sent.crasher.thread);
    expect(m).toMatchObject({ effect: 'escalate', substituted: true });
    expect(m.text).toContain('exited with code 3');
  });

  it('past its declared timeout: stopped, substituted and escalated', async () => {
    const all = await ws.status(true);
    expect(rowOf(all, sent.sloth.thread)).toMatchObject({
      state: 'answered',
      substituted: true,
      escalated: true,
      answered_by: `${ws.short}/sloth`,
      session: { running: false },
    });
    const m = await lastMessage(sent.sloth.thread);
    expect(m).toMatchObject({ effect: 'escalate', substituted: true });
    expect(m.text).toContain('timeout');
  });
});
