// The mover on real git repositories: parking every kind of change, refusing what must be finished first,
// fencing, restoring with the fixed notice, and finishing or rolling back a move a crash interrupted.
import { execFileSync } from 'node:child_process';
import { closeSync, constants as fsConstants, openSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { fenceGrant, park, recover, restore, type FaultPoint } from '../../node-agent/capabilities/leases/index.js';
import { probe, readHeadFile } from '../../node-agent/capabilities/leases/repo.js';
import { isNexusError } from '../../protocol/errors.js';
import type { ParkRecord } from '../../protocol/leases.js';
import { cleanupRepos, git, gitCode, gitPicture, messUp, picture, repoWith, richRepo, tempDir, write } from './repos.js';

afterEach(cleanupRepos);

const NOW = 1_700_000_000_000;

async function parkOk(dir: string, token: number, operation = 'op1', base: string | null = 'main'): Promise<ParkRecord> {
  const r = await park(dir, { operation, base, token, now: NOW });
  if (r.outcome !== 'parked') throw new Error(`not parked: ${JSON.stringify(r)}`);
  return r.record;
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => 'resolved',
    (err: unknown) => (isNexusError(err) ? err.code : String(err)),
  );
}

describe('parking and restoring a working copy', () => {
  it('parks every kind of change onto its branch, goes back to the base, leaves ignored files, and restores it byte for byte', async () => {
    const dir = await richRepo();
    await messUp(dir);
    const before = await picture(dir);
    const gitBefore = await gitPicture(dir);
    expect(await fenceGrant(dir, 1)).toEqual({ branch: 'feat/x' });

    const rec = await parkOk(dir, 1);
    expect(rec).toMatchObject({ token: 1, branch: 'feat/x', base: 'main', park_branch: 'nexus/park/op1' });
    expect(rec.work).toMatch(/^[0-9a-f]{40}$/);
    expect((await git(dir, 'rev-parse', 'nexus/park/op1')).trim()).toBe(rec.work);
    // Back on the base with a clean tree; ignored files are still there, untouched.
    expect(await gitPicture(dir)).toEqual({ status: '', staged: '', branch: 'main' });
    const after = await picture(dir);
    expect(after['ignored.log']).toBe(before['ignored.log']);
    expect(after['build/out.o']).toBe(before['build/out.o']);
    expect(after['new dir/x.txt']).toBeUndefined();
    expect(await git(dir, 'stash', 'list')).toBe('');

    await fenceGrant(dir, 2);
    const back = await restore(dir, { operation: 'op1', token: 2, record: rec });
    expect(back.applied).toBe(true);
    expect(back.notice).toContain(`on branch nexus/park/op1 at commit ${rec.work}`);
    expect(back.notice).toContain('Branch feat/x has not moved since.');
    expect(back.notice).toContain('Its base main has not moved since.');
    expect(await picture(dir)).toEqual(before);
    expect(await gitPicture(dir)).toEqual(gitBefore);
  });

  it('parks a clean tree by going back to the base, and restores it onto its branch', async () => {
    const dir = await richRepo();
    await fenceGrant(dir, 1);
    const rec = await parkOk(dir, 1);
    expect(rec.work).toBeNull();
    expect((await gitPicture(dir)).branch).toBe('main');
    await fenceGrant(dir, 2);
    const back = await restore(dir, { operation: 'op1', token: 2, record: rec });
    expect(back).toMatchObject({ applied: true });
    expect(back.notice).toContain('Nothing was uncommitted');
    expect((await gitPicture(dir)).branch).toBe('feat/x');
  });

  it.each([
    ['merge', 'a merge is in progress', async (d: string) => { await conflictOn(d, 'other'); expect(await gitCode(d, 'merge', '-q', 'other')).not.toBe(0); }],
    ['rebase', 'a rebase is in progress', async (d: string) => { await conflictOn(d, 'other'); expect(await gitCode(d, 'rebase', '-q', 'other')).not.toBe(0); }],
    ['cherry-pick', 'a cherry-pick is in progress', async (d: string) => { await conflictOn(d, 'other'); expect(await gitCode(d, 'cherry-pick', 'other')).not.toBe(0); }],
    ['revert', 'a revert is in progress', async (d: string) => {
      await write(d, 'a.txt', 'changed once\n');
      await git(d, 'commit', '-q', '-am', 'once');
      await write(d, 'a.txt', 'changed twice\n');
      await git(d, 'commit', '-q', '-am', 'twice');
      expect(await gitCode(d, 'revert', '--no-edit', 'HEAD~1')).not.toBe(0);
    }],
    ['bisect', 'a bisect is in progress', async (d: string) => { await git(d, 'bisect', 'start'); }],
  ])('refuses to park mid-%s, names what to finish, and changes nothing', async (_name, words, setUp) => {
    const dir = await repoWith({ 'a.txt': 'alpha\n' });
    await setUp(dir);
    await write(dir, 'untracked.txt', 'work\n');
    const before = { files: await picture(dir), git: await gitPicture(dir) };
    await fenceGrant(dir, 1);
    const r = await park(dir, { operation: 'op1', base: 'main', token: 1, now: NOW });
    expect(r.outcome).toBe('refused_passable');
    expect(r.outcome === 'refused_passable' && r.what).toContain(words);
    expect({ files: await picture(dir), git: await gitPicture(dir) }).toEqual(before);
    expect(await gitCode(dir, 'rev-parse', '--verify', '-q', 'nexus/park/op1')).not.toBe(0);
  });

  it.each([
    ['no working copy is named', async () => null, 'names no working copy', 'main'],
    ['the folder is not a git repository', tempDir, 'not a git repository', 'main'],
    ['no base branch was recorded', () => repoWith({ 'a.txt': 'a\n' }), 'no base branch', null],
    ['HEAD is detached', async () => { const d = await repoWith({ 'a.txt': 'a\n' }); await git(d, 'checkout', '-q', '--detach'); return d; }, 'detached', 'main'],
    ['the repository has no commit', async () => { const d = await tempDir(); await git(d, 'init', '-q', '-b', 'main'); return d; }, 'no commit', 'main'],
  ])('hands on without parking when %s', async (_name, make, words, base) => {
    const dir = await make();
    if (dir !== null) await write(dir, 'left.txt', 'left behind\n');
    const before = dir === null ? null : await picture(dir);
    if (dir !== null) await fenceGrant(dir, 1);
    const r = await park(dir, { operation: 'op1', base, token: 1, now: NOW });
    expect(r.outcome).toBe('refused_unpassable');
    expect(r.outcome === 'refused_unpassable' && r.why).toContain(words);
    if (dir !== null) expect(await picture(dir)).toEqual(before);
  });

  it('a holder whose grant was superseded can never move the checkout', async () => {
    const dir = await richRepo();
    await messUp(dir);
    const before = await picture(dir);
    await fenceGrant(dir, 1);
    await fenceGrant(dir, 2);
    expect(await codeOf(park(dir, { operation: 'op1', base: 'main', token: 1, now: NOW }))).toBe('LEASE_FENCED');
    expect(await codeOf(fenceGrant(dir, 1))).toBe('LEASE_FENCED');
    expect(await picture(dir)).toEqual(before);
    const rec = await parkOk(dir, 2);
    await fenceGrant(dir, 3);
    expect(await codeOf(restore(dir, { operation: 'op1', token: 2, record: rec }))).toBe('LEASE_FENCED');
  });

  it('tells the restored session that its base moved on since, and puts the work back', async () => {
    const dir = await richRepo();
    await messUp(dir);
    const before = await picture(dir);
    await fenceGrant(dir, 1);
    const rec = await parkOk(dir, 1);
    await write(dir, 'main-only.txt', 'someone else\n');
    await git(dir, 'add', '-A');
    await git(dir, 'commit', '-q', '-m', 'meanwhile on main');
    const mainTip = (await git(dir, 'rev-parse', 'main')).trim();
    await fenceGrant(dir, 2);
    const back = await restore(dir, { operation: 'op1', token: 2, record: rec });
    expect(back.applied).toBe(true);
    expect(back.notice).toContain(`Its base main HAS MOVED ON since: it was at ${rec.base_commit}, it is now at ${mainTip}.`);
    expect(await picture(dir)).toEqual(before);
  });

  it('leaves the work on its park branch and says so when its own branch moved on', async () => {
    const dir = await richRepo();
    await messUp(dir);
    await fenceGrant(dir, 1);
    const rec = await parkOk(dir, 1);
    await git(dir, 'checkout', '-q', 'feat/x');
    await write(dir, 'feature.txt', 'moved on\n');
    await git(dir, 'commit', '-q', '-am', 'someone moved the branch');
    await git(dir, 'checkout', '-q', 'main');
    await fenceGrant(dir, 2);
    const back = await restore(dir, { operation: 'op1', token: 2, record: rec });
    expect(back.applied).toBe(false);
    expect(back.notice).toContain('Branch feat/x HAS MOVED ON since');
    expect(back.notice).toContain(`git cherry-pick --no-commit -m 1 ${rec.work}`);
    expect((await gitPicture(dir)).branch).toBe('feat/x');
    expect((await git(dir, 'rev-parse', 'nexus/park/op1')).trim()).toBe(rec.work);
  });

  it('a restore asked for again after it finished reports the work as back, and changes nothing', async () => {
    const dir = await richRepo();
    await messUp(dir);
    const before = await picture(dir);
    await fenceGrant(dir, 1);
    const rec = await parkOk(dir, 1);
    await fenceGrant(dir, 2);
    await restore(dir, { operation: 'op1', token: 2, record: rec });
    const again = await restore(dir, { operation: 'op1', token: 2, record: rec });
    expect(again.applied).toBe(true);
    expect(await picture(dir)).toEqual(before);
  });

  it('never restores over changes that are not the operation\u2019s', async () => {
    const dir = await richRepo();
    await messUp(dir);
    await fenceGrant(dir, 1);
    const rec = await parkOk(dir, 1);
    await write(dir, 'a.txt', 'the next holder left this\n');
    const before = await picture(dir);
    await fenceGrant(dir, 2);
    const back = await restore(dir, { operation: 'op1', token: 2, record: rec });
    expect(back.applied).toBe(false);
    expect(back.notice).toContain('not this operation');
    expect(await picture(dir)).toEqual(before);
  });
});

