// The files a lease's move touches beside git itself: the journal and scratch files kept outside the work tree,
// and the paths of the work tree a move deletes.
import { chmod, readFile, rm, rmdir, unlink } from 'node:fs/promises';
import { PRIVATE_MODES } from '../../../infra/index.js';

/** The text of a journal file, or null when there is none. */
export async function readJournalText(file: string): Promise<string | null> {
  return readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
}

/** Removes a file of the lease's own (journal, scratch index, kept bundle); one already gone is fine. */
export async function removeOwnFile(file: string): Promise<void> {
  await rm(file, { force: true });
}

/** Leaves a file the lease wrote (a kept bundle) readable by its owner alone. */
export async function makeFilePrivate(file: string): Promise<void> {
  await chmod(file, PRIVATE_MODES.file);
}

/**
 * Deletes `path` (bytes, relative to the work tree `top`, which ends in `/`) and then each parent folder it
 * leaves empty, up to the top. A path already gone is fine, so an interrupted move can run again.
 * Bytes throughout: a name that is not UTF-8 must still reach the file it names.
 */
export async function deleteFromTree(top: Buffer, path: Buffer): Promise<void> {
  await unlink(Buffer.concat([top, path])).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  let end = path.lastIndexOf(0x2f);
  while (end > 0) {
    const dir = Buffer.concat([top, path.subarray(0, end)]);
    const removed = await rmdir(dir).then(() => true, () => false);
    if (!removed) return;
    end = path.subarray(0, end).lastIndexOf(0x2f);
  }
}
