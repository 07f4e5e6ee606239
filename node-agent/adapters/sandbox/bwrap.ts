// Linux: the bubblewrap command line that runs a program inside a SandboxPolicy, and whether bubblewrap works here.
import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { bridged, PROXY_SOCKET_PATH } from './network.js';
import { SANDBOX_HOME, type SandboxPolicy } from './policy.js';
import { SESSION_SOCKET_PATH } from './socket-path.js';

/** The program, found on PATH unless NXS_BWRAP names another. */
export function bwrapProgram(env: NodeJS.ProcessEnv = process.env): string {
  return env['NXS_BWRAP'] || 'bwrap';
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The argv (program first) that runs `command` in `cwd` inside the policy. Mount order is the policy's
 * meaning: the machine read-only, fresh /tmp, /run and /dev, the copy, what stays read-only in it, the
 * declared writes, the private HOME, the session's socket, the filtering proxy's, and the secrets last, so no bind
 * above reopens one. Every namespace is new (the network too unless the policy shares it: a host list keeps its own
 * and reaches out only through the proxy's socket, behind a bridge that starts first), with a user namespace and no
 * capabilities, so nothing inside can unmount what hides a secret; the PID namespace is new, so no
 * /proc/<pid>/root of a process outside leads back to the real file system.
 */
export function bwrapArgv(policy: SandboxPolicy, command: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const a: string[] = [bwrapProgram(env), '--unshare-all', '--unshare-user', '--cap-drop', 'ALL', '--die-with-parent'];
  if (policy.network === 'all') a.push('--share-net');
  a.push('--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--tmpfs', '/run');
  // A resolver configured through /run (systemd-resolved's stub) must survive the fresh /run.
  try {
    const resolv = realpathSync('/etc/resolv.conf');
    if (resolv.startsWith('/run/')) a.push('--ro-bind', resolv, resolv);
  } catch {
    // No resolver file: nothing to keep.
  }
  // What must stay readable under the fresh /tmp and /run (Nexus or Node unpacked there), before the copy's own bind.
  for (const r of policy.read) if (existsSync(r)) a.push('--ro-bind', r, r);
  a.push(policy.writable ? '--bind' : '--ro-bind', policy.copy, policy.copy);
  if (policy.writable) {
    // .git as a mount point of its own cannot be renamed away and replaced by one whose config the session wrote;
    // a .git file (a linked worktree) would point git anywhere, so it is read-only outright.
    const git = join(policy.copy, '.git');
    if (isDir(git)) a.push('--bind', git, git);
    else if (existsSync(git)) a.push('--ro-bind', git, git);
    for (const p of policy.protect) {
      if (existsSync(p)) a.push('--ro-bind', p, p);
      // A rules folder not there yet must not be made by the session: an empty read-only one stands in its place.
      else if (!p.includes('/.git/')) a.push('--tmpfs', p, '--remount-ro', p);
    }
  }
  for (const w of policy.write) if (existsSync(w)) a.push('--bind', w, w);
  // After the write paths, so the folder's own bind does not cover them; a mount point cannot be renamed or removed.
  for (const k of policy.keep) if (existsSync(k)) a.push('--ro-bind', k, k);
  a.push('--bind', policy.home, SANDBOX_HOME);
  if (policy.socket !== null) a.push('--bind', policy.socket, SESSION_SOCKET_PATH);
  if (Array.isArray(policy.network)) {
    if (policy.proxy === null) throw new Error('a host list needs its filtering proxy started before the turn is wrapped');
    a.push('--bind', policy.proxy, PROXY_SOCKET_PATH);
  }
  for (const h of policy.hide) {
    if (!existsSync(h)) continue;
    if (isDir(h)) a.push('--tmpfs', h, '--remount-ro', h);
    else a.push('--ro-bind', '/dev/null', h);
  }
  let dir = cwd;
  try {
    dir = realpathSync(cwd);
  } catch {
    // bwrap says so itself.
  }
  a.push('--chdir', dir, '--', ...(Array.isArray(policy.network) ? bridged(command, env) : command));
  return a;
}

let probed: { ok: true } | { ok: false; why: string } | undefined;

/**
 * Whether bubblewrap runs here with the namespaces a session needs (checked once per process): it may be
 * missing, or the kernel may refuse unprivileged user namespaces.
 */
export function bwrapWorks(env: NodeJS.ProcessEnv = process.env): { ok: true } | { ok: false; why: string } {
  return (probed ??= probeBwrap(env));
}

/** One probe, uncached: a sidecar is a process per turn, so each turn pays for one (bench/sandbox.ts measures it). */
export function probeBwrap(env: NodeJS.ProcessEnv = process.env): { ok: true } | { ok: false; why: string } {
  let probed: { ok: true } | { ok: false; why: string };
  const r = spawnSync(bwrapProgram(env), ['--unshare-all', '--unshare-user', '--cap-drop', 'ALL', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', 'true'], { encoding: 'utf8', timeout: 10_000 });
  if (r.error) probed = { ok: false, why: (r.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'bubblewrap (bwrap) is not installed' : r.error.message };
  else if (r.status !== 0) probed = { ok: false, why: `bubblewrap cannot make a sandbox here: ${(r.stderr || '').trim() || `exit ${r.status}`}` };
  else probed = { ok: true };
  return probed;
}

/** Where the fixed socket's folder is inside, for the error a session sees when none was bound. */
export const SESSION_SOCKET_DIR = join(SESSION_SOCKET_PATH, '..');
