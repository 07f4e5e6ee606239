// The pid-owned lock: a holder is alive as long as its process runs, however late it is, and a dead
// holder's lock is taken at the next attempt. Nothing here waits for a rule's duration.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireLock, pidNamespace, processStartTime, readLockOwner, seesPidsOf } from '../../infra/index.js';
import { REPO } from '../helpers/workspace.js';

const dir = mkdtempSync(join(tmpdir(), 'nexus-locks-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const busy = () => Object.assign(new Error('busy'), { code: 'STORE_BUSY' });

/** A lock folder written as if `pid` (started at `start`) held it since long ago. */
function forge(lock: string, pid: number, start: number | null): void {
  mkdirSync(lock, { recursive: true });
  writeFileSync(join(lock, 'owner.json'), JSON.stringify({ pid, start, host: hostname(), since: '2020-01-01T00:00:00Z', purpose: 'a test' }));
  const old = new Date(Date.now() - 3_600_000);
  utimesSync(lock, old, old);
  utimesSync(join(lock, 'owner.json'), old, old);
}

describe('the pid-owned lock', () => {
  it('a live holder keeps the lock however long since it last did anything (a starved process is not a dead one)', async () => {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    children.push(child);
    await new Promise((r) => child.once('spawn', r));
    child.kill('SIGSTOP'); // as starved as a process gets
    const lock = join(dir, 'starved.lock');
    forge(lock, child.pid!, processStartTime(child.pid!));
    await expect(acquireLock(lock, { waitMs: 300, purpose: 'a contender', busy })).rejects.toMatchObject({ code: 'STORE_BUSY' });
    expect(readLockOwner(lock)?.pid).toBe(child.pid);
    child.kill('SIGKILL');
  });

  it('a holder whose process is gone loses the lock at once', async () => {
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    const pid = child.pid!;
    await new Promise((r) => child.once('exit', r));
    const lock = join(dir, 'dead.lock');
    forge(lock, pid, 12345);
    const release = await acquireLock(lock, { waitMs: 0, purpose: 'the new holder', busy });
    expect(readLockOwner(lock)?.pid).toBe(process.pid);
    release();
  });

  it('a pid reused by a later process is not the holder (its start time differs)', async () => {
    const lock = join(dir, 'reused.lock');
    // Our own pid, but a start time it never had: whoever wrote this is gone.
    forge(lock, process.pid, (processStartTime(process.pid) ?? 0) + 1);
    const release = await acquireLock(lock, { waitMs: 0, purpose: 'the new holder', busy });
    expect(readLockOwner(lock)?.since).not.toBe('2020-01-01T00:00:00Z');
    release();
  });

  it('says who holds it after a second of waiting, and refuses early when asked to', async () => {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    children.push(child);
    await new Promise((r) => child.once('spawn', r));
    const lock = join(dir, 'node.lock');
    forge(lock, child.pid!, processStartTime(child.pid!));
    const early = await acquireLock(lock, { waitMs: 10_000, purpose: 'x', busy, refuseEarly: (o) => (o.purpose === 'a test' ? new Error(`held by ${o.pid}`) : null) }).catch((e: Error) => e);
    expect(String(early)).toContain(`held by ${child.pid}`);
    child.kill('SIGKILL');
  });

  it('a holder recorded in another PID namespace keeps the lock, even when its pid runs nothing here', async () => {
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    const pid = child.pid!;
    await new Promise((r) => child.once('exit', r));
    const lock = join(dir, 'other-namespace.lock');
    forge(lock, pid, 12345);
    writeFileSync(join(lock, 'owner.json'), JSON.stringify({ ...readLockOwner(lock), pidns: 'pid:[1]' }));
    await expect(acquireLock(lock, { waitMs: 0, purpose: 'a contender', busy })).rejects.toMatchObject({ code: 'STORE_BUSY' });
    expect(readLockOwner(lock)?.pid).toBe(pid);
    // Our own namespace, or none recorded (an older lock), is judged by pid as before.
    expect(seesPidsOf(pidNamespace())).toBe(true);
    expect(seesPidsOf(undefined)).toBe(true);
  });

  // An expiring lock (the working copy's command lease): where a pid says nothing, a missed renewal is what tells.
  const elsewhere: Array<[string, object]> = [
    ['in another PID namespace', { pidns: 'pid:[1]' }],
    ['on another host', { host: 'another-host.invalid' }],
  ];
  /** A lock as a holder `where` wrote it, expiring at `expires`, whose pid runs nothing here. */
  async function forgeExpiring(name: string, where: object, expires: number): Promise<string> {
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    const pid = child.pid!;
    await new Promise((r) => child.once('exit', r));
    const lock = join(dir, name);
    forge(lock, pid, 12345);
    writeFileSync(join(lock, 'owner.json'), JSON.stringify({ ...readLockOwner(lock), ...where, expires }));
    return lock;
  }

  it.each(elsewhere)('an expiring lock held %s is kept until its expiry, and cleared once that passes without renewal', async (_where, where) => {
    let t = 1_000_000;
    const now = () => t;
    const lock = await forgeExpiring(`expiring-${Object.keys(where)[0]}.lock`, where, 1_030_000);
    const before = readFileSync(join(lock, 'owner.json'), 'utf8');
    t = 1_029_999;
    await expect(acquireLock(lock, { waitMs: 0, purpose: 'a contender', busy, now })).rejects.toMatchObject({ code: 'STORE_BUSY' });
    expect(readFileSync(join(lock, 'owner.json'), 'utf8')).toBe(before);
    t = 1_030_000;
    const release = await acquireLock(lock, { waitMs: 0, purpose: 'the new holder', busy, now });
    expect(readLockOwner(lock)?.pid).toBe(process.pid);
    expect(release()).toBe(true);
  });

  it('renew pushes the expiry on, so a holder that keeps renewing keeps the lock past its first expiry', async () => {
    let t = 1_000_000;
    const now = () => t;
    const lock = join(dir, 'renewed.lock');
    const held = await acquireLock(lock, { waitMs: 0, purpose: 'a renewing holder', busy, ttlMs: 30_000, now });
    expect(readLockOwner(lock)?.expires).toBe(1_030_000);
    t += 20_000;
    expect(held.renew()).toBe(true);
    expect(readLockOwner(lock)?.expires).toBe(1_050_000);
    t += 20_000; // past the first expiry, short of the renewed one
    await expect(acquireLock(lock, { waitMs: 0, purpose: 'a contender', busy, ttlMs: 30_000, now })).rejects.toMatchObject({ code: 'STORE_BUSY' });
    expect(readLockOwner(lock)?.purpose).toBe('a renewing holder');
    expect(held()).toBe(true);
    expect(existsSync(lock)).toBe(false);
  });

  it('a holder that lost its lock learns it on renew and on release, and leaves the new holder\'s lock alone', async () => {
    let t = 1_000_000;
    const now = () => t;
    const lock = join(dir, 'lost.lock');
    const stalled = await acquireLock(lock, { waitMs: 0, purpose: 'a holder that stopped renewing', busy, ttlMs: 30_000, now });
    t += 30_000;
    const next = await acquireLock(lock, { waitMs: 0, purpose: 'the next holder', busy, ttlMs: 30_000, now });
    const theirs = readFileSync(join(lock, 'owner.json'), 'utf8');
    expect(stalled.renew()).toBe(false);
    expect(stalled()).toBe(false);
    expect(readFileSync(join(lock, 'owner.json'), 'utf8')).toBe(theirs);
    // A lock folder removed under its holder is lost too.
    rmSync(lock, { recursive: true, force: true });
    expect(next.renew()).toBe(false);
    expect(next()).toBe(false);
  });

  // What a sandbox with a PID namespace of its own does to a command (codex's bubblewrap does this to nxc).
  const canUnshare = (() => {
    try {
      execFileSync('unshare', ['--user', '--map-root-user', '--pid', '--fork', '--mount-proc', 'true'], { stdio: 'ignore', timeout: 10_000 });
      return true;
    } catch {
      return false;
    }
  })();
  /** Runs `acquireLock` on `lock` in a new PID namespace: 'took' or 'busy' (with `hold`, it keeps the lock until killed). */
  const namespaced = (lock: string, hold: boolean) => {
    const code = [
      `const { acquireLock } = await import(${JSON.stringify(join(REPO, 'dist', 'infra', 'fs.js'))});`,
      `try { await acquireLock(${JSON.stringify(lock)}, { waitMs: 0, purpose: 'a sandboxed command', busy: () => new Error('busy') }); console.log('took'); }`,
      `catch { console.log('busy'); }`,
      hold ? 'setInterval(() => {}, 1000);' : '',
    ].join('\n');
    return spawn('unshare', ['--user', '--map-root-user', '--pid', '--fork', '--kill-child', '--mount-proc', process.execPath, '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  };
  const firstLine = (c: ChildProcess) => new Promise<string>((resolve) => c.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())));

  it.skipIf(!canUnshare)('a process in its own PID namespace and one outside it never take each other\'s lock for dead', async () => {
    // Held outside: the process inside sees no such pid, and must not clear the lock.
    const outside = join(dir, 'held-outside.lock');
    const release = await acquireLock(outside, { waitMs: 0, purpose: 'the host', busy });
    const inside = namespaced(outside, false);
    children.push(inside);
    expect(await firstLine(inside)).toBe('busy');
    expect(readLockOwner(outside)?.pid).toBe(process.pid);
    release();
    // Held inside: its pid (a small number there) means another process, or none, out here.
    const held = join(dir, 'held-inside.lock');
    const holder = namespaced(held, true);
    children.push(holder);
    expect(await firstLine(holder)).toBe('took');
    expect(readLockOwner(held)?.pidns).not.toBe(pidNamespace());
    await expect(acquireLock(held, { waitMs: 0, purpose: 'the host', busy })).rejects.toMatchObject({ code: 'STORE_BUSY' });
    const gone = new Promise((r) => holder.once('exit', r));
    holder.kill('SIGKILL'); // --kill-child takes the process inside with it
    await gone;
  });
});
