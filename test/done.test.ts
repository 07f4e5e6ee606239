// `nxc done`: the person who opened an operation says they have read its result. One op, synced like any
// other and taken only from the workspace that opened the operation; after it the root awaits nobody, on
// either side, and nothing was posted or woken. The default `nxc status` counts what still awaits a person.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliver, exchange } from './helpers/deliver.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

const ALICE = { NXC_ACTOR: 'alice' };
const EXTERNAL = 'addressable: { external: true }';

/** The row of `thread` in `w`'s `nxc status --all --json`. */
async function row(w: TestWorkspace, thread: string): Promise<any> {
  const s = await w.status(true);
  for (const op of s.operations) for (const r of op.threads) if (r.thread === thread) return r;
  return undefined;
}

describe('nxc done in one workspace', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace({ git: false });
  });
  afterAll(async () => {
    await ws?.cleanup();
  });

  it('a finished operation awaiting its opener is counted in the default listing, marked read by nxc done, and still listed with --all', async () => {
    const sent = await ws.nxc(['send', '@bob', '--subject', 'review', '--json', 'please review'], { env: ALICE });
    expect(sent.code, sent.stderr).toBe(0);
    const thread = sent.json.thread as string;
    expect((await ws.nxc(['reply', '--thread', thread, '--json', 'looks good'], { env: { NXC_ACTOR: 'bob' } })).code).toBe(0);

    // The default listing leaves finished operations out, and says one waits on alice instead of "no open operations".
    const waiting = await ws.nxc(['status'], { env: ALICE });
    expect(waiting.stdout.split('\n').slice(0, 2)).toEqual(['no open operations', '1 finished operation awaits you: nxc status --all']);
    const asBob = await ws.nxc(['status'], { env: { NXC_ACTOR: 'bob' } });
    expect(asBob.stdout).toContain('1 finished operation awaits alice: nxc status --all');
    const json = await ws.status(false);
    expect(json.operations).toEqual([]);
    expect(json.finished_awaiting).toEqual([{ operation: thread, subject: 'review', opener: 'alice' }]);
    expect(await row(ws, thread)).toMatchObject({ awaiting_human: true, done: false });

    // Only alice, who opened it, may say she read it; a session never may.
    const bob = await ws.nxc(['done', thread, '--json'], { env: { NXC_ACTOR: 'bob' } });
    expect([bob.code, bob.json.error.code]).toEqual([2, 'DONE_NOT_OPENER']);

    const done = await ws.nxc(['done', thread, '--json'], { env: ALICE });
    expect(done.code, done.stderr).toBe(0);
    expect(done.json).toMatchObject({ operation: thread, thread, subject: 'review', answered_by: 'bob' });
    expect(done.json.op).toMatch(/^[0-9A-Z]{26}$/);
    // Nothing was posted: the thread holds its two messages, and the op is the one kind nxc done writes.
    const r = await row(ws, thread);
    expect(r).toMatchObject({ awaiting_human: false, awaiting_workspace: null, done: true, messages: 2, state: 'answered' });
    expect((await ws.status(false)).finished_awaiting).toEqual([]);
    const after = await ws.nxc(['status'], { env: ALICE });
    expect(after.stdout.split('\n')[0]).toBe('no open operations (nxc status --all shows finished ones)');
    expect(after.stdout).not.toContain('await');
    const all = await ws.nxc(['status', '--all'], { env: ALICE });
    expect(all.stdout).toContain(`${thread}  alice -> bob  answered by bob · read (nxc done)`);

    // Again: nothing more is written.
    const again = await ws.nxc(['done', thread], { env: ALICE });
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(`operation ${thread} "review" (answered by bob) was already marked read: nothing written\n`);

    // A newer answer awaits her again.
    expect((await ws.nxc(['reply', '--thread', thread, 'one more thing'], { env: ALICE })).code).toBe(0);
    expect((await ws.nxc(['reply', '--thread', thread, 'and the tests pass'], { env: { NXC_ACTOR: 'bob' } })).code).toBe(0);
    expect(await row(ws, thread)).toMatchObject({ awaiting_human: true, done: false });
    expect((await ws.nxc(['status'], { env: ALICE })).stdout).toContain('1 finished operation awaits you');
  });

  it('refuses a thread with no answer yet, and an unknown one', async () => {
    const sent = await ws.nxc(['send', '@carol', '--subject', 'later', '--json', 'when you can'], { env: ALICE });
    const open = await ws.nxc(['done', sent.json.thread, '--json'], { env: ALICE });
    expect([open.code, open.json.error.code]).toEqual([2, 'DONE_NOT_ANSWERED']);
    const unknown = await ws.nxc(['done', 't-01ARZ3NDEKTSV4RRFFQ69G5FAV', '--json'], { env: ALICE });
    expect([unknown.code, unknown.json.error.code]).toEqual([2, 'UNKNOWN_THREAD']);
  });
});

