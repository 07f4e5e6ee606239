// Paths resolved through their links, as the file tools' confinement checks them: a link must not lead out.
import { realpathSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import path from 'node:path';

/** The real path of an existing folder or file (links resolved); throws when it cannot be resolved. */
export function realPath(p: string): Promise<string> {
  return realpath(p);
}

/** {@link realPath}, synchronously: for the shell checks that run while a command line is parsed. */
export function realPathSync(p: string): string {
  return realpathSync(p);
}

/**
 * The real path of `p`, or of its nearest existing ancestor with the rest appended: a file about to be
 * written does not exist yet, and its folder's links must still be resolved before it is checked.
 */
export async function realOrAncestor(p: string): Promise<string> {
  try {
    return await realpath(p);
  } catch {
    const up = path.dirname(p);
    return up === p ? p : path.join(await realOrAncestor(up), path.basename(p));
  }
}

/** {@link realOrAncestor}, synchronously. */
export function realOrAncestorSync(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    const up = path.dirname(p);
    return up === p ? p : path.join(realOrAncestorSync(up), path.basename(p));
  }
}