describe('a move a crash interrupted', () => {
  const parkPoints: FaultPoint[] = ['park:snapshot', 'park:journal', 'park:branch', 'park:moving', 'park:checkout', 'park:clean'];
  const restorePoints: FaultPoint[] = ['restore:journal', 'restore:checkout', 'restore:materialise', 'restore:index'];
  const crashAt = (point: FaultPoint) => ({
    fault: (p: FaultPoint) => {
      if (p === point) throw new Error(`crash at ${p}`);
    },
  });

  it.each(parkPoints)('a park stopped at %s is finished or rolled back by running it again, and nothing is lost', async (point) => {
    const dir = await richRepo();
    await messUp(dir);
    const before = await picture(dir);
    const gitBefore = await gitPicture(dir);
    const index = await readFile(join(dir, '.git', 'index'));
    await fenceGrant(dir, 1);
    await expect(park(dir, { operation: 'op1', base: 'main', token: 1, now: NOW }, crashAt(point))).rejects.toThrow(`crash at ${point}`);
    // Until the checkout, the work is committed through a private index: the user's index is not written.
    if (['park:snapshot', 'park:journal', 'park:branch', 'park:moving'].includes(point)) {
      expect(await readFile(join(dir, '.git', 'index'))).toEqual(index);
    }
    const rec = await parkOk(dir, 1);
    expect(await gitPicture(dir)).toMatchObject({ status: '', branch: 'main' });
    await stat(join(dir, '.git', 'nexus-lease-journal.json')).then(
      () => expect.fail('the journal is still there'),
      () => undefined,
    );
    await fenceGrant(dir, 2);
    expect((await restore(dir, { operation: 'op1', token: 2, record: rec })).applied).toBe(true);
    expect(await picture(dir)).toEqual(before);
    expect(await gitPicture(dir)).toEqual(gitBefore);
  });

  it.each(parkPoints)('recovery at start-up settles a park stopped at %s', async (point) => {
    const dir = await richRepo();
    await messUp(dir);
    const before = await picture(dir);
    await fenceGrant(dir, 1);
    await expect(park(dir, { operation: 'op1', base: 'main', token: 1, now: NOW }, crashAt(point))).rejects.toThrow();
    const j = await recover(dir);
    // A crash before the journal was written left nothing to settle: the tree was never touched.
    expect(j?.operation).toBe(point === 'park:snapshot' ? undefined : 'op1');
    const rolledBack = ['park:snapshot', 'park:journal', 'park:branch'].includes(point);
    if (rolledBack) {
      expect(await picture(dir)).toEqual(before);
      expect(await gitCode(dir, 'rev-parse', '--verify', '-q', 'nexus/park/op1')).not.toBe(0);
    } else {
      expect(await gitPicture(dir)).toMatchObject({ status: '', branch: 'main' });
      expect((await git(dir, 'rev-parse', 'nexus/park/op1')).trim()).toBe(j?.work);
    }
  });

  it.each(restorePoints)('a restore stopped at %s is finished by running it again, byte for byte', async (point) => {
    const dir = await richRepo();
    await messUp(dir);
    const before = await picture(dir);
    const gitBefore = await gitPicture(dir);
    await fenceGrant(dir, 1);
    const rec = await parkOk(dir, 1);
    await fenceGrant(dir, 2);
    await expect(restore(dir, { operation: 'op1', token: 2, record: rec }, crashAt(point))).rejects.toThrow(`crash at ${point}`);
    expect((await restore(dir, { operation: 'op1', token: 2, record: rec })).applied).toBe(true);
    expect(await picture(dir)).toEqual(before);
    expect(await gitPicture(dir)).toEqual(gitBefore);
  });
});

