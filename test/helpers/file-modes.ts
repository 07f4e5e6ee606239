// File modes under a folder, for the tests that check stores and data folders are private, and the room a
// folder takes on disk.
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The permission bits of one path (a link's own, not its target's). */
export function mode(path: string): number {
  return lstatSync(path).mode & 0o777;
}

/** Every entry under `root` (itself included) as `d700` / `f600` style: kind and permission bits. */
export function modes(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (path: string) => {
    const st = lstatSync(path);
    out.set(path, `${st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : 'f'}${(st.mode & 0o777).toString(8)}`);
    if (st.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(root);
  return out;
}

/** The entries whose mode is not private: folders 0700, files 0600. */
export function notPrivate(root: string): string[] {
  return [...modes(root)].filter(([, m]) => m !== 'd700' && m !== 'f600').map(([p, m]) => `${m} ${p}`);
}

/** Bytes the tree at `root` takes on disk: allocated blocks, so a sparse file's holes count for nothing. */
export function allocatedBytes(root: string): number {
  const st = lstatSync(root);
  if (!st.isDirectory()) return st.blocks * 512;
  return readdirSync(root).reduce((sum, name) => sum + allocatedBytes(join(root, name)), st.blocks * 512);
}
