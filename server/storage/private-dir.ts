// The relay's data folder is private: folders 0700, files 0600. It holds every stream's ops and the token hashes.
import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const DIR_MODE = 0o700;
const FILE_MODE = 0o600;

/** Makes `dir` (and its parents) when missing; `dir` itself is made or set 0700. */
export function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  chmodSync(dir, DIR_MODE);
}

/**
 * Sets every folder under `root` (itself included) to 0700 and every file to 0600; symlinks are left
 * alone (never followed). Returns how many entries changed. A folder made by an older relay, or files
 * written with the process umask, end up private.
 */
export function tightenTree(root: string): number {
  let changed = 0;
  const stack = [root];
  while (stack.length > 0) {
    const path = stack.pop()!;
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (!st || st.isSymbolicLink()) continue;
    const want = st.isDirectory() ? DIR_MODE : FILE_MODE;
    if ((st.mode & 0o777) !== want) {
      chmodSync(path, want);
      changed += 1;
    }
    if (st.isDirectory()) for (const name of readdirSync(path)) stack.push(join(path, name));
  }
  return changed;
}

/**
 * Runs `fn` with the process umask at 077, so what is created meanwhile is private from birth. The
 * umask is process-wide (anything else created in that window is private too, which does no harm);
 * in a worker thread, where it cannot be set, `fn` runs as is and {@link tightenTree} does the work.
 */
export async function withPrivateUmask<T>(fn: () => Promise<T>): Promise<T> {
  let previous: number | undefined;
  try {
    previous = process.umask(0o077);
  } catch {
    previous = undefined;
  }
  try {
    return await fn();
  } finally {
    if (previous !== undefined) process.umask(previous);
  }
}
