// Nexus's own git calls in a copy a session wrote: nothing the repository names as a program runs.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readWorkingCopy, runGit } from '../node-agent/adapters/git/index.js';
import { GIT_IDENTITY, gitEnv } from './helpers/git-env.js';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A repository with one commit, and a folder the planted programs leave their marks in. */
function repo(): { root: string; marks: string } {
  dir = mkdtempSync(join(tmpdir(), 'nexus-git-neutral-'));
  const root = join(dir, 'repo');
  const marks = join(dir, 'marks');
  mkdirSync(root);
  mkdirSync(marks);
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, env: gitEnv() });
  git('init', '-q', '-b', 'main');
  writeFileSync(join(root, 'a.txt'), 'one\n');
  git('add', '.');
  git('commit', '-q', '-m', 'first');
  return { root, marks };
}

const mark = (marks: string, name: string) => `sh -c 'touch ${marks}/${name}' #`;

/** Everything a session could plant in a repository to have git run it: config, hooks, attributes. */
function plant(root: string, marks: string, configFile = join(root, '.git', 'config')): void {
  const hooks = join(dir, 'hooks');
  mkdirSync(hooks, { recursive: true });
  for (const h of ['pre-commit', 'post-commit', 'post-checkout', 'reference-transaction', 'post-index-change', 'pre-auto-gc']) {
    for (const d of [hooks, join(root, '.git', 'hooks')]) {
      writeFileSync(join(d, h), `#!/bin/sh\ntouch ${marks}/hook-${h}\n`);
      chmodSync(join(d, h), 0o755);
    }
  }
  appendFileSync(
    configFile,
    [
      '[core]',
      `\tfsmonitor = ${mark(marks, 'fsmonitor')}`,
      `\thooksPath = ${hooks}`,
      `\tpager = ${mark(marks, 'pager')}`,
      `\tsshCommand = ${mark(marks, 'ssh')}`,
      `\teditor = ${mark(marks, 'editor')}`,
      '[filter "evil"]',
      `\tclean = ${mark(marks, 'filter-clean')}`,
      `\tsmudge = ${mark(marks, 'filter-smudge')}`,
      '\trequired = true',
      '[diff "evil"]',
      `\ttextconv = ${mark(marks, 'textconv')}`,
      '[merge "evil"]',
      `\tdriver = ${mark(marks, 'merge')}`,
      '[diff]',
      `\texternal = ${mark(marks, 'diff-external')}`,
      '',
    ].join('\n'),
  );
  writeFileSync(join(root, '.gitattributes'), '* filter=evil diff=evil merge=evil\n');
}

/** What Nexus runs in a copy: the working-copy record, and the lease's kind of commands (add, commit, branch, checkout). */
async function nexusGit(root: string): Promise<void> {
  writeFileSync(join(root, 'a.txt'), 'two\n');
  await readWorkingCopy(root);
  await runGit(root, ['add', '-A']);
  await runGit(root, ['commit', '-q', '-m', 'parked'], { env: { ...GIT_IDENTITY } });
  await runGit(root, ['checkout', '-q', '-b', 'side']);
  await runGit(root, ['checkout', '-q', 'main']);
  // Nexus compares trees with plumbing (diff-tree), which no external diff or textconv is ever run for.
  await runGit(root, ['diff-tree', '-r', '-p', 'HEAD~1', 'HEAD']);
  await runGit(root, ['show', '--no-ext-diff', '--no-textconv', '-q', 'HEAD']);
  await readWorkingCopy(root);
}

describe("Nexus's git in a repository a session wrote", () => {
  it('runs none of the hooks, fsmonitor, filter, diff, merge, pager or ssh programs it planted', async () => {
    const { root, marks } = repo();
    plant(root, marks);
    await nexusGit(root);
    expect(readdirSync(marks)).toEqual([]);
  });

  it('ignores a commondir the session wrote into .git, and the config it points at', async () => {
    const { root, marks } = repo();
    const common = join(dir, 'evil-common');
    cpSync(join(root, '.git'), common, { recursive: true });
    plant(root, marks, join(common, 'config'));
    writeFileSync(join(root, '.git', 'commondir'), common + '\n');
    await nexusGit(root);
    expect(readdirSync(marks)).toEqual([]);
  });
});