describe('a move git refuses before it touched anything', () => {
  // A git the session ran and killed leaves .git/index.lock behind: a checkout then fails before it writes a
  // file, after the journal already said the move was under way. The move is refused, and nothing is left to
  // "finish" later over the work that goes on in the tree meanwhile.
  const lock = (dir: string) => write(dir, '.git/index.lock', '');
  const unlock = (dir: string) => rm(join(dir, '.git', 'index.lock'));
  const journal = (dir: string) => stat(join(dir, '.git', 'nexus-lease-journal.json')).then(() => true, () => false);

  it('a park: refused with the lock named, no journal and no park branch; the work done after it is what the next park takes', async () => {
    const dir = await richRepo();
    await messUp(dir);
    await fenceGrant(dir, 1);
    await lock(dir);
    const r = await park(dir, { operation: 'op1', base: 'main', token: 1, now: NOW });
    expect(r).toMatchObject({ outcome: 'refused_passable', what: expect.stringContaining('index.lock') });
    expect(await journal(dir)).toBe(false);
    expect(await gitCode(dir, 'rev-parse', '--verify', '-q', 'nexus/park/op1')).not.toBe(0);
    // The holder keeps the copy and works on; then the lock goes and the park is tried again.
    await unlock(dir);
    await write(dir, 'a.txt', 'alpha changed again, after the refused park\n');
    await write(dir, 'later.txt', 'written after the refused park\n');
    const before = await picture(dir);
    const gitBefore = await gitPicture(dir);
    const rec = await parkOk(dir, 1);
    await fenceGrant(dir, 2);
    expect((await restore(dir, { operation: 'op1', token: 2, record: rec })).applied).toBe(true);
    expect(await picture(dir)).toEqual(before);
    expect(await gitPicture(dir)).toEqual(gitBefore);
  });

  it('a restore: not applied, with the lock named and no journal; the next park keeps what was written since', async () => {
    const dir = await richRepo();
    await messUp(dir);
    const parkedWork = await picture(dir);
    await fenceGrant(dir, 1);
    const rec = await parkOk(dir, 1);
    await fenceGrant(dir, 2);
    await lock(dir);
    const back = await restore(dir, { operation: 'op1', token: 2, record: rec });
    expect(back.applied).toBe(false);
    expect(back.notice).toContain('index.lock');
    expect(await journal(dir)).toBe(false);
    // The session starts on the base anyway, and changes a tracked file there.
    await unlock(dir);
    await write(dir, 'a.txt', 'written on the base after the restore failed\n');
    const before = await picture(dir);
    const rec2 = await parkOk(dir, 2, 'op1');
    expect(await gitPicture(dir)).toMatchObject({ status: '', branch: 'main' });
    await fenceGrant(dir, 3);
    expect((await restore(dir, { operation: 'op1', token: 3, record: rec2 })).applied).toBe(true);
    expect(await picture(dir)).toEqual(before);
    // The first park's work is still on nothing but its commit: it was never put back, and never lost.
    expect(rec.work).not.toBeNull();
    expect(parkedWork['a.txt']).not.toEqual(before['a.txt']);
  });
});

