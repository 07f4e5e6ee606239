// A run's journal file on disk: opened for appending, written a line at a time, forced to disk when the
// runtime says so, and read back whole. What goes in it and when it is synced is the runtime's decision.
import { closeSync, createWriteStream, fdatasyncSync, mkdirSync, openSync, readFileSync, type WriteStream, writeSync } from 'node:fs';
import path from 'node:path';

/** A journal file held open for appending (its folder made private first, the file itself mode 600). */
export class JournalFile {
  private fd: number;

  constructor(readonly file: string) {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    this.fd = openSync(file, 'a', 0o600);
  }

  /** Appends `text` as is; it reaches the disk for sure only at the next {@link sync}. */
  write(text: string): void {
    writeSync(this.fd, text);
  }

  /** Forces what was written so far to disk. */
  sync(): void {
    fdatasyncSync(this.fd);
  }

  /** Syncs and closes; a second close does nothing. */
  close(): void {
    if (this.fd < 0) return;
    try {
      fdatasyncSync(this.fd);
    } finally {
      closeSync(this.fd);
      this.fd = -1;
    }
  }
}

/** The whole text of a journal file; throws the read's own error (its errno code) when it cannot be read. */
export function readJournalFile(file: string): string {
  return readFileSync(file, 'utf8');
}

/** A stream appending to a log file (mode 600): a coding CLI's events, kept as it printed them. */
export function appendStream(file: string): WriteStream {
  return createWriteStream(file, { flags: 'a', mode: 0o600 });
}
