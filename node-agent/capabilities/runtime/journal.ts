// The run journal: one JSON line per event, appended as the run goes and forced to disk at its boundaries.
import { writeFileAtomic } from '../../../infra/index.js';
import { NexusError } from '../../../protocol/errors.js';
import { JournalEntrySchema, type JournalEntry, type RunStateFile } from '../../../protocol/runs.js';
import { JournalFile, readJournalFile } from '../../adapters/sessions/index.js';

type Draft = JournalEntry extends infer E ? (E extends JournalEntry ? Omit<E, 'ts'> : never) : never;

/**
 * When the journal is forced to disk: before and after every acting command (so a resume
 * never repeats an effect without knowing), at every status change, and otherwise at most
 * this long after an entry, so what a crash can lose is a re-askable reply or a re-runnable read.
 */
export const SYNC_INTERVAL_MS = 1_000;

export class Journal {
  private readonly out: JournalFile;
  private lastSync: number;

  constructor(
    readonly file: string,
    private readonly clock: () => number,
  ) {
    this.out = new JournalFile(file);
    this.lastSync = clock();
  }

  /**
   * Appends one entry. `sync: true` forces it (and everything before it) to disk now;
   * `'soon'` does so only when the last sync is older than SYNC_INTERVAL_MS.
   */
  append(entry: Draft, sync: boolean | 'soon' = false): void {
    const line = JSON.stringify({ ...entry, ts: new Date(this.clock()).toISOString() }) + '\n';
    this.out.write(line);
    if (sync === true || (sync === 'soon' && this.clock() - this.lastSync >= SYNC_INTERVAL_MS)) this.sync();
  }

  sync(): void {
    this.out.sync();
    this.lastSync = this.clock();
  }

  close(): void {
    this.out.close();
  }
}

/**
 * Reads a journal back. A last line cut short by a crash is dropped (it was never synced as a
 * whole); any other line that does not parse makes the journal unusable.
 * @throws NexusError JOURNAL_INVALID
 */
export function readJournal(file: string): JournalEntry[] {
  let text: string;
  try {
    text = readJournalFile(file);
  } catch (err) {
    throw new NexusError('JOURNAL_INVALID', `the journal ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`, { file }, { cause: err });
  }
  const lines = text.split('\n');
  const entries: JournalEntry[] = [];
  for (const [i, line] of lines.entries()) {
    if (line.trim() === '') continue;
    const last = i >= lines.length - 2;
    let parsed;
    try {
      parsed = JournalEntrySchema.safeParse(JSON.parse(line));
    } catch {
      parsed = null;
    }
    if (parsed?.success) entries.push(parsed.data);
    else if (!last) throw new NexusError('JOURNAL_INVALID', `line ${i + 1} of the journal ${file} is not a journal entry`, { file, line: i + 1 });
  }
  return entries;
}

/** Replaces the run-state file in one step (infra's atomic write), so a reader sees the old state or the new. */
export function writeRunState(file: string, state: RunStateFile): void {
  writeFileAtomic(file, JSON.stringify(state, null, 2) + '\n', { mode: 0o600 });
}
