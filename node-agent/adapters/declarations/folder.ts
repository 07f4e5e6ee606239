// Listing a folder of declaration files: names read from the folder itself, so a name typed by a person is
// matched against what is there and never joined into a path that could walk out of it.
import { readdir } from 'node:fs/promises';
import path from 'node:path';

/**
 * The entry names in `root`'s folder `dir` (`.nxs-channels`), or null when there is no such folder.
 * @throws the system's error when the folder is there but cannot be listed.
 */
export async function declarationFileNames(root: string, dir: string): Promise<string[] | null> {
  try {
    return await readdir(path.join(root, dir));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
