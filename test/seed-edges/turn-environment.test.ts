// Every path that starts a turn on somebody else's behalf starts it with the environment recorded for its session
// when its sender opened the operation, never the caller's: a queue promoted by a tick or by another person's
// send, a wake by another person's answer, the next step of a round. Each caller here runs with a poisoned
// environment (PROBE_CALLER, and PROBE_SENDER set to its own name); the turn must carry exactly its sender's.
// In process: real git and store, scripted sessions, the clock moved.
import { afterEach, describe, expect, it } from 'vitest';
import type { TestWorkspace } from '../helpers/workspace.js';
import { declareChannel } from '../channels/scenario.js';
import { exclusive, gate, leaseWorkspace, MIN, pidOf, reply, send, shared, starts, until } from '../leases/engine-kit.js';

let ws: TestWorkspace;
afterEach(async () => {
  await ws?.cleanup();
});

/** The environment of a person `who` at a terminal: their name, and their own mark. */
const as = (who: string): Record<string, string> => ({ NXC_ACTOR: who, PROBE_SENDER: who });
/** A caller's environment that must never reach a turn it starts for somebody else. */
const poisoned = (who: string): Record<string, string> => ({ NXC_ACTOR: who, PROBE_SENDER: who, PROBE_CALLER: `${who} was here` });

async function tickAs(env: Record<string, string>): Promise<void> {
  const r = await ws.nxc(['tick', '--json'], { env });
  expect(r.code, r.stdout + r.stderr).toBe(0);
}

describe('a turn started on somebody else\'s behalf runs with its sender\'s environment', () => {
  it('a queued commission promoted by a tick', async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'holder', 'escalate');
    exclusive(ws, 'waiter', 'reply');
    await send(ws, 'holder', 'please', as('alice'));
    await ws.waitIdle();
    expect((await send(ws, 'waiter', 'please', as('bob'))).queued).toBeDefined();
    ws.advance(31 * MIN);
    await tickAs(poisoned('ticker'));
    await ws.waitIdle();
    expect(starts(ws, 'holder').map((e) => e.probe)).toEqual([{ PROBE_SENDER: 'alice' }]);
    expect(starts(ws, 'waiter').map((e) => e.probe)).toEqual([{ PROBE_SENDER: 'bob' }]);
  });

  it("a queued commission promoted by another person's send, which takes the copy from a dead holder", async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'holder', 'gate:' + gate(ws, 'h') + '+reply');
    exclusive(ws, 'waiter', 'reply');
    exclusive(ws, 'third', 'reply');
    const a = await send(ws, 'holder', 'please', as('alice'));
    await until('the holder to run', () => starts(ws, 'holder').length === 1);
    expect((await send(ws, 'waiter', 'please', as('bob'))).queued).toBeDefined();
    ws.inproc!.crash(await pidOf(ws, a.woke.session));
    // Carol's send finds the holder dead and hands the copy to the waiter: she starts its turn.
    await send(ws, 'third', 'please', poisoned('carol'));
    await ws.waitIdle();
    expect(starts(ws, 'waiter').map((e) => e.probe)).toEqual([{ PROBE_SENDER: 'bob' }]);
    // Her own commission, started after it by the waiter's answer, has hers (and only what she sent it with).
    expect(starts(ws, 'third').map((e) => e.probe)).toEqual([{ PROBE_SENDER: 'carol', PROBE_CALLER: 'carol was here' }]);
  });

  it("a session woken by another person's answer, and the queue its reply then promotes", async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'holder', 'send:@carol|reply');
    exclusive(ws, 'waiter', 'reply');
    await send(ws, 'holder', 'please', as('alice'));
    await until('the holder to ask carol', () => ws.agentLog().some((e) => e.cmd === 'send' && e.role === `${ws.short}/holder`));
    await ws.waitIdle();
    expect((await send(ws, 'waiter', 'please', as('bob'))).queued).toBeDefined();
    const asked = ws.agentLog().find((e) => e.cmd === 'send' && e.role === `${ws.short}/holder`)!.out.thread;
    await reply(ws, asked, 'here is the answer', poisoned('carol'));
    await ws.waitIdle();
    expect(starts(ws, 'holder').map((e) => e.probe)).toEqual([{ PROBE_SENDER: 'alice' }, { PROBE_SENDER: 'alice' }]);
    expect(starts(ws, 'waiter').map((e) => e.probe)).toEqual([{ PROBE_SENDER: 'bob' }]);
  });

  it('the steps of a round promoted by a tick, and its next step started by the first step\'s answer', async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'holder', 'escalate');
    shared(ws, 'coder', 'reply');
    shared(ws, 'reviewer', 'reply');
    declareChannel(ws, 'review', 'steps:\n  - role: coder\n  - role: reviewer\nworking_tree: exclusive\n');
    await send(ws, 'holder', 'please', as('alice'));
    await ws.waitIdle();
    await send(ws, '#review', 'change the build', as('bob'));
    expect(starts(ws, 'coder')).toEqual([]);
    ws.advance(31 * MIN);
    await tickAs(poisoned('ticker'));
    await ws.waitIdle();
    expect(starts(ws, 'coder').map((e) => e.probe)).toEqual([{ PROBE_SENDER: 'bob' }]);
    expect(starts(ws, 'reviewer').map((e) => e.probe)).toEqual([{ PROBE_SENDER: 'bob' }]);
  });
});
