// The working-copy lease through the engine: the contention park of an unanswered hand-back, refusals that can
// and cannot pass, the PARK REFUSED mark, and fencing (L7, L9, L10). Real git repositories; the clock is moved,
// never waited for.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { TestWorkspace } from '../helpers/workspace.js';
import { branch, exclusive, exists, HOUR, leaseOf, leaveWork, leaseWorkspace, MIN, porcelain, send, show, starts, tick } from './engine-kit.js';
import { git, gitCode } from './repos.js';

let ws: TestWorkspace;
afterEach(async () => {
  await ws?.cleanup();
});

/** Operation A's coder hands back and leaves work in the tree; returns A's receipt. */
async function escalatedWithWork(work = true): Promise<any> {
  exclusive(ws, 'coder', 'escalate');
  exclusive(ws, 'rival', 'reply');
  const a = await send(ws, 'coder');
  await ws.waitIdle();
  if (work) leaveWork(ws, 'A');
  return a;
}

/** A merge stopped on a conflict in tracked.txt: MERGE_HEAD exists and the index is conflicted. */
async function midMerge(): Promise<void> {
  await git(ws.root, 'checkout', '-q', '-b', 'other');
  writeFileSync(join(ws.root, 'tracked.txt'), 'their version\n');
  await git(ws.root, 'commit', '-q', '-am', 'theirs');
  await git(ws.root, 'checkout', '-q', 'main');
  writeFileSync(join(ws.root, 'tracked.txt'), 'our version\n');
  await git(ws.root, 'commit', '-q', '-am', 'ours');
  expect(await gitCode(ws.root, 'merge', '-q', 'other')).not.toBe(0);
  expect(existsSync(join(ws.root, '.git', 'MERGE_HEAD'))).toBe(true);
}

describe('the contention park (L7)', () => {
  it('L7 with nobody waiting an unanswered escalation is never measured or parked', async () => {
    ws = await leaseWorkspace();
    const a = await escalatedWithWork();
    ws.advance(5 * HOUR);
    const t = await tick(ws);
    expect(t.warnings).toEqual([]);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'holds', contention_deadline: null, parked: null });
    expect(readFileSync(join(ws.root, 'tracked.txt'), 'utf8')).toBe('changed by A\n');
  });

  it('L7 the thirty minutes start at contention; then the work goes onto a park branch, the checkout back to its base, ignored files stay, and the waiting operation starts', async () => {
    ws = await leaseWorkspace();
    const a = await escalatedWithWork();
    ws.advance(2 * HOUR);
    await tick(ws);
    const b = await send(ws, 'rival');
    expect(b.queued).toBeDefined();
    const held = await leaseOf(ws, a.operation);
    const deadline = Date.parse(held.contention_deadline);
    expect(deadline - ws.clock.now().getTime()).toBeGreaterThan(29 * MIN);
    expect(deadline - ws.clock.now().getTime()).toBeLessThanOrEqual(30 * MIN);
    ws.advance(29 * MIN);
    await tick(ws);
    expect(starts(ws, 'rival')).toEqual([]);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'holds' });
    ws.advance(MIN);
    await tick(ws);
    await ws.waitIdle();
    const park = `nexus/park/${a.operation}`;
    expect(await show(ws, park, 'tracked.txt')).toBe('changed by A\n');
    expect(await show(ws, park, 'new-A.txt')).toBe('untracked, of A\n');
    expect(await show(ws, park, 'gone.txt')).toBeNull();
    expect(await show(ws, park, 'debug.log')).toBeNull();
    // The tree is back on the base, clean but for the ignored file, which stays where it was.
    expect(await branch(ws)).toBe('main');
    expect(readFileSync(join(ws.root, 'tracked.txt'), 'utf8')).toBe('first version\n');
    expect(exists(ws, 'gone.txt')).toBe(true);
    expect(exists(ws, 'new-A.txt')).toBe(false);
    expect(readFileSync(join(ws.root, 'debug.log'), 'utf8')).toBe('ignored, of A\n');
    expect(await porcelain(ws)).toBe('');
    expect(starts(ws, 'rival')).toHaveLength(1);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'parked', parked: { branch: park, from_branch: 'main', work: true } });
    const human = await ws.nxc(['status', '--all']);
    expect(human.stdout).toMatch(new RegExp(`working copy: parked on ${park} at [0-9a-f]{12}`));
  });
});

