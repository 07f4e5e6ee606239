// Whether git could find a repository of this user's from a folder, told from the file system alone: a folder that
// no repository holds (a workspace outside git) then costs no git process on every message, and one that only
// another user's repository holds is never read or written as if it were this user's working copy.
import { lstatSync, realpathSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * False when git would find no repository of this user's from `dir`: the folder is missing, or the nearest folder
 * at or above it (after symbolic links are resolved, as git's own `getcwd` sees them) that holds a `.git` entry of
 * any kind (a folder, a gitfile, a dangling link) or a `HEAD` entry (a folder that may itself be a repository's,
 * whose config can name a work tree) is not this user's, or its entry is not.
 *
 * Git's discovery starts only from those entries, so true means "ask git", as before. The owner test is git's
 * own (`safe.directory`), kept whatever that setting says: another user who makes `/tmp/.git` must neither break
 * every command of a workspace under `/tmp` (git refuses such a repository with an error) nor, where a person set
 * `safe.directory=*`, have the lease commit and clean that person's files in a repository the other user reads.
 * An entry that cannot be looked at counts as present and as this user's; git then decides.
 */
export function mayHoldRepository(dir: string): boolean {
  let at: string;
  try {
    at = realpathSync(dir);
  } catch (err) {
    return !isAbsent(err);
  }
  for (;;) {
    const entry = look(join(at, '.git')) ?? look(join(at, 'HEAD'));
    if (entry !== null) return ours(entry) && ours(look(at));
    const up = dirname(at);
    if (up === at) return false;
    at = up;
  }
}

/** The entry's facts, null when it does not exist, 'unknown' when it cannot be looked at. */
function look(path: string): Stats | 'unknown' | null {
  try {
    return lstatSync(path);
  } catch (err) {
    return isAbsent(err) ? null : 'unknown';
  }
}

function ours(entry: Stats | 'unknown' | null): boolean {
  const me = process.geteuid?.();
  return me === undefined || entry === null || entry === 'unknown' || entry.uid === me;
}

function isAbsent(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
