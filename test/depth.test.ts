// The depth guard through the CLI, in process: the cap counts the open chain, anchored in the store, never
// lowered by NXC_HOP. Round after round through a real node is test/e2e/depth-node.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationOf, roundAfterRound, starts, type Row } from './helpers/rounds.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

describe('an orchestrator commissioning round after round', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('orchestrator', { mode: 'rounds', arg: 'coder:20' });
    ws.persona('coder', { mode: 'reply' });
  });
  afterAll(() => ws.cleanup());

  it('completes 20 commission-and-answer rounds with every coder at depth 2 and the orchestrator at depth 1 on every turn', { timeout: 600_000 }, () =>
    roundAfterRound(ws, 20, 570_000),
  );

  it('a follow-up to the finished orchestrator wakes the same session again at depth 1', async () => {
    const orch = `${ws.short}/orchestrator`;
    const before = (await ws.status(true)).operations;
    expect(before).toHaveLength(1);
    const root = before[0].threads.find((t: Row) => t.parent === null) as Row;
    const follow = await ws.nxc(['reply', '--thread', root.thread, '--json', 'one more thing']);
    expect(follow.code, follow.stdout + follow.stderr).toBe(0);
    expect(follow.json.woke).toMatchObject({ session: root.session!.id, handle: orch, depth: 1, turn: 22 });
    await ws.waitIdle();
    const turn22 = starts(ws, orch).filter((e) => e.turn === 22);
    expect(turn22).toHaveLength(1);
    expect(turn22[0].hop).toBe('1');
    const op = operationOf(await ws.status(true), before[0].operation);
    expect(op.finished).toBe(true);
    expect(op.threads.find((t) => t.thread === root.thread)).toMatchObject({ state: 'answered', awaiting_human: true, session: { depth: 1, turn: 22 } });
  });

  it('a new send to the orchestrator afterwards starts a new session at depth 1 whose round is again at depth 2', async () => {
    // Redeclared for a single round, so this check costs one round rather than twenty more.
    ws.persona('orchestrator', { mode: 'rounds', arg: 'coder:1' });
    const orch = `${ws.short}/orchestrator`;
    const coder = `${ws.short}/coder`;
    const first = (await ws.status(true)).operations[0].operation;
    const sent = await ws.nxc(['send', 'orchestrator', '--subject', 'again', '--json', 'once more']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    expect(sent.json.operation).not.toBe(first);
    expect(sent.json.woke).toMatchObject({ handle: orch, depth: 1, turn: 1 });
    expect(sent.json.warnings).toMatchObject([{ class: 'declaration_changed', role: 'orchestrator' }]);
    await ws.waitIdle();
    const op = operationOf(await ws.status(true), sent.json.operation);
    expect(op.finished).toBe(true);
    const root = op.threads.find((t) => t.thread === sent.json.thread)!;
    expect(root).toMatchObject({ state: 'answered', awaiting_human: true, session: { depth: 1, turn: 2 } });
    expect(root.session!.id).not.toBe(starts(ws, orch)[0].session);
    const rounds = op.threads.filter((t) => t.thread !== root.thread);
    expect(rounds).toMatchObject([{ parent: root.thread, to: coder, state: 'answered', session: { depth: 2 } }]);
    expect(starts(ws, orch).filter((e) => e.session === root.session!.id).map((e) => e.hop)).toEqual(['1', '1']);
  });
});

