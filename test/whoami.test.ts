// `nxc whoami`: who a workspace takes the caller for, through the same command path as every verb.
import { afterEach, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

let ws: TestWorkspace | undefined;
afterEach(async () => {
  await ws?.cleanup();
  ws = undefined;
});

describe('nxc whoami', () => {
  it('names a person at depth 0, a claimed hop raising it, and a session at its anchored depth', async () => {
    ws = await makeWorkspace({ git: false });
    const person = await ws.nxc(['whoami', '--json'], { env: { NXC_ACTOR: 'carol' } });
    expect(person.code, person.stdout + person.stderr).toBe(0);
    expect(person.json).toEqual({ workspace: ws.id, handle: 'carol', session: null, operation: null, depth: 0, reply_only: false });
    const hop = await ws.nxc(['whoami', '--json'], { env: { NXC_ACTOR: 'carol', NXC_HOP: '3' } });
    expect(hop.json).toMatchObject({ handle: 'carol', depth: 3 });
    const text = await ws.nxc(['whoami'], { env: { NXC_ACTOR: 'carol' } });
    expect(text.stdout).toBe(`carol, a person · depth 0 · workspace ${ws.id}\n`);

    ws.persona('coder', { mode: 'hang' });
    const sent = await ws.nxc(['send', 'coder', '--subject', 's', '--json', 'work']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    const session = sent.json.woke.session as string;
    // A lower hop than the session's anchored depth is only a claim: it never lowers it.
    const inside = await ws.nxc(['whoami', '--json'], { env: { NXC_SESSION: session, NXC_HOP: '0' } });
    expect(inside.json).toEqual({ workspace: ws.id, handle: `${ws.short}/coder`, session, operation: sent.json.operation, depth: 1, reply_only: false });
    const unknown = await ws.nxc(['whoami', '--json'], { env: { NXC_SESSION: 's-01ARZ3NDEKTSV4RRFFQ69G5FAV' } });
    expect(unknown.code).toBe(2);
    expect(unknown.json.error.code).toBe('UNKNOWN_SESSION');
  });
});
