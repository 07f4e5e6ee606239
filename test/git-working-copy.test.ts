// Checks the working-copy handover record against real git repositories in temporary folders.
import { chown, lchown, mkdir, mkdtemp, readFile, readdir, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DIRTY_NOTE, describeWorkingCopy, readWorkingCopy } from '../node-agent/adapters/git/index.js';
import { fenceGrant } from '../node-agent/capabilities/leases/index.js';
import { WorkingCopySchema, type WorkingCopy } from '../protocol/working-copy.js';
import { countingGit, type CountingGit } from './helpers/counting-git.js';
import { gitEnv, runTestGit } from './helpers/git-env.js';

// Its own identity (a submodule clone has no repository config of its own), and no calling hook's GIT_DIR.
const testEnv = gitEnv();

const made: string[] = [];
const gits: CountingGit[] = [];

async function counter(): Promise<CountingGit> {
  const c = await countingGit();
  gits.push(c);
  return c;
}

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  await Promise.all(gits.splice(0).map((g) => g.remove()));
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'nexus-wc-'));
  made.push(dir);
  return dir;
}

/** Runs git in `cwd`; signing is off so a global signing setup cannot break the fixtures. */
async function git(cwd: string, ...args: string[]): Promise<string> {
  return runTestGit(cwd, ['-c', 'commit.gpgsign=false', ...args], { env: testEnv });
}

/** Like `git`, but with optional locks off so the helper itself never refreshes the index. */
async function gitQuiet(cwd: string, ...args: string[]): Promise<string> {
  return runTestGit(cwd, args, { env: { ...testEnv, GIT_OPTIONAL_LOCKS: '0' } });
}

async function initRepo(dir: string): Promise<void> {
  await git(dir, 'init', '-q', '-b', 'main');
}

/** A repository on `main` with one commit holding `files` (path -> content). */
async function repoWith(files: Record<string, string> = { 'a.txt': 'alpha\n', 'b.txt': 'beta\n' }): Promise<string> {
  const dir = await tempDir();
  await initRepo(dir);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '-q', '-m', 'initial');
  return dir;
}

/** Gives `root` and everything under it to `uid`. */
async function chownTree(root: string, uid: number): Promise<void> {
  await chown(root, uid, uid);
  for (const entry of await readdir(root, { recursive: true })) await lchown(join(root, entry), uid, uid);
}

async function read(dir: string): Promise<WorkingCopy> {
  const wc = await readWorkingCopy(dir);
  if (wc === null) throw new Error(`expected a working copy at ${dir}`);
  return wc;
}

async function fingerprint(dir: string): Promise<string> {
  return (await read(dir)).fingerprint;
}

