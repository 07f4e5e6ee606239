// The core scenarios under contention: real commands (child processes, no node, so every command takes the
// store lock itself) send, reply and escalate, several at once, and a 32-deep chain unwinds. Nothing may be
// lost and nothing may be STORE_BUSY. `npm test` runs them on the machine as it is; `npm run test:load` runs
// this file and the longer core files with four CPU-burning processes beside them (test/helpers/cpu-burn.ts).
// The burners live there and not here: inside the suite they slowed every file that ran beside this one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';

describe('several real commands at once', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace({ real: true });
    ws.persona('coder', { mode: 'reply' });
    ws.persona('boss', { mode: 'escalate' });
  });
  afterAll(() => ws.cleanup());

  it('sends, replies and escalations run at once through real commands, each answered once, none refused as STORE_BUSY', async () => {
    const [a, b, c] = await Promise.all([
      ws.nxc(['send', 'coder', '--subject', 'one', '--json', 'first']),
      ws.nxc(['send', 'boss', '--subject', 'two', '--json', 'second']),
      ws.nxc(['send', '@bob', '--subject', 'three', '--json', 'third']),
    ]);
    for (const r of [a, b, c]) expect(r.code, r.stdout + r.stderr).toBe(0);
    // Readers and a person's reply meanwhile, all taking the store lock in turn.
    const [reply, status] = await Promise.all([
      ws.nxc(['reply', '--thread', c.json.thread, '--json', 'answered by bob'], { env: { NXC_ACTOR: 'bob' } }),
      ws.nxc(['status', '--all', '--json']),
    ]);
    expect(reply.code, reply.stdout + reply.stderr).toBe(0);
    expect(status.code, status.stdout + status.stderr).toBe(0);
    await ws.waitIdle(300_000);
    const rows = new Map<string, any>();
    for (const op of (await ws.status(true)).operations) for (const t of op.threads) rows.set(t.thread, t);
    expect(rows.get(a.json.thread)).toMatchObject({ state: 'answered', escalated: false, substituted: false });
    expect(rows.get(b.json.thread)).toMatchObject({ state: 'answered', escalated: true, substituted: false });
    expect(rows.get(c.json.thread)).toMatchObject({ state: 'answered', answered_by: 'bob' });
    // Each session replied exactly once, and every command it ran succeeded.
    const replies = ws.agentLog().filter((e) => e.cmd === 'reply');
    expect(replies.map((e) => e.code)).toEqual([0, 0]);
    expect(JSON.stringify(ws.agentLog())).not.toContain('STORE_BUSY');
  });
});

describe('a 32-deep chain through real commands', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('looper', { mode: 'chain', arg: 'looper' });
  });
  afterAll(() => ws.cleanup());

  it('stops at the cap and unwinds to an answered root, with no reply lost', async () => {
    const sent = await ws.nxc(['send', 'looper', '--subject', 'deep', '--json', 'go as deep as you can']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    await ws.waitIdle(600_000);
    const op = (await ws.status(true)).operations.find((o: any) => o.operation === sent.json.operation);
    expect(op.threads).toHaveLength(32);
    for (const t of op.threads) expect(t, JSON.stringify(t)).toMatchObject({ state: 'answered' });
    const replies = ws.agentLog().filter((e) => e.cmd === 'reply');
    expect(replies).toHaveLength(32);
    expect(replies.every((e) => e.code === 0)).toBe(true);
  });
});
