// The trust folder's files on disk: small JSON files under .nxs/ (read, written atomically with mode 600,
// changed under a short file lock), and a public key file a person names on the command line.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { acquireLockSync, describeOwner, readSmallFileSync, writeFileAtomic } from '../../../infra/index.js';
import { NexusError } from '../../../protocol/errors.js';

/** The most a JSON file here (the trust file) may weigh. */
const JSON_FILE_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Reads and parses a JSON file (a regular file of at most 16 MiB: never a FIFO or a link to a device);
 * `null` when it does not exist. Throws CONFIG_INVALID when unreadable or not JSON.
 */
export function readJsonFile(file: string): unknown {
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readSmallFileSync(file, JSON_FILE_MAX_BYTES));
  } catch (err) {
    throw new NexusError('CONFIG_INVALID', `${file} is not readable JSON; fix it or move it away`, undefined, { cause: err });
  }
}

/** Writes `value` as JSON to `file`: a temporary file (mode 600, synced) renamed over it. */
export function writeJsonFileAtomic(file: string, value: unknown): void {
  try {
    writeFileAtomic(file, JSON.stringify(value, null, 2) + '\n');
  } catch (err) {
    throw new NexusError('STORE_FAILED', `could not write ${file}: ${err instanceof Error ? err.message : String(err)}`, undefined, { cause: err });
  }
}

const LOCK_WAIT_MS = 5_000;

/**
 * Runs `fn` holding an exclusive lock on `file` (a folder next to it whose holder is known by pid), so
 * two processes changing the same file do not lose each other's change. Waits up to 5 s, then
 * STORE_BUSY. The lock is held for a read, a change and a write: milliseconds.
 */
export function withFileLock<T>(file: string, fn: () => T): T {
  const release = acquireLockSync(`${file}.lock`, {
    waitMs: LOCK_WAIT_MS,
    purpose: `changing ${file}`,
    busy: (owner) => new NexusError('STORE_BUSY', `${file} is held by ${describeOwner(owner)}`),
  });
  try {
    return fn();
  } finally {
    release();
  }
}

/**
 * The text of a key file named on the command line (links followed: the person chose the path), or why it was
 * not read: `missing` when nothing is there, `not-small-file` when it is not a regular file of at most `maxBytes`.
 */
export function readKeyFileText(file: string, maxBytes: number): { text: string } | { problem: 'missing' | 'not-small-file' } {
  if (!existsSync(file)) return { problem: 'missing' };
  const stat = statSync(file);
  if (!stat.isFile() || stat.size > maxBytes) return { problem: 'not-small-file' };
  return { text: readFileSync(file, 'utf8') };
}