describe('a self-commissioning chain', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    // In process: the cap is the engine's rule, anchored in the store; what real processes add (a session's
    // environment, its nxc reaching the node) the round-after-round case through a node proves.
    ws = await makeWorkspace();
    ws.persona('looper', { mode: 'chain', arg: 'looper' });
  });
  afterAll(() => ws.cleanup());

  it(
    'stops at exactly 32 sessions, refuses the 33rd with DEPTH_EXCEEDED, and unwinds until the operation finishes',
    { timeout: 600_000 },
    async () => {
      const looper = `${ws.short}/looper`;
      const sent = await ws.nxc(['send', 'looper', '--subject', 'recurse', '--json', 'go as deep as you can']);
      expect(sent.code, sent.stdout + sent.stderr).toBe(0);
      expect(sent.json.woke).toMatchObject({ depth: 1 });
      await ws.waitIdle(570_000);

      // Exactly 32 session folders, and 32 distinct sessions ever started a process.
      expect(ws.sessionDirs()).toHaveLength(32);
      const firstTurns = starts(ws, looper).filter((e) => e.turn === 1);
      expect(firstTurns).toHaveLength(32);
      expect(new Set(firstTurns.map((e) => e.session)).size).toBe(32);
      expect(firstTurns.map((e) => Number(e.hop)).sort((a, b) => a - b)).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));

      // Every send succeeded except the one made at depth 32, which was refused at the cap.
      const sends = ws.agentLog().filter((e) => e.cmd === 'send');
      expect(sends).toHaveLength(32);
      const refused = sends.filter((e) => e.code !== 0);
      expect(refused).toHaveLength(1);
      expect(refused[0]).toMatchObject({ hop: '32', code: 2, out: { ok: false, error: { code: 'DEPTH_EXCEEDED' } } });
      for (const s of sends.filter((e) => e.code === 0)) expect(s.out.woke.depth).toBe(Number(s.hop) + 1);

      // The store agrees: depths 1..32, one session each, every thread answered, no substitutes.
      const op = operationOf(await ws.status(true), sent.json.operation);
      expect(op.finished).toBe(true);
      expect(op.threads).toHaveLength(32);
      expect(op.threads.map((t) => t.session!.depth).sort((a, b) => a - b)).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));
      for (const t of op.threads) expect(t).toMatchObject({ state: 'answered', substituted: false, session: { running: false } });
      // Depth 32 answered itself on its first turn; every shallower session was woken once to answer upward.
      for (const t of op.threads) expect(t.session!.turn).toBe(t.session!.depth === 32 ? 1 : 2);
      expect(op.threads.find((t) => t.thread === sent.json.thread)).toMatchObject({ session: { depth: 1 }, awaiting_human: true });
      const deepest = op.threads.find((t) => t.session!.depth === 32)!;
      const view = await ws.nxc(['threads', 'show', deepest.thread, '--json']);
      expect(view.json.messages.at(-1)).toMatchObject({ effect: 'answer', text: 'refused: DEPTH_EXCEEDED' });
    },
  );
});

