// Real git repositories in temporary folders for the mover's tests, and a byte-exact picture of a work tree.
import { createHash } from 'node:crypto';
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gitEnv, runTestGit } from '../helpers/git-env.js';

// Its own identity (CI has no global one), and no calling hook's GIT_DIR.
const env = gitEnv({ ...process.env, LC_ALL: 'C' });

const made: string[] = [];

export async function cleanupRepos(): Promise<void> {
  await Promise.all(made.splice(0).map((d) => rm(d, { recursive: true, force: true })));
}

/** Runs git as a person would; signing off so a global signing setup cannot break the fixtures. */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  return runTestGit(cwd, ['-c', 'commit.gpgsign=false', '-c', 'core.hooksPath=/dev/null', ...args], { env, maxBuffer: 256 * 1024 * 1024 });
}

/** Like `git`, but resolves with the exit code instead of throwing (conflicts are the point of some fixtures). */
export async function gitCode(cwd: string, ...args: string[]): Promise<number> {
  return git(cwd, ...args).then(
    () => 0,
    (err: { code?: number }) => err.code ?? 1,
  );
}

export async function write(dir: string, path: string, content: string | Buffer, mode?: number): Promise<void> {
  await mkdir(dirname(join(dir, path)), { recursive: true });
  await writeFile(join(dir, path), content);
  if (mode !== undefined) await chmod(join(dir, path), mode);
}

/** A repository on `main` with one commit of `files` (every call of `git` here carries the test identity: CI has none). */
export async function repoWith(files: Record<string, string | Buffer>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'nexus-lease-'));
  made.push(dir);
  await git(dir, 'init', '-q', '-b', 'main');
  for (const [path, content] of Object.entries(files)) await write(dir, path, content);
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '-q', '-m', 'first');
  return dir;
}

export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'nexus-lease-plain-'));
  made.push(dir);
  return dir;
}

/** A repository holding every kind of file the mover must carry: binary, executable, symlink, spaces, non-ASCII. */
export async function richRepo(): Promise<string> {
  const dir = await repoWith({
    '.gitignore': 'ignored.log\nbuild/\n',
    'a.txt': 'alpha\n',
    'b.txt': 'beta\n',
    'dir/c.txt': 'gamma\n',
    'old name.txt': 'to be renamed\n',
    'bin.dat': Buffer.from([0, 1, 2, 3, 255, 254, 0, 10, 13]),
    'ünïcødé.txt': 'non-ascii\n',
    'exec.sh': '#!/bin/sh\necho hi\n',
  });
  await chmod(join(dir, 'exec.sh'), 0o755);
  await symlink('a.txt', join(dir, 'link'));
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '-q', '-m', 'modes and links');
  await git(dir, 'checkout', '-q', '-b', 'feat/x');
  await write(dir, 'feature.txt', 'on the feature branch\n');
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '-q', '-m', 'feature');
  return dir;
}

/** Leaves every kind of uncommitted work in a rich repository, staged and not, plus ignored files. */
export async function messUp(dir: string): Promise<void> {
  await write(dir, 'a.txt', 'alpha changed, unstaged\n');
  await write(dir, 'b.txt', 'beta changed and staged\n');
  await git(dir, 'add', 'b.txt');
  await rm(join(dir, 'dir/c.txt'));
  await git(dir, 'mv', 'old name.txt', 'new name.txt');
  await chmod(join(dir, 'exec.sh'), 0o644);
  await write(dir, 'bin.dat', Buffer.from([9, 0, 0, 255, 128, 0]));
  await write(dir, 'new dir/x.txt', 'untracked in a new folder\n');
  await write(dir, 'new dir/sub/y.bin', Buffer.from([0, 0, 7]));
  await write(dir, 'ünïcødé 2.txt', 'untracked, non-ascii, with a space\n');
  await write(dir, 'ignored.log', 'ignored, stays\n');
  await write(dir, 'build/out.o', Buffer.from([1, 2, 3]));
}

/** Every path under `dir` but `.git`, with its kind, executable bit and content hash: equal pictures, equal bytes. */
export async function picture(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function walk(rel: string): Promise<void> {
    for (const name of await readdir(join(dir, rel))) {
      const path = rel === '' ? name : `${rel}/${name}`;
      if (path === '.git') continue;
      const info = await lstat(join(dir, path));
      if (info.isSymbolicLink()) out[path] = `link ${await readlink(join(dir, path))}`;
      else if (info.isDirectory()) await walk(path);
      else {
        const hash = createHash('sha256').update(await readFile(join(dir, path))).digest('hex');
        out[path] = `${info.mode & 0o111 ? 'exec' : 'file'} ${hash}`;
      }
    }
  }
  await walk('');
  return out;
}

/** What git says about the tree and the index: status (untracked included) and the staged entries. */
export async function gitPicture(dir: string): Promise<{ status: string; staged: string; branch: string }> {
  return {
    status: await git(dir, 'status', '--porcelain=v1', '-z', '--untracked-files=all'),
    staged: await git(dir, 'diff', '--cached', '--name-status', '-z'),
    branch: (await git(dir, 'symbolic-ref', '-q', '--short', 'HEAD').catch(() => 'DETACHED\n')).trim(),
  };
}
