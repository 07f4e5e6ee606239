// Private folder trees: folders 0700, files 0600. The relay's data folder, a workspace's store and the
// store template under NEXUS_HOME hold message text and token hashes; PGlite writes its files 0666
// whatever the umask, so the modes are set here, and a tree is checked before it is trusted.
import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Folder and file modes for a tree. */
export type TreeModes = { readonly dir: number; readonly file: number };

/** Readable and writable by the owner alone. */
export const PRIVATE_MODES: TreeModes = { dir: 0o700, file: 0o600 };
/** Readable by everybody, writable by the owner alone: what a package ships. */
export const SHARED_MODES: TreeModes = { dir: 0o755, file: 0o644 };

/** Makes `dir` (and its parents) when missing; `dir` itself is made or set 0700. */
export function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_MODES.dir });
  chmodSync(dir, PRIVATE_MODES.dir);
}

/**
 * Sets every folder under `root` (itself included) to `modes.dir` and every file to `modes.file`;
 * symlinks are left alone (never followed). Returns how many entries changed. A folder made by an
 * older version, or files written with the process umask, end up as asked.
 */
export function tightenTree(root: string, modes: TreeModes = PRIVATE_MODES): number {
  let changed = 0;
  const stack = [root];
  while (stack.length > 0) {
    const path = stack.pop()!;
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (!st || st.isSymbolicLink()) continue;
    const want = st.isDirectory() ? modes.dir : modes.file;
    if ((st.mode & 0o777) !== want) {
      chmodSync(path, want);
      changed += 1;
    }
    if (st.isDirectory()) for (const name of readdirSync(path)) stack.push(join(path, name));
  }
  return changed;
}

/**
 * Why the tree at `root` cannot be trusted to hold only what its owner put there, or null: an entry
 * that is not a plain file or folder (a link, a FIFO, a device), one writable by group or others, or
 * one owned by a user outside `owners`. The first problem found is named.
 */
export function treeProblem(root: string, owners: ReadonlySet<number>): string | null {
  const stack = [root];
  while (stack.length > 0) {
    const path = stack.pop()!;
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (!st) return `${path} is missing`;
    if (!st.isDirectory() && !st.isFile()) return `${path} is not a plain file or folder`;
    if ((st.mode & 0o022) !== 0) return `${path} is writable by others (mode ${(st.mode & 0o777).toString(8)})`;
    if (!owners.has(st.uid)) return `${path} is owned by uid ${st.uid}`;
    if (st.isDirectory()) for (const name of readdirSync(path)) stack.push(join(path, name));
  }
  return null;
}

/** How many {@link withPrivateUmask} calls are running, and the umask to put back when the last one ends. */
let privateCalls = 0;
let umaskBefore: number | undefined;

/**
 * Runs `fn` with the process umask at 077, so what is created meanwhile is private from birth. The
 * umask is process-wide (anything else created in that window is private too, which does no harm);
 * in a worker thread, where it cannot be set, `fn` runs as is and {@link tightenTree} does the work.
 * Calls may overlap (two stores opened at once): the first sets 077, and only the last to end puts back
 * the umask from before the first, so neither ends up running under 022 nor leaves 077 behind.
 */
export async function withPrivateUmask<T>(fn: () => Promise<T>): Promise<T> {
  if (privateCalls === 0) {
    try {
      umaskBefore = process.umask(0o077);
    } catch {
      umaskBefore = undefined;
    }
  }
  privateCalls++;
  try {
    return await fn();
  } finally {
    privateCalls--;
    if (privateCalls === 0 && umaskBefore !== undefined) process.umask(umaskBefore);
  }
}