describe('HEAD read by the node itself', () => {
  // Git's HEAD file is a session's to replace. The mover reads it in the node (to tell whether a refused move
  // touched anything): a FIFO there must not hang it, nor a link to /dev/zero fill its memory.
  it('is read only as a small regular file: a FIFO, a link to /dev/zero or an oversized file read as unknown, at once', async () => {
    const dir = await richRepo();
    const repo = (await probe(dir))!;
    expect(await readHeadFile(repo)).toBe('ref: refs/heads/feat/x\n');
    const head = join(dir, '.git', 'HEAD');
    const cases: Array<[string, () => void]> = [
      ['a FIFO', () => execFileSync('mkfifo', [head])],
      ['a link to /dev/zero', () => symlinkSync('/dev/zero', head)],
      ['an oversized file', () => writeFileSync(head, 'x'.repeat(100_000))],
    ];
    for (const [what, make] of cases) {
      await rm(head, { force: true });
      make();
      try {
        const read = await Promise.race([readHeadFile(repo), new Promise((r) => setTimeout(() => r('still reading'), 3_000))]);
        expect(read, what).toBeNull();
      } finally {
        // A reader blocked on the FIFO (before this was mended) is let go, so the worker can end.
        if (what === 'a FIFO') {
          try {
            closeSync(openSync(head, fsConstants.O_WRONLY | fsConstants.O_NONBLOCK));
          } catch {
            // No reader waits: nothing to let go.
          }
        }
      }
    }
  });
});

