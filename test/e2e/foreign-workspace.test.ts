// Another user on the same machine, in a folder whose workspace is not theirs: `.nxs/` is private to its
// owner, so they cannot even see whether a config is there. nxc and nxs must say so and stop, rather than
// walk on upwards to some other workspace, or tell them to move the folder away.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initWorkspace } from '../../node-agent/adapters/workspace/index.js';
import { REPO } from '../helpers/workspace.js';

const root = process.getuid?.() === 0;
const OTHER = 65534;
let base = '';
let outer = '';
let inner = '';

/** Runs a built command as somebody who cannot look into `inner/.nxs`: uid 65534 when we are root, else ourselves after a chmod. */
function asOther(bin: 'nxc' | 'nxs', args: string[], cwd: string): { code: number | null; stdout: string; stderr: string } {
  const command = [process.execPath, join(REPO, 'bin', bin), ...args];
  const argv = root ? ['setpriv', `--reuid=${OTHER}`, `--regid=${OTHER}`, '--clear-groups', ...command] : command;
  const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: base, NEXUS_HOME: join(base, 'home-other'), LC_ALL: 'C' };
  const r = spawnSync(argv[0]!, argv.slice(1), { cwd, env, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(async () => {
  // Not the suite's private TMPDIR: the other user must be able to reach the folders, just not into .nxs/.
  base = mkdtempSync(join(process.env['NEXUS_TEST_DISK_TMPDIR'] ?? '/tmp', 'nexus-foreign-'));
  chmodSync(base, 0o755);
  if (root && spawnSync('setpriv', [`--reuid=${OTHER}`, `--regid=${OTHER}`, '--clear-groups', 'test', '-x', base]).status !== 0) {
    throw new Error(`uid ${OTHER} cannot reach ${base}: this test needs a temporary folder other users can traverse`);
  }
  // A workspace the other user may read (its .nxs opened up), with a private one inside it.
  outer = join(base, 'outer');
  mkdirSync(outer);
  // Set outright, whatever umask the worker runs under.
  chmodSync(outer, 0o755);
  await initWorkspace(outer, { name: 'outer', home: join(base, 'home') });
  chmodSync(join(outer, '.nxs'), 0o755);
  chmodSync(join(outer, '.nxs', 'config.json'), 0o644);
  inner = join(outer, 'inner');
  mkdirSync(inner);
  chmodSync(inner, 0o755);
  await initWorkspace(inner, { name: 'inner', home: join(base, 'home') });
  if (!root) chmodSync(join(inner, '.nxs'), 0o000);
}, 60_000);

afterAll(() => {
  if (inner !== '' && !root) chmodSync(join(inner, '.nxs'), 0o700);
  if (base !== '') rmSync(base, { recursive: true, force: true });
});

describe('a workspace another user owns', () => {
  it('nxc stops with CONFIG_INVALID naming the folder and its owner, and does not fall through to the workspace above', { timeout: 60_000 }, () => {
    const r = asOther('nxc', ['status', '--json'], inner);
    expect(r.code).toBe(2);
    const out = JSON.parse(r.stdout) as { ok: boolean; error: { code: string; message: string; details: { path: string; owner: number } } };
    expect(out.ok).toBe(false);
    expect(out.error.code).toBe('CONFIG_INVALID');
    expect(out.error.details.path).toBe(join(inner, '.nxs'));
    expect(out.error.details.owner).toBe(process.getuid?.());
    expect(out.error.message).toMatch(/is not readable by you .*run nxc and nxs as the user who owns it/);
    // The readable workspace above still answers the same user from its own folder.
    const above = asOther('nxc', ['status', '--json'], outer);
    expect(above.stdout).not.toContain('CONFIG_INVALID');
  });

  it('nxs init says whose it is instead of telling them to move the folder away', { timeout: 60_000 }, () => {
    const r = asOther('nxs', ['init'], inner);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('CONFIG_INVALID');
    expect(r.stderr).toContain(`${join(inner, '.nxs')} is not readable by you`);
    expect(r.stderr).not.toMatch(/move it away/);
  });
});
