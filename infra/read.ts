// Reading files that somebody else may have put there (a repository's declarations, a workspace's
// .nxs files): regular files only, never more than a cap, never waiting on a FIFO or a device.
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from 'node:fs';
import { lstat, open } from 'node:fs/promises';

/** The text of a file, or why it was not read (`code`: the errno code, when the system refused). */
export type CappedRead = { text: string } | { reason: string; code?: string };
/** The bytes of a file, or why they were not read. */
export type CappedBytes = { bytes: Buffer } | { reason: string; code?: string };

/** How long {@link readCapped} waits for a file's bytes (a regular file on a hung network mount). */
export const READ_TIMEOUT_MS = 5_000;

// O_NOFOLLOW: a link swapped in after the look is refused by open; O_NONBLOCK: a FIFO swapped in is
// opened without waiting for a writer, then refused by the check on what was opened.
const FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

function notRegular(st: { isFile(): boolean; isSymbolicLink(): boolean }): string | null {
  if (st.isFile()) return null;
  return st.isSymbolicLink() ? 'is a symbolic link; only regular files are read' : 'is not a regular file';
}

function overCap(maxBytes: number): { reason: string } {
  return { reason: `the file is larger than the ${maxBytes}-byte limit` };
}

function failed(err: unknown): { reason: string; code?: string } {
  const code = (err as NodeJS.ErrnoException).code;
  return { reason: `the file cannot be read (${code ?? (err as Error).message})`, ...(code === undefined ? {} : { code }) };
}

/** A buffer for a file that said it had `size` bytes: room for one more, so growth past the cap shows. */
function startBuffer(size: number, maxBytes: number): Buffer {
  return Buffer.alloc(Math.min(maxBytes, Math.max(size, 4096)) + 1);
}

/** The buffer, twice as large (at most `maxBytes + 1`), holding what was read so far. */
function grow(buffer: Buffer, maxBytes: number): Buffer {
  const next = Buffer.alloc(Math.min(maxBytes + 1, buffer.length * 2));
  buffer.copy(next);
  return next;
}

/**
 * Reads `absolute` as UTF-8 text when it is a regular file (not a link to one) of at most `maxBytes`.
 * The cap holds while reading (never more than `maxBytes + 1` bytes are read, whatever the file's
 * size said or grows to); a symlink, a FIFO or a device is refused before it is opened, and what was
 * opened is checked again. Gives up after `timeoutMs`. Never throws.
 */
export async function readCapped(absolute: string, maxBytes: number, opts: { timeoutMs?: number } = {}): Promise<CappedRead> {
  const read = await readCappedBytes(absolute, maxBytes, opts);
  return 'bytes' in read ? { text: read.bytes.toString('utf8') } : read;
}

/** {@link readCapped}'s bytes, as they are (an index file, anything that is not text). */
export async function readCappedBytes(absolute: string, maxBytes: number, opts: { timeoutMs?: number } = {}): Promise<CappedBytes> {
  let timer: NodeJS.Timeout | undefined;
  const timeoutMs = opts.timeoutMs ?? READ_TIMEOUT_MS;
  const timedOut = new Promise<CappedBytes>((resolve) => {
    timer = setTimeout(() => resolve({ reason: `the file was not read within ${timeoutMs} ms` }), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([readBytesNow(absolute, maxBytes), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

async function readBytesNow(absolute: string, maxBytes: number): Promise<CappedBytes> {
  try {
    const before = await lstat(absolute);
    const bad = notRegular(before);
    if (bad !== null) return { reason: bad };
    if (before.size > maxBytes) return overCap(maxBytes);
    const handle = await open(absolute, FLAGS);
    try {
      const st = await handle.stat();
      if (!st.isFile() || st.ino !== before.ino || st.dev !== before.dev) return { reason: 'changed while it was being read' };
      let buffer = startBuffer(st.size, maxBytes);
      let filled = 0;
      for (;;) {
        if (filled === buffer.length) buffer = grow(buffer, maxBytes);
        const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
        if (filled > maxBytes) return overCap(maxBytes);
      }
      return { bytes: buffer.subarray(0, filled) };
    } finally {
      await handle.close();
    }
  } catch (err) {
    return failed(err);
  }
}

/** {@link readCapped} for the synchronous paths (finding a workspace, its small JSON files). */
export function readCappedSync(absolute: string, maxBytes: number): CappedRead {
  try {
    const before = lstatSync(absolute);
    const bad = notRegular(before);
    if (bad !== null) return { reason: bad };
    if (before.size > maxBytes) return overCap(maxBytes);
    const fd = openSync(absolute, FLAGS);
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || st.ino !== before.ino || st.dev !== before.dev) return { reason: 'changed while it was being read' };
      let buffer = startBuffer(st.size, maxBytes);
      let filled = 0;
      for (;;) {
        if (filled === buffer.length) buffer = grow(buffer, maxBytes);
        const n = readSync(fd, buffer, filled, buffer.length - filled, filled);
        if (n === 0) break;
        filled += n;
        if (filled > maxBytes) return overCap(maxBytes);
      }
      return { text: buffer.subarray(0, filled).toString('utf8') };
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    return failed(err);
  }
}

/**
 * The text of `absolute` (see {@link readCappedSync}), or an Error naming the file and why; its `code`
 * is the errno code when the system refused (ENOENT for a missing file).
 */
export function readSmallFileSync(absolute: string, maxBytes: number): string {
  const read = readCappedSync(absolute, maxBytes);
  if ('text' in read) return read.text;
  throw Object.assign(new Error(`${absolute}: ${read.reason}`), read.code === undefined ? {} : { code: read.code });
}