describe('readWorkingCopy', () => {
  it('reads a clean tree as not dirty, with the full HEAD sha and the branch name', async () => {
    const dir = await repoWith();
    const wc = await read(dir);
    expect(wc.dirty).toBe(false);
    expect(wc.commit).toBe((await git(dir, 'rev-parse', 'HEAD')).trim());
    expect(wc.branch).toBe('main');
    expect(WorkingCopySchema.parse(wc)).toEqual(wc);
  });

  it('gives the same record on repeated reads and from a subfolder', async () => {
    const dir = await repoWith({ 'a.txt': 'alpha\n', 'deep/er/c.txt': 'c\n' });
    await writeFile(join(dir, 'a.txt'), 'changed\n');
    const first = await read(dir);
    expect(await read(dir)).toEqual(first);
    expect(await read(join(dir, 'deep', 'er'))).toEqual(first);
  });

  it('reads a modified tracked file as dirty with a new fingerprint, and reverting restores the original', async () => {
    const dir = await repoWith();
    const clean = await fingerprint(dir);
    await writeFile(join(dir, 'a.txt'), 'alpha, edited\n');
    const edited = await read(dir);
    expect(edited.dirty).toBe(true);
    expect(edited.fingerprint).not.toBe(clean);
    await writeFile(join(dir, 'a.txt'), 'alpha\n');
    const reverted = await read(dir);
    expect(reverted.dirty).toBe(false);
    expect(reverted.fingerprint).toBe(clean);
  });

  it('tells different edits of the same file apart', async () => {
    const dir = await repoWith();
    await writeFile(join(dir, 'a.txt'), 'one\n');
    const one = await fingerprint(dir);
    await writeFile(join(dir, 'a.txt'), 'two\n');
    expect(await fingerprint(dir)).not.toBe(one);
  });

  it('reads a deleted tracked file as dirty with a new fingerprint', async () => {
    const dir = await repoWith();
    const clean = await fingerprint(dir);
    await rm(join(dir, 'b.txt'));
    const wc = await read(dir);
    expect(wc.dirty).toBe(true);
    expect(wc.fingerprint).not.toBe(clean);
  });

  it('reads an untracked file as dirty with a new fingerprint', async () => {
    const dir = await repoWith();
    const clean = await fingerprint(dir);
    await writeFile(join(dir, 'new.txt'), 'new\n');
    const wc = await read(dir);
    expect(wc.dirty).toBe(true);
    expect(wc.fingerprint).not.toBe(clean);
  });

  it('ignores a file that .gitignore excludes, for both fingerprint and dirtiness', async () => {
    const dir = await repoWith({ '.gitignore': '*.log\nbuild/\n', 'a.txt': 'alpha\n' });
    const clean = await read(dir);
    await writeFile(join(dir, 'debug.log'), 'noise\n');
    await mkdir(join(dir, 'build'));
    await writeFile(join(dir, 'build', 'out.js'), 'compiled\n');
    expect(await read(dir)).toEqual(clean);
  });

  it('gives the same fingerprint for the same content staged or unstaged', async () => {
    const dir = await repoWith();
    await writeFile(join(dir, 'a.txt'), 'alpha, edited\n');
    await writeFile(join(dir, 'new.txt'), 'new\n');
    const unstaged = await fingerprint(dir);
    await git(dir, 'add', 'a.txt', 'new.txt');
    expect(await fingerprint(dir)).toBe(unstaged);
  });

  it('gives the same fingerprint for a rename staged with git mv and the same move left unstaged', async () => {
    const dir = await repoWith();
    await git(dir, 'mv', 'a.txt', 'moved a.txt');
    expect(await gitQuiet(dir, 'status', '--porcelain')).toMatch(/^R /m);
    const staged = await read(dir);
    await git(dir, 'reset', '-q');
    expect(await gitQuiet(dir, 'status', '--porcelain')).not.toMatch(/^R /m);
    const unstaged = await read(dir);
    expect(staged.dirty).toBe(true);
    expect(unstaged.fingerprint).toBe(staged.fingerprint);
  });

  it('gives the clean fingerprint when a staged change is undone on disk, yet still reads as dirty', async () => {
    const dir = await repoWith();
    const clean = await fingerprint(dir);
    await writeFile(join(dir, 'a.txt'), 'staged only\n');
    await git(dir, 'add', 'a.txt');
    await writeFile(join(dir, 'a.txt'), 'alpha\n');
    const wc = await read(dir);
    expect(wc.dirty).toBe(true);
    expect(wc.fingerprint).toBe(clean);
  });

  it('reads a detached HEAD with branch null and the detached commit', async () => {
    const dir = await repoWith();
    const head = (await git(dir, 'rev-parse', 'HEAD')).trim();
    await git(dir, 'checkout', '-q', '--detach');
    const wc = await read(dir);
    expect(wc.branch).toBeNull();
    expect(wc.commit).toBe(head);
  });

  it('reads an unborn branch with commit null and still fingerprints its files', async () => {
    const dir = await tempDir();
    await initRepo(dir);
    const empty = await read(dir);
    expect(empty).toMatchObject({ commit: null, branch: 'main', dirty: false });
    expect(WorkingCopySchema.parse(empty)).toEqual(empty);
    await writeFile(join(dir, 'first.txt'), 'first\n');
    const withFile = await read(dir);
    expect(withFile.dirty).toBe(true);
    expect(withFile.fingerprint).not.toBe(empty.fingerprint);
    await git(dir, 'add', 'first.txt');
    expect(await fingerprint(dir)).toBe(withFile.fingerprint);
  });

  it('reads a folder outside any repository as null without throwing or printing', async () => {
    const dir = await tempDir();
    const stderr = vi.spyOn(process.stderr, 'write');
    const stdout = vi.spyOn(process.stdout, 'write');
    expect(await readWorkingCopy(dir)).toBeNull();
    expect(await readWorkingCopy(join(dir, 'does-not-exist'))).toBeNull();
    expect(stderr).not.toHaveBeenCalled();
    expect(stdout).not.toHaveBeenCalled();
  });

  it('starts no git process for a folder no repository holds, and still asks git inside one', async () => {
    const counted = await counter();
    const plain = await tempDir();
    await mkdir(join(plain, 'deep', 'er'), { recursive: true });
    const repo = await repoWith();
    await counted.around(async () => {
      expect(await readWorkingCopy(plain)).toBeNull();
      expect(await readWorkingCopy(join(plain, 'deep', 'er'))).toBeNull();
      expect(await readWorkingCopy(join(plain, 'missing'))).toBeNull();
      // The lease's look at a folder (fencing a grant) is spared the same way.
      expect(await fenceGrant(plain, 1)).toEqual({ branch: null });
    });
    expect(await counted.take()).toEqual([]);
    await counted.around(async () => expect((await read(repo)).branch).toBe('main'));
    expect((await counted.take()).length).toBeGreaterThan(0);
  });

  it('reads a repository through a symbolic link from outside it, as git finds it from the linked folder', async () => {
    const repo = await repoWith();
    await mkdir(join(repo, 'sub'));
    const outside = await tempDir();
    await symlink(join(repo, 'sub'), join(outside, 'link'));
    expect(await read(join(outside, 'link'))).toEqual(await read(repo));
  });

  it.skipIf(process.geteuid?.() !== 0)('takes a folder under another user’s repository for none, without asking git, and the lease does too', async () => {
    // Another user made a repository in a shared folder (their /tmp/.git) above a workspace of this user's.
    const shared = await tempDir();
    await initRepo(shared);
    await chownTree(shared, 65534);
    const mine = join(shared, 'mine');
    await mkdir(mine);
    const counted = await counter();
    await counted.around(async () => {
      expect(await readWorkingCopy(mine)).toBeNull();
      expect(await fenceGrant(mine, 1)).toEqual({ branch: null });
    });
    expect(await counted.take()).toEqual([]);
    // A .git of this user's that git passes over (not a repository) leads git to the other one, which it refuses.
    await mkdir(join(mine, '.git'));
    await counted.around(async () => expect(await readWorkingCopy(mine)).toBeNull());
    expect((await counted.take()).length).toBeGreaterThan(0);
    expect(await fenceGrant(mine, 1)).toEqual({ branch: null });
  });

  it('asks git in a folder that holds a HEAD entry, which may be a repository of its own', async () => {
    const counted = await counter();
    const dir = await tempDir();
    await writeFile(join(dir, 'HEAD'), 'not a repository\n');
    await counted.around(async () => expect(await readWorkingCopy(dir)).toBeNull());
    expect((await counted.take()).length).toBeGreaterThan(0);
  });

  it('reads the inside of a .git folder as null, since it is not a work tree', async () => {
    const dir = await repoWith();
    expect(await readWorkingCopy(join(dir, '.git'))).toBeNull();
  });

  it('hashes paths with spaces, a newline, a tab, a leading quote and unicode by their content', async () => {
    const odd = 'dir with space/new\nline ü\t.txt';
    const dir = await repoWith({ [odd]: 'odd\n', 'a.txt': 'alpha\n' });
    const clean = await read(dir);
    expect(clean.dirty).toBe(false);

    await writeFile(join(dir, odd), 'odd, edited\n');
    const edited = await read(dir);
    expect(edited.dirty).toBe(true);
    expect(edited.fingerprint).not.toBe(clean.fingerprint);
    await writeFile(join(dir, odd), 'odd\n');
    expect(await fingerprint(dir)).toBe(clean.fingerprint);

    await writeFile(join(dir, '"quoted\\ "name\n'), 'one\n');
    const one = await fingerprint(dir);
    await writeFile(join(dir, '"quoted\\ "name\n'), 'two\n');
    expect(await fingerprint(dir)).not.toBe(one);
  });

  it('counts symlinks by their target, dangling ones too', async () => {
    const dir = await repoWith();
    await symlink('a.txt', join(dir, 'tracked-link'));
    await git(dir, 'add', 'tracked-link');
    await git(dir, 'commit', '-q', '-m', 'link');
    const clean = await fingerprint(dir);

    await symlink('nowhere', join(dir, 'dangling'));
    const dangling = await read(dir);
    expect(dangling.dirty).toBe(true);
    await rm(join(dir, 'dangling'));
    await symlink('elsewhere', join(dir, 'dangling'));
    expect(await fingerprint(dir)).not.toBe(dangling.fingerprint);
    await rm(join(dir, 'dangling'));

    // Staged and then undone on disk: equal to HEAD only if the link's object name matches git's.
    await rm(join(dir, 'tracked-link'));
    await symlink('b.txt', join(dir, 'tracked-link'));
    await git(dir, 'add', 'tracked-link');
    expect(await fingerprint(dir)).not.toBe(clean);
    await rm(join(dir, 'tracked-link'));
    await symlink('a.txt', join(dir, 'tracked-link'));
    expect(await fingerprint(dir)).toBe(clean);
  });

  it('records a submodule by its checked-out commit and an untracked nested repository without crashing', async () => {
    const sub = await repoWith({ 'lib.txt': 'lib\n' });
    const dir = await repoWith();
    await git(dir, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', sub, 'vendored lib');
    await git(dir, 'commit', '-q', '-m', 'add submodule');
    const clean = await read(dir);
    expect(clean.dirty).toBe(false);

    const inside = join(dir, 'vendored lib');
    await writeFile(join(inside, 'lib.txt'), 'lib, edited\n');
    const edited = await read(dir);
    expect(edited.dirty).toBe(true);
    await git(inside, 'commit', '-q', '-am', 'edit');
    const moved = await read(dir);
    expect(moved.dirty).toBe(true);
    expect(new Set([clean.fingerprint, edited.fingerprint, moved.fingerprint]).size).toBe(3);

    const nested = join(dir, 'nested');
    await mkdir(nested);
    await initRepo(nested);
    await writeFile(join(nested, 'n.txt'), 'n\n');
    const unborn = await read(dir);
    await git(nested, 'add', 'n.txt');
    await git(nested, 'commit', '-q', '-m', 'n');
    expect(await fingerprint(dir)).not.toBe(unborn.fingerprint);
  });

  it('reads a merge conflict as dirty without crashing', async () => {
    const dir = await repoWith();
    await git(dir, 'checkout', '-q', '-b', 'other');
    await writeFile(join(dir, 'a.txt'), 'theirs\n');
    await git(dir, 'commit', '-q', '-am', 'theirs');
    await git(dir, 'checkout', '-q', 'main');
    await writeFile(join(dir, 'a.txt'), 'ours\n');
    await git(dir, 'commit', '-q', '-am', 'ours');
    await expect(git(dir, 'merge', '-q', 'other')).rejects.toThrow();
    expect(await gitQuiet(dir, 'status', '--porcelain')).toMatch(/^UU a\.txt$/m);
    const wc = await read(dir);
    expect(wc.dirty).toBe(true);
    expect(wc.branch).toBe('main');
  });

  it('leaves git status output, the index file and the object store unchanged', async () => {
    const dir = await repoWith();
    await writeFile(join(dir, 'a.txt'), 'alpha, edited\n');
    await writeFile(join(dir, 'untracked.txt'), 'content no object holds yet\n');
    // A new mtime on an unchanged file makes the index stale: a plain `git status` would rewrite it.
    await utimes(join(dir, 'b.txt'), new Date('2001-02-03T04:05:06Z'), new Date('2001-02-03T04:05:06Z'));
    const index = join(dir, '.git', 'index');
    const countObjects = async (): Promise<number> =>
      (await readdir(join(dir, '.git', 'objects'), { recursive: true })).length;

    const statusBefore = await gitQuiet(dir, 'status', '--porcelain');
    const bytesBefore = await readFile(index);
    const mtimeBefore = (await stat(index)).mtimeMs;
    const objectsBefore = await countObjects();

    await readWorkingCopy(dir);
    await readWorkingCopy(dir);

    expect((await stat(index)).mtimeMs).toBe(mtimeBefore);
    expect((await readFile(index)).equals(bytesBefore)).toBe(true);
    expect(await countObjects()).toBe(objectsBefore);
    expect(await gitQuiet(dir, 'status', '--porcelain')).toBe(statusBefore);

    // The control: without GIT_OPTIONAL_LOCKS=0 status does rewrite this index, so the checks above can fail.
    await git(dir, 'status', '--porcelain');
    expect((await readFile(index)).equals(bytesBefore)).toBe(false);
  });
});

describe('describeWorkingCopy', () => {
  const commit = '9f2c1ab4e7d0c3b5a6f8e9d0c1b2a3f4e5d6c7b8';
  const fingerprint = `sha256:${'0'.repeat(64)}`;

  it('names the 12-character short sha and the branch', () => {
    expect(describeWorkingCopy({ commit, branch: 'feat/parser', dirty: false, fingerprint })).toBe(
      '9f2c1ab4e7d0 on feat/parser',
    );
  });

  it('appends the dirty note when there are uncommitted changes', () => {
    expect(describeWorkingCopy({ commit, branch: 'feat/parser', dirty: true, fingerprint })).toBe(
      `9f2c1ab4e7d0 on feat/parser · ${DIRTY_NOTE}`,
    );
    expect(DIRTY_NOTE).toBe('uncommitted work NOT saved anywhere');
  });

  it('says detached at the short sha when no branch is checked out', () => {
    expect(describeWorkingCopy({ commit, branch: null, dirty: false, fingerprint })).toBe('detached at 9f2c1ab4e7d0');
    expect(describeWorkingCopy({ commit, branch: null, dirty: true, fingerprint })).toBe(
      `detached at 9f2c1ab4e7d0 · ${DIRTY_NOTE}`,
    );
  });

  it('says no commits yet on an unborn branch', () => {
    expect(describeWorkingCopy({ commit: null, branch: 'main', dirty: false, fingerprint })).toBe(
      'no commits yet on main',
    );
  });

  it('says no working copy is named when there is no repository', () => {
    expect(describeWorkingCopy(null)).toBe('no working copy named (not a git repository)');
  });
});
