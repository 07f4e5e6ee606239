// A session cannot write .nxs-personas/ or .nxs-channels/ on disk, but git's objects and refs are its to
// write: it can commit another declaration without touching the file. The lease's moves check branches out,
// so they must never be how such a commit reaches the disk.
import { lstat, mkdir, readFile, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fenceGrant, park, recover, restore } from '../../node-agent/capabilities/leases/index.js';
import type { ParkRecord } from '../../protocol/leases.js';
import { gitEnv, runTestGit } from '../helpers/git-env.js';
import { cleanupRepos, git, gitPicture, repoWith, write } from './repos.js';

afterEach(cleanupRepos);

const NOW = 1_700_000_000_000;
const PERSONA = '.nxs-personas/coder.yaml';
const DECLARED = 'model: m\nsystem_prompt: code\nnetwork: none\n';
const PLANTED = 'model: m\nsystem_prompt: code\nnetwork: all\n';

/** What a sandboxed session can do: commit a new declaration through an index of its own, the file on disk untouched. */
async function plantOn(dir: string, branch: string, text: string, path = PERSONA): Promise<string> {
  const env = { ...gitEnv(), GIT_INDEX_FILE: join(dir, '.git', 'plant.index') };
  const run = (args: string[], input?: string) => runTestGit(dir, args, { env, ...(input === undefined ? {} : { input }) }).then((out) => out.trim());
  const blob = await run(['hash-object', '-w', '--stdin'], text);
  await run(['read-tree', branch]);
  await run(['update-index', '--add', '--cacheinfo', `100644,${blob},${path}`]);
  const commit = await run(['commit-tree', await run(['write-tree']), '-p', branch, '-m', 'tidy up']);
  await run(['update-ref', `refs/heads/${branch}`, commit]);
  return commit;
}

async function persona(dir: string): Promise<string> {
  return readFile(join(dir, PERSONA), 'utf8');
}

/** A repository whose branch `feat` holds `work` uncommitted, parked as op1 onto main under token 1. */
async function parkedFeat(work: Record<string, string>): Promise<{ dir: string; record: ParkRecord }> {
  const dir = await repoWith({ [PERSONA]: DECLARED, 'a.txt': 'alpha\n' });
  await git(dir, 'checkout', '-q', '-b', 'feat');
  await fenceGrant(dir, 1);
  for (const [path, text] of Object.entries(work)) await write(dir, path, text);
  const parked = await park(dir, { operation: 'op1', base: 'main', token: 1, now: NOW });
  expect(parked.outcome).toBe('parked');
  return { dir, record: (parked as { record: ParkRecord }).record };
}

