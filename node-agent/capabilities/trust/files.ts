// Small JSON files under .nxs/: read, written atomically (mode 600), changed under a short file lock.
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fchmodSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import lockfile from 'proper-lockfile';
import { NexusError } from '../../../protocol/errors.js';

/** Reads and parses a JSON file; `null` when it does not exist. Throws STORE_FAILED when unreadable or not JSON. */
export function readJsonFile(file: string): unknown {
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    throw new NexusError('STORE_FAILED', `${file} is not readable JSON; fix it or move it away`);
  }
}

/** Writes `value` as JSON to `file`: a temporary file (mode 600, synced) renamed over it. */
export function writeJsonFileAtomic(file: string, value: unknown): void {
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      fchmodSync(fd, 0o600);
      writeFileSync(fd, JSON.stringify(value, null, 2) + '\n', 'utf8');
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw new NexusError('STORE_FAILED', `could not write ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

const LOCK_WAIT_MS = 5_000;
const LOCK_STALE_MS = 10_000;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Runs `fn` holding an exclusive lock on `file` (a proper-lockfile folder next to it), so two
 * processes changing the same file do not lose each other's change. Waits up to 5 s, then
 * STORE_BUSY. The lock is held for a read, a change and a write: milliseconds.
 */
export function withFileLock<T>(file: string, fn: () => T): T {
  const deadline = Date.now() + LOCK_WAIT_MS;
  let release: (() => void) | undefined;
  for (let wait = 5; release === undefined; wait = Math.min(wait * 2, 100)) {
    try {
      release = lockfile.lockSync(file, { realpath: false, lockfilePath: `${file}.lock`, stale: LOCK_STALE_MS });
    } catch (err) {
      if ((err as { code?: string }).code !== 'ELOCKED' || Date.now() > deadline) {
        throw new NexusError('STORE_BUSY', `${file} is held by another process`, { cause: String(err) });
      }
      Atomics.wait(pause, 0, 0, wait);
    }
  }
  try {
    return fn();
  } finally {
    try {
      release();
    } catch {
      /* already released or taken over as stale: nothing left to do */
    }
  }
}