describe('NXC_HOP inside a session', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('coder', { mode: 'reply' });
    ws.persona('unsetter', { mode: 'hop', arg: 'coder:unset' });
    ws.persona('lowerer', { mode: 'hop', arg: 'coder:0' });
    ws.persona('raiser', { mode: 'hop', arg: 'coder:10' });
    ws.persona('garbler', { mode: 'hop', arg: 'coder:abc' });
    ws.persona('capper', { mode: 'hop', arg: 'coder:32' });
  });
  afterAll(() => ws.cleanup());

  async function commissionVia(role: string): Promise<{ operation: string; send: any; coderRow: Row | undefined }> {
    const sent = await ws.nxc(['send', role, '--subject', role, '--json', 'commission a coder']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    expect(sent.json.woke).toMatchObject({ depth: 1 });
    await ws.waitIdle();
    const send = ws.agentLog().find((e) => e.role === `${ws.short}/${role}` && e.cmd === 'send');
    const op = operationOf(await ws.status(true), sent.json.operation);
    expect(op.finished).toBe(true);
    return { operation: sent.json.operation, send, coderRow: op.threads.find((t) => t.parent !== null) };
  }

  it('a session that unsets NXC_HOP still commissions at its anchored depth + 1', async () => {
    const { send, coderRow } = await commissionVia('unsetter');
    expect(send).toMatchObject({ code: 0, out: { woke: { depth: 2 } } });
    expect(coderRow?.session?.depth).toBe(2);
    const coderStart = starts(ws).find((e) => e.session === coderRow!.session!.id);
    expect(coderStart.hop).toBe('2');
  });

  it('a session that lowers NXC_HOP to 0 still commissions at its anchored depth + 1', async () => {
    const { send, coderRow } = await commissionVia('lowerer');
    expect(send).toMatchObject({ code: 0, out: { woke: { depth: 2 } } });
    expect(coderRow?.session?.depth).toBe(2);
  });

  it('a session that raises NXC_HOP to 10 commissions at depth 11', async () => {
    const { send, coderRow } = await commissionVia('raiser');
    expect(send).toMatchObject({ code: 0, out: { woke: { depth: 11 } } });
    expect(coderRow?.session?.depth).toBe(11);
    const coderStart = starts(ws).find((e) => e.session === coderRow!.session!.id);
    expect(coderStart.hop).toBe('11');
  });

  it('a session that raises NXC_HOP to the cap is refused with DEPTH_EXCEEDED and commissions nothing', async () => {
    const dirs = ws.sessionDirs().length;
    const { send, coderRow } = await commissionVia('capper');
    expect(send).toMatchObject({ code: 2, out: { ok: false, error: { code: 'DEPTH_EXCEEDED', details: { caller_depth: 32 } } } });
    expect(coderRow).toBeUndefined();
    expect(ws.sessionDirs()).toHaveLength(dirs + 1);
  });

  it('a session with a malformed NXC_HOP is refused with BAD_ENVIRONMENT and commissions nothing', async () => {
    const dirs = ws.sessionDirs().length;
    const { send, coderRow } = await commissionVia('garbler');
    expect(send).toMatchObject({ code: 2, out: { ok: false, error: { code: 'BAD_ENVIRONMENT' } } });
    expect(coderRow).toBeUndefined();
    expect(ws.sessionDirs()).toHaveLength(dirs + 1);
  });
});

describe('NXC_HOP claimed by a person', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('coder', { mode: 'reply' });
  });
  afterAll(() => ws.cleanup());

  it('a person claiming NXC_HOP=32 is refused with DEPTH_EXCEEDED, exit 2, and nothing is written or started', async () => {
    const before = await ws.status(true);
    const r = await ws.nxc(['send', 'coder', '--subject', 'too deep', '--json', 'hello'], { env: { NXC_HOP: '32' } });
    expect(r.code).toBe(2);
    expect(r.json).toMatchObject({ ok: false, error: { code: 'DEPTH_EXCEEDED', details: { caller_depth: 32, cap: 32 } } });
    const plain = await ws.nxc(['send', 'coder', '--subject', 'too deep', 'hello'], { env: { NXC_HOP: '40' } });
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain('DEPTH_EXCEEDED');
    expect(ws.sessionDirs()).toEqual([]);
    expect(ws.agentLog()).toEqual([]);
    expect((await ws.status(true)).operations).toEqual(before.operations);
  });

  it('a person claiming NXC_HOP=31 commissions a session at depth 32', async () => {
    const r = await ws.nxc(['send', 'coder', '--subject', 'at the cap', '--json', 'hello'], { env: { NXC_HOP: '31' } });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json.woke).toMatchObject({ depth: 32 });
    await ws.waitIdle();
    expect(ws.sessionDirs()).toHaveLength(1);
    expect(starts(ws)).toMatchObject([{ hop: '32' }]);
    const op = operationOf(await ws.status(true), r.json.operation);
    expect(op).toMatchObject({ finished: true, threads: [{ state: 'answered', awaiting_human: true, session: { depth: 32 } }] });
  });

  it.each(['-1', 'abc', '1.5', '2e1', ' 3'])('a malformed NXC_HOP (%j) is refused with BAD_ENVIRONMENT and exit 2', async (hop) => {
    const dirs = ws.sessionDirs().length;
    const r = await ws.nxc(['send', 'coder', '--subject', 'bad', '--json', 'hello'], { env: { NXC_HOP: hop } });
    expect(r.code).toBe(2);
    expect(r.json).toMatchObject({ ok: false, error: { code: 'BAD_ENVIRONMENT' } });
    expect(ws.sessionDirs()).toHaveLength(dirs);
  });
});
