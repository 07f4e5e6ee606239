// File-system pieces every part of Nexus shares: one atomic write, one process-liveness check, and
// one exclusive lock whose holder is known by pid (and, only where it asks for one, by an expiry it renews).
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';

/** Writes `data` to `file` through a synced temporary file renamed over it: readers see the old or the new, never half. */
export function writeFileAtomic(file: string, data: string | Uint8Array, opts: { mode?: number } = {}): void {
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    const fd = openSync(tmp, 'wx', opts.mode ?? 0o600);
    try {
      writeFileSync(fd, data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

const HAS_PROCFS = existsSync('/proc/self/stat');

/** The fields of /proc/<pid>/stat after the command name, or null. */
function procStat(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

let ownPidNamespace: string | null | undefined;

/**
 * This process's PID namespace ("pid:[4026531836]"), or null where it cannot be read. A pid means something
 * only inside its namespace: a sandbox that gives its commands a namespace of their own (codex's bubblewrap
 * does) shows them none of the processes outside it, so every outside pid looks dead from in there.
 */
export function pidNamespace(): string | null {
  if (ownPidNamespace === undefined) {
    try {
      ownPidNamespace = readlinkSync('/proc/self/ns/pid');
    } catch {
      ownPidNamespace = null;
    }
  }
  return ownPidNamespace;
}

/** Whether a pid recorded in namespace `ns` can be looked up from here; a pid recorded without one is taken as ours. */
export function seesPidsOf(ns: string | null | undefined): boolean {
  if (ns === undefined || ns === null) return true;
  const own = pidNamespace();
  return own === null || own === ns;
}

/** When the process started, in clock ticks since boot (Linux), so a recycled pid is told from its first owner. */
export function processStartTime(pid: number): number | null {
  if (!HAS_PROCFS) return null;
  const fields = procStat(pid);
  const ticks = fields?.[19];
  return ticks === undefined ? null : Number(ticks);
}

/**
 * True while `pid` names a running process (a zombie does not count: a killed process reparented
 * to an init that never reaps still answers kill(0)). With `startTime`, the process must also be
 * the one that started then, not a later process given the same pid.
 */
export function processAlive(pid: number, startTime?: number | null): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (!HAS_PROCFS) return true;
  const fields = procStat(pid);
  if (fields === null) return false;
  if (fields[0] === 'Z' || fields[0] === 'X') return false;
  if (startTime !== undefined && startTime !== null && Number(fields[19]) !== startTime) return false;
  return true;
}

/** Who holds a lock: written inside the lock folder by the process that made it. */
export type LockOwner = {
  pid: number;
  start: number | null;
  host: string;
  since: string;
  purpose: string;
  home?: string;
  /** Its PID namespace (absent in older locks). */
  pidns?: string;
  /** Only in a lock taken with `ttlMs`: the time (ms) after which a holder that did not renew counts as gone. */
  expires?: number;
};

export type LockOptions = {
  /** How long to keep trying while a live process holds the lock (0: one try). */
  waitMs: number;
  /** What the holder does with it, for the message a waiting process prints ("a command", "the node"). */
  purpose: string;
  /** The NEXUS_HOME of the holder, recorded so a waiting process can say which node holds it. */
  home?: string;
  /** Called once, after about a second of waiting, with the holder (so a terminal can say what is waited for). */
  onWait?: (owner: LockOwner | null) => void;
  /** Called when the wait runs out with the lock still held: the caller's coded error. */
  busy: (owner: LockOwner | null) => Error;
  /** Called as soon as the holder is seen: return an error to give up at once instead of waiting (e.g. a node holds it). */
  refuseEarly?: (owner: LockOwner) => Error | null;
  /**
   * Makes the lock expire `ttlMs` after it is taken or last renewed. A pid is the only judge of a holder
   * on this host in our PID namespace; elsewhere (another host, a sandbox's namespace) it means nothing
   * here, and an expiry the holder keeps pushing is what tells a crashed one from a live one.
   */
  ttlMs?: number;
  /** The clock expiries are set and judged by (a test's fake one); Date.now by default. */
  now?: () => number;
  /** Fields written into owner.json beside the holder's own, for whoever reads who holds it (a command lease's id and owner). */
  extra?: Record<string, string | number>;
};

export type Release = () => void;

/** A lock taken: calling it releases it, true when the lock was still ours (false: cleared or taken over meanwhile). */
export type HeldLock = {
  (): boolean;
  /** Pushes the expiry on (when the lock has one); false, writing nothing, when the owner record is no longer ours. */
  renew(): boolean;
};

const OWNER_FILE = 'owner.json';
/** A lock folder with no owner file yet is being made; past this age its maker died mid-way. */
const HALF_MADE_MS = 10_000;

export function readLockOwner(lock: string): LockOwner | null {
  try {
    return JSON.parse(readFileSync(join(lock, OWNER_FILE), 'utf8')) as LockOwner;
  } catch {
    return null;
  }
}

function ownerGone(lock: string, owner: LockOwner | null, now: number): boolean {
  if (owner === null) {
    try {
      return Date.now() - statSync(lock).mtimeMs > HALF_MADE_MS;
    } catch {
      return true; // released meanwhile
    }
  }
  // A holder that promised to renew and did not is gone wherever it runs: for one elsewhere it is the only sign there is.
  if (typeof owner.expires === 'number' && now >= owner.expires) return true;
  if (owner.host !== hostname()) return false; // another machine's process: its liveness cannot be told here
  if (!seesPidsOf(owner.pidns)) return false; // a process inside a sandbox's PID namespace, or outside ours: likewise
  return !processAlive(owner.pid, owner.start);
}

/**
 * Moves `lock` aside and removes it there if `removable(aside)` still holds once it is moved; otherwise puts
 * it back. Looking again after the rename is what keeps two processes from removing a lock taken meanwhile.
 * True when it removed the folder it meant to.
 */
function removeAside(lock: string, tag: string, removable: (aside: string) => boolean): boolean {
  const aside = `${lock}.${tag}-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    renameSync(lock, aside);
  } catch {
    return false; // somebody else cleared or re-took it
  }
  const ok = removable(aside);
  if (!ok) {
    try {
      renameSync(aside, lock);
      return false;
    } catch {
      // A newer holder made the folder again: the one moved aside had lost it already.
    }
  }
  rmSync(aside, { recursive: true, force: true });
  return ok;
}

/** Removes a dead holder's lock folder; true if it did. */
function clearStale(lock: string, now: () => number): boolean {
  return removeAside(lock, 'stale', (aside) => {
    const owner = readLockOwner(aside);
    return owner === null || ownerGone(aside, owner, now());
  });
}

/** Clears `lock` if its holder is gone (dead, or past an expiry it did not renew) without taking it: the holder cleared, else null. */
export function clearStaleLock(lock: string, now: () => number = Date.now): LockOwner | null {
  const owner = readLockOwner(lock);
  if (owner === null || !ownerGone(lock, owner, now())) return null;
  return clearStale(lock, now) ? owner : null;
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** Removes our own lock folder, unless a holder took it since (its owner record is no longer what we wrote). */
function removeOwn(lock: string, written: string): boolean {
  return removeAside(lock, 'released', (aside) => readText(join(aside, OWNER_FILE)) === written);
}

/** One attempt: the release on success, the current holder otherwise. */
function tryLock(lock: string, opts: LockOptions): HeldLock | { held: LockOwner | null } {
  const now = opts.now ?? Date.now;
  mkdirSync(dirname(lock), { recursive: true });
  try {
    mkdirSync(lock, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const owner = readLockOwner(lock);
    if (ownerGone(lock, owner, now())) {
      clearStale(lock, now);
      return tryLock(lock, opts);
    }
    return { held: owner };
  }
  const me: LockOwner = {
    ...opts.extra,
    pid: process.pid,
    start: processStartTime(process.pid),
    host: hostname(),
    since: new Date().toISOString(),
    purpose: opts.purpose,
    ...(opts.home === undefined ? {} : { home: opts.home }),
    ...(pidNamespace() === null ? {} : { pidns: pidNamespace()! }),
    ...(opts.ttlMs === undefined ? {} : { expires: now() + opts.ttlMs }),
  };
  const file = join(lock, OWNER_FILE);
  // The lock is ours while owner.json is, to the byte, what we last wrote: a takeover or clearing shows as any change.
  let written = JSON.stringify(me) + '\n';
  writeFileAtomic(file, written);
  let released = false;
  const release = () => {
    if (released) return false;
    released = true;
    return readText(file) === written && removeOwn(lock, written);
  };
  const renew = () => {
    if (released || readText(file) !== written) return false;
    if (opts.ttlMs === undefined) return true;
    const next = JSON.stringify({ ...me, expires: now() + opts.ttlMs }) + '\n';
    try {
      writeFileAtomic(file, next);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false; // the folder was cleared under us
      throw err;
    }
    written = next;
    return true;
  };
  return Object.assign(release, { renew });
}

/**
 * Takes the exclusive lock folder `lock`, waiting up to `opts.waitMs` while a live process holds
 * it. A holder is dead when its pid (with its start time) no longer runs: a slow or starved holder
 * keeps its lock however long it takes, and a crashed one loses it at the next attempt. With
 * `opts.ttlMs`, a holder that lets its expiry pass without `renew` is also gone, wherever it runs.
 */
export async function acquireLock(lock: string, opts: LockOptions): Promise<HeldLock> {
  const started = Date.now();
  let told = false;
  for (let wait = 10; ; wait = Math.min(wait * 2, 200)) {
    const got = tryLock(lock, opts);
    if (typeof got === 'function') return got;
    const early = got.held && opts.refuseEarly ? opts.refuseEarly(got.held) : null;
    if (early) throw early;
    const waited = Date.now() - started;
    if (waited >= opts.waitMs) throw opts.busy(got.held);
    if (!told && waited >= 1_000) {
      told = true;
      opts.onWait?.(got.held);
    }
    await new Promise((r) => setTimeout(r, Math.min(wait, opts.waitMs - waited)));
  }
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/** `acquireLock` for the short, synchronous critical sections (a read-change-write of a small file). */
export function acquireLockSync(lock: string, opts: LockOptions): HeldLock {
  const started = Date.now();
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    const got = tryLock(lock, opts);
    if (typeof got === 'function') return got;
    if (Date.now() - started >= opts.waitMs) throw opts.busy(got.held);
    Atomics.wait(pause, 0, 0, wait);
  }
}

/** Describes a lock holder for a person: "pid 4711 (the node of /home/a/.nexus), since ...". */
export function describeOwner(owner: LockOwner | null): string {
  if (owner === null) return 'a process that is still starting';
  return `pid ${owner.pid} (${owner.purpose}${owner.home ? ` of NEXUS_HOME=${owner.home}` : ''}${owner.host !== hostname() ? ` on ${owner.host}` : ''}), since ${owner.since}`;
}