describe('parked work a session deleted', () => {
  // The park branch and its objects live in .git, which every session writes: a session of another operation
  // (tidying branches it does not know, or set on harm) can delete the branch and prune what it held. The mover
  // keeps a copy of what each park committed where no session reaches, and a restore takes the work from it.
  it('is put back byte for byte from the private copy after its branch was deleted and its objects pruned', async () => {
    const dir = await richRepo();
    const keep = await tempDir();
    await messUp(dir);
    const before = await picture(dir);
    const gitBefore = await gitPicture(dir);
    await fenceGrant(dir, 1);
    const r = await park(dir, { operation: 'op1', base: 'main', token: 1, now: NOW }, { journalDir: keep });
    if (r.outcome !== 'parked') throw new Error(JSON.stringify(r));
    await git(dir, 'branch', '-D', 'nexus/park/op1');
    await git(dir, 'reflog', 'expire', '--expire=now', '--all');
    await git(dir, 'gc', '-q', '--prune=now');
    expect(await gitCode(dir, 'cat-file', '-e', `${r.record.work}^{commit}`)).not.toBe(0);
    await fenceGrant(dir, 2);
    const back = await restore(dir, { operation: 'op1', token: 2, record: r.record }, { journalDir: keep });
    expect(back.applied).toBe(true);
    expect(await picture(dir)).toEqual(before);
    expect(await gitPicture(dir)).toEqual(gitBefore);
    // The branch the notice names is there again, and the copy goes once the work is back in the tree.
    expect((await git(dir, 'rev-parse', 'nexus/park/op1')).trim()).toBe(r.record.work);
    expect(await readdir(join(keep, 'parked'))).toEqual([]);
  });

  it('keeps the copy private (0600 in a 0700 folder) and small: the work’s own objects, not the history under them', async () => {
    const dir = await richRepo();
    const keep = await tempDir();
    await messUp(dir);
    await fenceGrant(dir, 1);
    const r = await park(dir, { operation: 'op1', base: 'main', token: 1, now: NOW }, { journalDir: keep });
    if (r.outcome !== 'parked') throw new Error(JSON.stringify(r));
    const file = join(keep, 'parked', 'op1.bundle');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(join(keep, 'parked'))).mode & 0o777).toBe(0o700);
    // Its one prerequisite is the commit the work stands on.
    const heads = await git(dir, 'bundle', 'list-heads', file);
    expect(heads.trim()).toBe(`${r.record.work} refs/heads/nexus/park/op1`);
    const verify = await git(dir, 'bundle', 'verify', file);
    expect(verify).toContain(r.record.head);
  });
});

/** Makes branch `other` and the current branch change a.txt in conflicting ways. */
async function conflictOn(dir: string, other: string): Promise<void> {
  await git(dir, 'checkout', '-q', '-b', other);
  await write(dir, 'a.txt', 'theirs\n');
  await git(dir, 'commit', '-q', '-am', 'theirs');
  await git(dir, 'checkout', '-q', 'main');
  await write(dir, 'a.txt', 'ours\n');
  await git(dir, 'commit', '-q', '-am', 'ours');
}
