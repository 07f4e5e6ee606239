// Reading which drivers a repository defines is a git call like any other: started from the process
// helper where one is in use, never forked from a process that holds stores (that blocks it while the
// kernel copies its mappings).
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { processHelperPid, useProcessHelper } from '../infra/spawner.js';
import { driverOverrides } from '../node-agent/adapters/git/drivers.js';
import { gitEnv } from './helpers/git-env.js';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it('asks git for the drivers from the process helper, and still switches off the one the repository names', async () => {
  dir = mkdtempSync(join(tmpdir(), 'nexus-git-drivers-'));
  const root = join(dir, 'repo');
  mkdirSync(root);
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: root, env: gitEnv() });
  execFileSync('git', ['config', 'filter.planted.clean', 'touch /nonexistent/mark'], { cwd: root, env: gitEnv() });
  // A `git` first on PATH that notes who started it, then runs the real one.
  const bin = join(dir, 'bin');
  const parents = join(dir, 'parents');
  mkdirSync(bin);
  const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  writeFileSync(join(bin, 'git'), `#!/bin/sh\necho $PPID >> ${parents}\nexec ${real} "$@"\n`);
  chmodSync(join(bin, 'git'), 0o755);
  useProcessHelper();
  const overrides = await driverOverrides(root, { ...gitEnv(), PATH: `${bin}:${process.env['PATH'] ?? ''}` });
  expect(overrides).toEqual(['-c', 'filter.planted.clean=', '-c', 'filter.planted.required=false']);
  const started = readFileSync(parents, 'utf8').trim().split('\n').map(Number);
  expect(started).toEqual([processHelperPid()]);
  expect(started).not.toContain(process.pid);
});