describe('the lease never checks out declarations a session committed', () => {
  it('a park whose base holds another declaration than the working copy is refused (passable), and nothing moves', async () => {
    const dir = await repoWith({ [PERSONA]: DECLARED, 'a.txt': 'alpha\n' });
    expect(await fenceGrant(dir, 1)).toEqual({ branch: 'main' });
    // The holder works on main, commits a planted declaration, and leaves work in the tree.
    const planted = await plantOn(dir, 'main', PLANTED);
    await write(dir, 'a.txt', 'alpha, edited\n');
    const r = await park(dir, { operation: 'op1', base: 'main', token: 1, now: NOW });
    expect(r.outcome).toBe('refused_passable');
    expect(r.outcome === 'refused_passable' ? r.what : '').toContain(PERSONA);
    // Nothing moved: the declaration on disk is the person's, the work is still in the tree, no park branch.
    expect(await persona(dir)).toBe(DECLARED);
    expect(await readFile(join(dir, 'a.txt'), 'utf8')).toBe('alpha, edited\n');
    expect((await git(dir, 'rev-parse', 'HEAD')).trim()).toBe(planted);
    expect(await git(dir, 'branch', '--list', 'nexus/park/*')).toBe('');
  });

  it('a restore whose branch now holds another declaration is not applied, and the working copy keeps its own', async () => {
    const { dir, record } = await parkedFeat({ 'a.txt': 'work in progress\n' });
    // While it is parked, a session holding the copy commits a planted declaration onto the parked branch.
    await plantOn(dir, 'feat', PLANTED);
    await fenceGrant(dir, 2);
    const back = await restore(dir, { operation: 'op1', token: 2, record });
    expect(back.applied).toBe(false);
    expect(back.notice).toContain(PERSONA);
    expect(await persona(dir)).toBe(DECLARED);
    expect(await gitPicture(dir)).toEqual({ status: '', staged: '', branch: 'main' });
    // The work is not lost: it stays on its park branch.
    expect(await git(dir, 'show', `${record.park_branch}:a.txt`)).toBe('work in progress\n');
  });

  it('a planted new persona is refused as well, and one nobody committed is parked with the work and comes back', async () => {
    // A person's declaration, not committed yet: parked away with the work, as every untracked file is.
    const { dir, record } = await parkedFeat({ '.nxs-channels/review.yaml': 'steps: []\n' });
    await fenceGrant(dir, 2);
    expect((await restore(dir, { operation: 'op1', token: 2, record })).applied).toBe(true);
    expect(await readFile(join(dir, '.nxs-channels/review.yaml'), 'utf8')).toBe('steps: []\n');
    // A role nobody declared, committed onto the base without a file on disk.
    await plantOn(dir, 'main', PLANTED, '.nxs-personas/root.yaml');
    await fenceGrant(dir, 3);
    const again = await park(dir, { operation: 'op2', base: 'main', token: 3, now: NOW });
    expect(again).toMatchObject({ outcome: 'refused_passable', what: expect.stringContaining('.nxs-personas/root.yaml') });
    await expect(readFile(join(dir, '.nxs-personas/root.yaml'), 'utf8')).rejects.toThrow();
  });

  it('declarations that are the same on both sides move as before', async () => {
    const { dir, record } = await parkedFeat({ 'a.txt': 'work in progress\n' });
    await fenceGrant(dir, 2);
    const back = await restore(dir, { operation: 'op1', token: 2, record });
    expect(back.applied).toBe(true);
    expect(await readFile(join(dir, 'a.txt'), 'utf8')).toBe('work in progress\n');
    expect(await persona(dir)).toBe(DECLARED);
  });
});

describe('the journal of an interrupted move', () => {
  it('is kept where sessions cannot write: a journal planted in .git is not finished by recover', async () => {
    const dir = await repoWith({ [PERSONA]: DECLARED, 'a.txt': 'alpha\n' });
    const nxs = join(dir, '.nxs');
    await mkdir(nxs, { mode: 0o700 });
    await writeFile(join(nxs, '.gitignore'), '*\n');
    await git(dir, 'branch', 'evil');
    const evil = await plantOn(dir, 'evil', PLANTED);
    await fenceGrant(dir, 1);
    // What a session can write: a restore "interrupted" onto its own branch, under the token the ref holds.
    const main = (await git(dir, 'rev-parse', 'main')).trim();
    const fake = { kind: 'restore', operation: 'x', token: 1, step: 'moving', branch: 'evil', head: evil, base: 'main', base_commit: main, work: null, index: null, previous: null };
    await writeFile(join(dir, '.git', 'nexus-lease-journal.json'), JSON.stringify(fake));
    expect(await recover(dir, { journalDir: nxs })).toBeNull();
    expect(await persona(dir)).toBe(DECLARED);
    expect(await gitPicture(dir)).toEqual({ status: '', staged: '', branch: 'main' });
  });

  it('in the folder given, finishes a park a crash interrupted', async () => {
    const dir = await repoWith({ [PERSONA]: DECLARED, 'a.txt': 'alpha\n' });
    const nxs = join(dir, '.nxs');
    await mkdir(nxs, { mode: 0o700 });
    await writeFile(join(nxs, '.gitignore'), '*\n');
    await git(dir, 'checkout', '-q', '-b', 'feat');
    await fenceGrant(dir, 1);
    await write(dir, 'a.txt', 'work in progress\n');
    const crash = new Error('crash');
    const stop = (point: string) => {
      if (point === 'park:moving') throw crash;
    };
    await expect(park(dir, { operation: 'op1', base: 'main', token: 1, now: NOW }, { journalDir: nxs, fault: stop })).rejects.toBe(crash);
    expect(JSON.parse(await readFile(join(nxs, 'lease-journal.json'), 'utf8'))).toMatchObject({ kind: 'park', step: 'moving' });
    await expect(readFile(join(dir, '.git', 'nexus-lease-journal.json'))).rejects.toThrow();
    expect(await recover(dir, { journalDir: nxs })).toMatchObject({ kind: 'park', operation: 'op1' });
    expect(await gitPicture(dir)).toEqual({ status: '', staged: '', branch: 'main' });
    expect(await git(dir, 'show', 'nexus/park/op1:a.txt')).toBe('work in progress\n');
    await expect(readFile(join(nxs, 'lease-journal.json'))).rejects.toThrow();
  });
});