describe('nxc done across two workspaces', () => {
  let a: TestWorkspace;
  let b: TestWorkspace;

  beforeAll(async () => {
    [a, b] = await Promise.all([makeWorkspace({ git: false }), makeWorkspace({ git: false })]);
    const t = await b.nxs(['sync', 'trust', 'add', '--workspace', a.id, '--key', `${a.root}/.nxs/keys/workspace.pub.jwk`, '--json']);
    expect(t.code, t.stdout + t.stderr).toBe(0);
    b.persona('coder', { mode: 'reply', extra: EXTERNAL });
  });
  afterAll(async () => {
    await Promise.all([a, b].map((w) => w?.cleanup()));
  });

  const settle = () => exchange(a, b, 3);

  it('a follow-up to a persona of another workspace is reported as sent there, not as a skipped step (exit 0)', async () => {
    const sent = await a.nxc(['send', `${b.id}/coder`, '--subject', 'review', '--json', 'please review'], { env: ALICE });
    expect(sent.code, sent.stderr).toBe(0);
    await settle();
    expect(await row(a, sent.json.thread)).toMatchObject({ state: 'answered', awaiting_human: true });
    const thanks = await a.nxc(['reply', '--thread', sent.json.thread, '--json', 'thanks'], { env: ALICE });
    expect(thanks.code, thanks.stdout + thanks.stderr).toBe(0);
    expect(thanks.json.warnings).toEqual([]);
    expect(thanks.json.remote).toEqual({ workspace: b.id, role: 'coder' });
    const text = await a.nxc(['reply', '--thread', sent.json.thread, 'thanks again'], { env: ALICE });
    expect(text.code).toBe(0);
    expect(text.stdout).not.toContain('step_skipped');
    await settle();
  });

  it('marked read on the side that opened it, the root awaits nobody on either side; the other side cannot mark it', async () => {
    const sent = await a.nxc(['send', `${b.id}/coder`, '--subject', 'audit', '--json', 'audit the parser'], { env: ALICE });
    expect(sent.code, sent.stderr).toBe(0);
    const thread = sent.json.thread as string;
    await settle();
    expect(await row(a, thread)).toMatchObject({ awaiting_human: true, awaiting_workspace: a.id, done: false });
    expect(await row(b, thread)).toMatchObject({ awaiting_human: true, awaiting_workspace: a.id, done: false });

    // B holds the operation too, but its people did not open it.
    const fromB = await b.nxc(['done', thread, '--json'], { env: ALICE });
    expect([fromB.code, fromB.json.error.code]).toEqual([2, 'DONE_NOT_OPENER']);
    expect(fromB.json.error.details).toEqual({ opener: `alice@${a.short}`, opened_in: a.id });

    const done = await a.nxc(['done', thread, '--json'], { env: ALICE });
    expect(done.code, done.stdout + done.stderr).toBe(0);
    expect(await row(a, thread)).toMatchObject({ awaiting_human: false, done: true });
    // Synced like any other op: B folds it, and its coder is not started again.
    const starts = () => b.agentLog().filter((e) => e.cmd === 'start').length;
    const before = starts();
    await settle();
    expect(await row(b, thread)).toMatchObject({ awaiting_human: false, awaiting_workspace: null, done: true, session: { turn: 1 } });
    expect(starts()).toBe(before);
  });
});
