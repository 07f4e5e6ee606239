// A `git` put first on PATH that notes each call before it runs the real one: for tests that count the git
// processes a piece of the product starts (PATH is read at each call, so only calls inside `around` count).
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type CountingGit = {
  /** Runs `fn` with the counting git first on PATH. */
  around<T>(fn: () => Promise<T>): Promise<T>;
  /** The calls noted so far, one line of arguments each, and forgets them. */
  take(): Promise<string[]>;
  remove(): Promise<void>;
};

export async function countingGit(): Promise<CountingGit> {
  const real = (process.env['PATH'] ?? '').split(':').map((d) => join(d, 'git')).find((p) => existsSync(p));
  if (real === undefined) throw new Error('no git on PATH');
  const bin = await mkdtemp(join(tmpdir(), 'nexus-counting-git-'));
  const log = join(bin, 'calls');
  await writeFile(join(bin, 'git'), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${real}' "$@"\n`);
  await chmod(join(bin, 'git'), 0o755);
  return {
    around: async (fn) => {
      const before = process.env['PATH'];
      process.env['PATH'] = `${bin}:${before ?? ''}`;
      try {
        return await fn();
      } finally {
        process.env['PATH'] = before;
      }
    },
    take: async () => {
      const text = await readFile(log, 'utf8').catch(() => '');
      await rm(log, { force: true });
      return text.split('\n').filter((l) => l !== '');
    },
    remove: () => rm(bin, { recursive: true, force: true }),
  };
}