describe('refusals (L9, L10)', () => {
  it('L9 a tree mid-merge is never parked: the copy stays, the tick warns work_not_parked naming what to finish, status says PARK REFUSED, and every tick tries again', async () => {
    ws = await leaseWorkspace();
    const a = await escalatedWithWork(false);
    await midMerge();
    await send(ws, 'rival');
    ws.advance(30 * MIN);
    const first = await tick(ws);
    expect(first.warnings).toEqual([
      expect.objectContaining({ class: 'work_not_parked', reason: 'contention', thread: a.operation, message: expect.stringContaining('a merge is in progress') }),
    ]);
    const lease = await leaseOf(ws, a.operation);
    expect(lease).toMatchObject({ state: 'holds', park_refused: expect.stringContaining('git merge --abort') });
    expect((await ws.nxc(['status'])).stdout).toContain('PARK REFUSED: a merge is in progress');
    expect(starts(ws, 'rival')).toEqual([]);
    ws.advance(MIN);
    expect((await tick(ws)).warnings.map((w: any) => w.class)).toEqual(['work_not_parked']);
    await git(ws.root, 'merge', '--abort');
    ws.advance(MIN);
    expect((await tick(ws)).warnings).toEqual([]);
    await ws.waitIdle();
    expect(starts(ws, 'rival')).toHaveLength(1);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'parked', park_refused: null });
  });

  it('L9 a refusal that cannot pass (no base branch was ever recorded: HEAD was detached) hands the copy on unparked: work_handed_on_unparked', async () => {
    ws = await leaseWorkspace();
    await git(ws.root, 'checkout', '-q', '--detach');
    const a = await escalatedWithWork();
    await send(ws, 'rival');
    ws.advance(30 * MIN);
    const t = await tick(ws);
    expect(t.warnings).toEqual([
      expect.objectContaining({ class: 'work_handed_on_unparked', thread: a.operation, message: expect.stringContaining('no base branch was recorded') }),
    ]);
    await ws.waitIdle();
    expect(starts(ws, 'rival')).toHaveLength(1);
    // Nothing was moved: the work is in the tree, now in the next holder's hands.
    expect(readFileSync(join(ws.root, 'tracked.txt'), 'utf8')).toBe('changed by A\n');
    expect(exists(ws, 'new-A.txt')).toBe(true);
    expect(await leaseOf(ws, a.operation)).toBeNull();
  });

  it('L10 PARK REFUSED lasts only while somebody waits: withdrawing the waiting operation clears it on the next tick, the tree still mid-merge', async () => {
    ws = await leaseWorkspace();
    const a = await escalatedWithWork(false);
    await midMerge();
    const b = await send(ws, 'rival');
    ws.advance(30 * MIN);
    await tick(ws);
    expect((await leaseOf(ws, a.operation)).park_refused).not.toBeNull();
    const w = await ws.nxc(['withdraw', '--thread', b.thread, '--json']);
    expect(w.code, w.stdout + w.stderr).toBe(0);
    expect(w.json).toMatchObject({ withdrawn: true, operation: b.operation, discharged: [b.thread], stopping: [] });
    ws.advance(MIN);
    expect((await tick(ws)).warnings).toEqual([]);
    expect(await leaseOf(ws, a.operation)).toMatchObject({ state: 'holds', park_refused: null });
    expect((await leaseOf(ws, a.operation)).text).not.toContain('PARK REFUSED');
    expect(existsSync(join(ws.root, '.git', 'MERGE_HEAD'))).toBe(true);
    expect(await leaseOf(ws, b.operation)).toBeNull();
  });
});

describe('fencing', () => {
  it('fencing: every grant raises the token ref, tokens only grow, and each session gets its grant’s token as NXC_LEASE_TOKEN', async () => {
    ws = await leaseWorkspace();
    exclusive(ws, 'coder', 'reply');
    for (let i = 0; i < 3; i++) {
      await send(ws, 'coder');
      await ws.waitIdle();
    }
    expect(starts(ws, 'coder').map((e) => e.lease_token)).toEqual(['1', '2', '3']);
    expect(await git(ws.root, 'cat-file', 'blob', 'refs/nexus/lease/token')).toBe('nexus-lease-token 3\n');
  });

  it('fencing: a token ref a session moved past every grant is set back and said so; the work parks and the waiting operation starts', async () => {
    ws = await leaseWorkspace();
    const a = await escalatedWithWork();
    await send(ws, 'rival');
    // Git's refs are the session's to write: one line of shell would fence every grant to come, holding the copy
    // with A for good. The store says A's grant is the latest, so nothing but a session or a person moved the ref.
    await fence99();
    ws.advance(30 * MIN);
    const t = await tick(ws);
    expect(t.warnings).toEqual([
      expect.objectContaining({ class: 'lease_token_reset', message: expect.stringMatching(/held token 99 .*set back to token 1, the latest grant/) }),
    ]);
    expect(await branch(ws)).toBe('main');
    expect(await show(ws, `nexus/park/${a.operation}`, 'tracked.txt')).toBe('changed by A\n');
    expect(exists(ws, 'new-A.txt')).toBe(false);
    expect(starts(ws, 'rival').map((e) => e.lease_token)).toEqual(['2']);
    expect(await git(ws.root, 'cat-file', 'blob', 'refs/nexus/lease/token')).toBe('nexus-lease-token 2\n');
  });
});

/** Raises the token ref to 99, as a session with a shell can. */
async function fence99(): Promise<void> {
  const oid = execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: ws.root, input: 'nexus-lease-token 99\n' }).toString().trim();
  await git(ws.root, 'update-ref', 'refs/nexus/lease/token', oid);
}
