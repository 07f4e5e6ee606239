// Whether git could find a repository from a folder, told from the file system alone: a folder that no repository
// holds (a workspace outside git) then costs no git process on every message.
import { lstatSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * False only when git would find no repository from `dir`: the folder is missing, or neither it nor any folder
 * above it (after symbolic links are resolved, as git's own `getcwd` sees them) holds a `.git` entry of any kind
 * (a folder, a gitfile, a dangling link) or a `HEAD` entry (a folder that may itself be a repository's, whose
 * config can name a work tree). Git's discovery starts only from those, so true means "ask git", as before.
 * An entry that cannot be looked at counts as present.
 */
export function mayHoldRepository(dir: string): boolean {
  let at: string;
  try {
    at = realpathSync(dir);
  } catch (err) {
    return !isAbsent(err);
  }
  for (;;) {
    if (present(join(at, '.git')) || present(join(at, 'HEAD'))) return true;
    const up = dirname(at);
    if (up === at) return false;
    at = up;
  }
}

function present(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch (err) {
    return !isAbsent(err);
  }
}

function isAbsent(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
