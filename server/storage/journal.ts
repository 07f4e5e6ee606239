// The relay's append journal: pushes written to a file before they are acknowledged, kept until the
// database holds them, and put into it again at the next open if the process ended first.
import { closeSync, existsSync, fstatSync, openSync, readdirSync, readFileSync, unlink, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { makePrivateDir } from '../../infra/index.js';

/** Ops taken in one push: the stream, the seq of the first, and each op's id, author workspace and exact text. */
export type JournalAppend = { kind: 'append'; stream: string; first: number; ops: Array<{ id: string; workspace: string | null; text: string }> };

/** A stream deleted: what the journal holds of it from before does not belong to a stream made later by that name. */
export type JournalDrop = { kind: 'drop'; stream: string };

export type JournalRecord = JournalAppend | JournalDrop;

/** A file past this size is closed and a new one begun; the old one goes once the database holds all of it. */
const ROTATE_BYTES = 16 * 1024 * 1024;

/** Each record: its payload's length and CRC-32 (little-endian u32 each), then the payload (JSON). */
const HEADER = 8;

function encode(rec: JournalRecord): Buffer {
  const body = rec.kind === 'append' ? { s: rec.stream, q: rec.first, o: rec.ops.map((o) => [o.id, o.workspace, o.text]) } : { d: rec.stream };
  const payload = Buffer.from(JSON.stringify(body));
  const out = Buffer.allocUnsafe(HEADER + payload.length);
  out.writeUInt32LE(payload.length, 0);
  out.writeUInt32LE(crc32(payload), 4);
  payload.copy(out, HEADER);
  return out;
}

function decode(payload: Buffer): JournalRecord {
  const body = JSON.parse(payload.toString('utf8')) as { s?: string; q?: number; o?: Array<[string, string | null, string]>; d?: string };
  if (typeof body.d === 'string') return { kind: 'drop', stream: body.d };
  if (typeof body.s !== 'string' || typeof body.q !== 'number' || !Array.isArray(body.o)) throw new Error('not a journal record');
  return { kind: 'append', stream: body.s, first: body.q, ops: body.o.map(([id, workspace, text]) => ({ id, workspace, text })) };
}

/**
 * The records of one file, in order. A record cut short or failing its checksum ends the file: it was
 * being written when the process ended, so it was never acknowledged (a record is acknowledged only
 * after its write returned), and nothing after it was written.
 */
export function readJournalFile(path: string): { records: JournalRecord[]; torn: boolean } {
  const buf = readFileSync(path);
  const records: JournalRecord[] = [];
  let at = 0;
  while (at + HEADER <= buf.length) {
    const length = buf.readUInt32LE(at);
    const sum = buf.readUInt32LE(at + 4);
    if (at + HEADER + length > buf.length) break;
    const payload = buf.subarray(at + HEADER, at + HEADER + length);
    if (crc32(payload) !== sum) break;
    try {
      records.push(decode(payload));
    } catch {
      break;
    }
    at += HEADER + length;
  }
  return { records, torn: at !== buf.length };
}

/** A written record's place, handed back with {@link Journal.stored} once the database holds it. */
export type JournalMark = { readonly file: number };

/**
 * Numbered files in one folder, written in order with `write(2)` on this thread. A record is written
 * before the push is acknowledged and before its statement goes to the database thread; the file it is
 * in is removed once it is no longer written to and the database holds every record in it. Files are
 * written without fsync, as the database's own files are: what a write returned survives the process,
 * not the machine.
 */
export class Journal {
  private fd: number;
  private size: number;
  private current: number;
  /** Records not yet held by the database, per file. */
  private readonly unstored = new Map<number, number>();

  private constructor(
    private readonly dir: string,
    start: number,
  ) {
    this.current = start;
    this.fd = openSync(this.path(start), 'a', 0o600);
    this.size = fstatSync(this.fd).size;
    this.unstored.set(start, 0);
  }

  /** The files in `dir` (made if missing), oldest first. */
  static files(dir: string): string[] {
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((f) => /^\d{8}\.log$/.test(f))
      .sort()
      .map((f) => join(dir, f));
  }

  /**
   * Starts a new file after every one in `dir`; the callers removes the old ones once what they hold is
   * in the database ({@link Journal.removeOld}).
   */
  static begin(dir: string): Journal {
    makePrivateDir(dir);
    const last = Journal.files(dir).at(-1);
    const next = last === undefined ? 1 : Number(last.slice(-12, -4)) + 1;
    return new Journal(dir, next);
  }

  private path(n: number): string {
    return join(this.dir, `${String(n).padStart(8, '0')}.log`);
  }

  /** Removes every file before the one being written (their records are all in the database). */
  removeOld(): void {
    for (const file of Journal.files(this.dir)) if (Number(file.slice(-12, -4)) < this.current) unlinkSync(file);
  }

  /** Writes `rec` whole before returning. */
  write(rec: JournalRecord): JournalMark {
    const buf = encode(rec);
    let done = 0;
    while (done < buf.length) done += writeSync(this.fd, buf, done, buf.length - done);
    this.size += buf.length;
    const mark = { file: this.current };
    if (rec.kind === 'append') this.unstored.set(this.current, (this.unstored.get(this.current) ?? 0) + 1);
    if (this.size >= ROTATE_BYTES) this.rotate();
    return mark;
  }

  /** The database holds the record written at `mark`. */
  stored(mark: JournalMark): void {
    const left = (this.unstored.get(mark.file) ?? 1) - 1;
    this.unstored.set(mark.file, left);
    if (left === 0 && mark.file !== this.current) this.drop(mark.file);
  }

  private rotate(): void {
    closeSync(this.fd);
    const old = this.current;
    this.current += 1;
    this.fd = openSync(this.path(this.current), 'a', 0o600);
    this.size = 0;
    this.unstored.set(this.current, 0);
    if ((this.unstored.get(old) ?? 0) === 0) this.drop(old);
  }

  private drop(file: number): void {
    this.unstored.delete(file);
    // Off this thread: freeing a 16 MB file's blocks took 6-8 ms, every push behind it waiting. A file
    // already gone lost nothing (the database holds what it had); one left by a failure is read again
    // at the next open, its records all at or below the head, and removed then.
    unlink(this.path(file), () => undefined);
  }

  /**
   * Closes the file. With every record in the database (`clean`), the journal is emptied: the next open
   * has nothing to put back.
   */
  close(clean: boolean): void {
    closeSync(this.fd);
    if (clean && [...this.unstored.values()].every((n) => n === 0)) for (const file of Journal.files(this.dir)) unlinkSync(file);
  }
}
