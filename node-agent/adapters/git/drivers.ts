// The programs a repository's attributes can make git run (filter, diff and merge drivers), switched off for Nexus's own calls.
import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { runFile } from '../../../infra/spawner.js';

/** The config keys of a driver that name a program, by driver kind. */
const PROGRAM_KEY = /^(filter\.(.+)\.(clean|smudge|process)|diff\.(.+)\.(textconv|command)|merge\.(.+)\.driver)$/;

const cache = new Map<string, { stamp: string; overrides: string[] }>();

function mtime(p: string): string {
  try {
    return String(statSync(p).mtimeMs);
  } catch {
    return '-';
  }
}

/** `cwd/.git` when it is a main repository's folder (where `commondir` has no business), else null. */
export function commonDir(cwd: string): string | null {
  const dir = join(cwd, '.git');
  try {
    return statSync(dir).isDirectory() ? dir : null;
  } catch {
    return null;
  }
}

/**
 * `-c key=` for every driver program the repository's config chain defines, so an attribute (in `.gitattributes`,
 * which a session writes) that names one runs nothing: a filter passes bytes through, a diff or merge driver is
 * not there. The list is read with one `git config` call and kept until one of the config files changes. That call
 * goes the way every other git call goes (`runFile`: through the process helper where one is in use), never as a
 * fork of this process that blocks it.
 */
export async function driverOverrides(cwd: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const common = commonDir(cwd);
  const home = env['HOME'] || homedir();
  const files = [common === null ? join(cwd, '.git') : join(common, 'config'), env['GIT_CONFIG_GLOBAL'] ?? join(home, '.gitconfig'), join(env['XDG_CONFIG_HOME'] || join(home, '.config'), 'git', 'config'), '/etc/gitconfig'];
  const stamp = files.map(mtime).join('|');
  const hit = cache.get(cwd);
  if (hit !== undefined && hit.stamp === stamp) return hit.overrides;
  const r = await runFile({
    file: 'git',
    args: ['config', '-z', '--name-only', '--get-regexp', '^(filter|diff|merge)\\.'],
    cwd,
    env: { ...env, ...(common === null ? {} : { GIT_COMMON_DIR: common }) },
    timeoutMs: 10_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  const names = r.exitCode === 0 ? r.stdout.toString('utf8').split('\0').filter((n) => PROGRAM_KEY.test(n)) : [];
  const overrides = names.flatMap((n) => ['-c', `${n}=`, ...(n.startsWith('filter.') ? ['-c', `${n.replace(/\.[a-z]+$/, '')}.required=false`] : [])]);
  cache.set(cwd, { stamp, overrides });
  return overrides;
}
