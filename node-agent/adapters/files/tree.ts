// Files as the runtime's tools and the lease's mover look at them: look at one, list a folder, walk a tree,
// write one in a single step. Paths come here already confined by the caller; nothing here decides reach.
import { type Dirent, type Stats, statSync } from 'node:fs';
import { access, mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../../../infra/index.js';

/** What is at `abs` (links followed), or null when nothing is or it cannot be looked at. */
export function statOrNull(abs: string): Promise<Stats | null> {
  return stat(abs).catch(() => null);
}

/** {@link statOrNull}, synchronously. */
export function statSyncOrNull(abs: string): Stats | null {
  try {
    return statSync(abs);
  } catch {
    return null;
  }
}

/** Whether anything is at `abs`. */
export function pathExists(abs: string): Promise<boolean> {
  return access(abs).then(
    () => true,
    () => false,
  );
}

/** A folder's entries, unsorted; rejects with the errno error when it cannot be listed. */
export function listFolder(abs: string): Promise<Dirent[]> {
  return readdir(abs, { withFileTypes: true });
}

/**
 * The regular files under `dir`, in name order, depth first; folders named in `skip` are not entered and a
 * folder that cannot be listed is passed over. Links are not followed (they are neither files nor folders here).
 */
export async function* walkFiles(dir: string, skip: ReadonlySet<string>): AsyncGenerator<string> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (!skip.has(e.name)) yield* walkFiles(p, skip);
    } else if (e.isFile()) yield p;
  }
}

/** Writes through infra's atomic write (a synced temporary file renamed over it), so a reader never sees half a file; missing folders are made. */
export async function writeAtomic(abs: string, content: string): Promise<void> {
  await mkdir(path.dirname(abs), { recursive: true });
  writeFileAtomic(abs, content, { mode: 0o644 });
}
