// A turn's transcript on disk (`turn-<n>.log` in its session folder, written mode 600 by the turn's
// supervisor), read without following a link: a session could plant one to have the node read another file.
import { constants } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';

const TURN_FILE = /^turn-(\d+)\.log$/;

/** Whether the session folder `dir` is there as a folder of its own (a link to one does not count). */
export async function isSessionFolder(dir: string): Promise<boolean> {
  const st = await lstat(dir).catch(() => null);
  return st !== null && st.isDirectory();
}

/** The turns with a transcript in session folder `dir`, lowest first; none when it cannot be listed. */
export async function transcriptTurns(dir: string): Promise<number[]> {
  const names = await readdir(dir).catch(() => null);
  if (names === null) return [];
  return names.flatMap((n) => {
    const m = TURN_FILE.exec(n);
    return m === null ? [] : [Number(m[1])];
  }).sort((a, b) => a - b);
}

/** Where turn `turn`'s transcript is kept in session folder `dir`. */
export function transcriptFile(dir: string, turn: number): string {
  return join(dir, `turn-${turn}.log`);
}

/**
 * The last `maxBytes` of transcript `file` as text, with the file's size and mode; null when it is not a regular
 * file. A link swapped in after that look is refused by the open.
 */
export async function readTranscriptTail(file: string, maxBytes: number): Promise<{ text: string; size: number; mode: number } | null> {
  const before = await lstat(file);
  if (!before.isFile()) return null;
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const { size, mode } = await handle.stat();
    const length = Math.min(size, maxBytes);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    return { text: buffer.toString('utf8'), size, mode };
  } finally {
    await handle.close();
  }
}