describe('the files a move writes for itself', () => {
  async function workspaceRepo(): Promise<{ dir: string; nxs: string }> {
    const dir = await repoWith({ [PERSONA]: DECLARED, 'a.txt': 'alpha\n', 'b.txt': 'beta\n' });
    const nxs = join(dir, '.nxs');
    await mkdir(nxs, { mode: 0o700 });
    await writeFile(join(nxs, '.gitignore'), '*\n');
    await git(dir, 'checkout', '-q', '-b', 'feat');
    return { dir, nxs };
  }

  it('a .git/index that is a link is not copied: what is parked as staged is HEAD', async () => {
    const { dir, nxs } = await workspaceRepo();
    await write(dir, 'b.txt', 'beta, staged\n');
    await git(dir, 'add', 'b.txt');
    // The real index, moved out and linked back: git follows the link, the lease must not.
    const outside = join(nxs, 'elsewhere.index');
    await rename(join(dir, '.git', 'index'), outside);
    await symlink(outside, join(dir, '.git', 'index'));
    await fenceGrant(dir, 1);
    const parked = await park(dir, { operation: 'op1', base: 'main', token: 1, now: NOW }, { journalDir: nxs });
    expect(parked.outcome).toBe('parked');
    const record = (parked as { record: ParkRecord }).record;
    const staged = (await git(dir, 'rev-parse', `${record.work}^2^{tree}`)).trim();
    expect(staged).toBe((await git(dir, 'rev-parse', `${record.head}^{tree}`)).trim());
    // The work itself is all there.
    expect(await git(dir, 'show', `${record.work}:b.txt`)).toBe('beta, staged\n');
  });

  it('writes its private index files in the folder given, never in .git where a session could plant a link', async () => {
    const { dir, nxs } = await workspaceRepo();
    const victim = join(nxs, 'victim.txt');
    await writeFile(victim, 'untouched\n');
    await symlink(victim, join(dir, '.git', 'nexus-lease-park.index'));
    await symlink(victim, join(dir, '.git', 'nexus-lease-restore.index'));
    await write(dir, 'a.txt', 'work in progress\n');
    await fenceGrant(dir, 1);
    const parked = await park(dir, { operation: 'op1', base: 'main', token: 1, now: NOW }, { journalDir: nxs });
    expect(parked.outcome).toBe('parked');
    await fenceGrant(dir, 2);
    const back = await restore(dir, { operation: 'op1', token: 2, record: (parked as { record: ParkRecord }).record }, { journalDir: nxs });
    expect(back.applied).toBe(true);
    expect(await readFile(join(dir, 'a.txt'), 'utf8')).toBe('work in progress\n');
    // Nothing of the move's went near the planted links: they are still there, and so is what they point at.
    expect((await lstat(join(dir, '.git', 'nexus-lease-park.index'))).isSymbolicLink()).toBe(true);
    expect((await lstat(join(dir, '.git', 'nexus-lease-restore.index'))).isSymbolicLink()).toBe(true);
    expect(await readFile(victim, 'utf8')).toBe('untouched\n');
  });
});
