// The PGlite relay's appends, acknowledged once journaled: the database takes them a moment later on its
// own thread, in the order they were written, while the relay answers the push (decision 0022).
import { NexusError } from '../../protocol/errors.js';
import type { Logger } from '../../infra/index.js';
import { appendOps, workspaceOf, type AppendOutcome } from './append.js';
import type { SqlDb } from './db.js';
import { IdFilter } from './id-filter.js';
import { Journal, readJournalFile, type JournalAppend, type JournalMark, type JournalRecord } from './journal.js';
import type { OpToAppend, StreamStore } from './port.js';
import type { CommitEmitter } from './sql.js';

/**
 * Journaled appends the database has not confirmed yet, by op text and by count: past either, an
 * acknowledgement waits for the database to catch up, so the journal never runs far ahead of it (a
 * producer is paced by the database, as before, and memory holds at most this much op text twice). The
 * bound is wide enough for the database thread to pause (a checkpoint, a page of a catch-up) without
 * holding up acks: at 1,000 single-op pushes a second, a second or more. (4 MB left the relay's memory
 * after slow consumers at 1.26x its idle size in one bench run, against a target of 1.2x.)
 */
const MAX_UNSTORED_BYTES = 1024 * 1024;
const MAX_UNSTORED = 1_024;

/** Ids read per query while a stream's filter is filled from the database. */
const FILL_PAGE = 10_000;

/** What the relay knows of one stream on this thread, to take an append without asking the database. */
type Ledger = {
  /** The database's head once every append sent to it has run; null while one whose outcome decides it is on its way. */
  head: number | null;
  /** Every id stored in the stream and every id sent to be stored; ready once `filling` is false. */
  readonly filter: IdFilter;
  filling: boolean;
  /** Appends sent the careful way (through the database's own duplicate check) and not answered yet. */
  careful: number;
};

/** The outcome of a journaled append as the database must report it: every op new, seqs from `first` on. */
function asJournaled(out: AppendOutcome, first: number, count: number): boolean {
  return out.head === first + count - 1 && out.results.length === count && out.results.every((r, i) => !r.duplicate && r.seq === first + i);
}

/**
 * Puts back into the database what the journal in `dir` holds and it does not: appends acknowledged
 * before the process ended and never run there. Records of a stream before its last deletion are
 * skipped (they belonged to the stream deleted), and so are records of a stream that is gone. Returns
 * how many ops were put back. Throws STORE_FAILED when a record does not follow the database's head,
 * which would mean ops were lost between the two.
 */
export async function replayJournal(db: SqlDb, dir: string, log: Logger): Promise<number> {
  const records: JournalRecord[] = [];
  for (const file of Journal.files(dir)) {
    const { records: found, torn } = readJournalFile(file);
    if (torn) log.warn('relay journal: a record cut short at the end of a file was dropped (it was never acknowledged)', { file });
    records.push(...found);
  }
  const lastDrop = new Map<string, number>();
  records.forEach((r, i) => r.kind === 'drop' && lastDrop.set(r.stream, i));
  const heads = new Map<string, number | null>();
  let restored = 0;
  for (const [i, rec] of records.entries()) {
    if (rec.kind !== 'append' || i < (lastDrop.get(rec.stream) ?? -1)) continue;
    if (!heads.has(rec.stream)) {
      const [row] = await db.query<{ head: unknown }>('SELECT head FROM streams WHERE name = $1', [rec.stream]);
      heads.set(rec.stream, row ? Number(row.head) : null);
    }
    const head = heads.get(rec.stream);
    const last = rec.first + rec.ops.length - 1;
    if (head === null || head === undefined || last <= head) continue;
    if (rec.first !== head + 1) throw new NexusError('STORE_FAILED', `the relay journal holds ops ${rec.first}-${last} of stream ${rec.stream}, but the database ends at ${head}`);
    const out = await appendOps(db, rec.stream, rec.ops);
    if (!asJournaled(out, rec.first, rec.ops.length)) throw new NexusError('STORE_FAILED', `the relay journal's ops ${rec.first}-${last} of stream ${rec.stream} did not go back in at their seqs`);
    heads.set(rec.stream, last);
    restored += rec.ops.length;
  }
  if (restored > 0) log.info('relay journal: acknowledged ops put back into the database', { ops: restored });
  return restored;
}

/**
 * `inner` (the SQL store on the PGlite thread `db`) with appends acknowledged once written to `journal`.
 *
 * An append whose ids are certainly new to its stream (none in the stream's {@link IdFilter}, none
 * repeated) takes the next seqs from the head kept here, is written to the journal, is sent to the
 * database thread, and resolves. The database thread runs what it is sent in order, so every later
 * call (a read, a stream's head, the next append) sees it; the statement that stores it checks that it
 * went in at those seqs, and anything else breaks the store (every later append fails with
 * STORE_FAILED; the journal keeps what was acknowledged, for the next open). Any other append (an id
 * the filter may hold, a stream not known here yet, a stream being deleted) goes the careful way: to the
 * database, which finds duplicates, answering once it committed, as before the journal.
 */
export function journaledStore(inner: StreamStore, db: SqlDb, journal: Journal, emitter: CommitEmitter, log: Logger): StreamStore {
  const ledgers = new Map<string, Ledger>();
  const deleting = new Set<string>();
  let unstored = 0;
  let unstoredBytes = 0;
  let room: Array<() => void> = [];
  let idle: Array<() => void> = [];
  let broken: NexusError | null = null;

  const fail = (err: unknown) => {
    if (broken !== null) return;
    const message = err instanceof Error ? err.message : String(err);
    broken = new NexusError('STORE_FAILED', `the relay store failed after an append was journaled: ${message}; the journal keeps it for the next start`);
    log.error('relay journal: the database did not take a journaled append; every later append and /readyz fail until the relay restarts', { error: message });
  };

  const full = () => unstored >= MAX_UNSTORED || unstoredBytes >= MAX_UNSTORED_BYTES;

  const settled = (bytes: number) => {
    unstored -= 1;
    unstoredBytes -= bytes;
    if (!full()) {
      const waiting = room;
      room = [];
      for (const go of waiting) go();
    }
    if (unstored === 0) {
      const waiting = idle;
      idle = [];
      for (const go of waiting) go();
    }
  };

  /** Fills a new ledger's filter with the stream's stored ids, a page at a time, behind what was sent before. */
  const fill = async (stream: string, ledger: Ledger) => {
    let after = 0;
    try {
      for (;;) {
        const rows = await db.query<{ seq: unknown; op_id: string }>('SELECT seq, op_id FROM stream_ops WHERE stream = $1 AND seq > $2 ORDER BY seq LIMIT $3', [stream, after, FILL_PAGE]);
        for (const r of rows) ledger.filter.add(r.op_id);
        if (rows.length < FILL_PAGE) break;
        after = Number(rows[rows.length - 1]!.seq);
      }
      ledger.filling = false;
    } catch (err) {
      // The stream stays on the careful path until a later ledger fills.
      if (ledgers.get(stream) === ledger) ledgers.delete(stream);
      log.debug('relay journal: a stream id filter could not be filled', { stream, error: err instanceof Error ? err.message : String(err) });
    }
  };

  const ledgerOf = (stream: string): Ledger => {
    let ledger = ledgers.get(stream);
    if (!ledger) {
      ledgers.set(stream, (ledger = { head: null, filter: new IdFilter(), filling: true, careful: 0 }));
      void fill(stream, ledger);
    }
    return ledger;
  };

  const certainlyNew = (ledger: Ledger, ops: readonly OpToAppend[]): boolean => {
    if (ledger.head === null || ledger.filling || ledger.careful > 0 || ops.length === 0) return false;
    const ids = new Set<string>();
    for (const op of ops) {
      if (ids.has(op.id) || ledger.filter.has(op.id)) return false;
      ids.add(op.id);
    }
    return true;
  };

  const careful = (stream: string, ops: readonly OpToAppend[], ledger: Ledger | null) => {
    if (ledger) {
      ledger.careful += 1;
      ledger.head = null;
    }
    const out = inner.append(stream, ops);
    if (ledger) {
      // A failed append may have been stored before it failed: its ids go in the filter either way (the
      // filter only ever sends an id the careful way). The last careful append to answer knows the head:
      // nothing went to the database after it.
      const answered = (head: number | null) => {
        for (const op of ops) ledger.filter.add(op.id);
        ledger.careful -= 1;
        if (ledger.careful === 0 && head !== null) ledger.head = head;
      };
      out.then((o) => answered(o.head), () => answered(null));
    }
    return out;
  };

  const journaled = (stream: string, ops: readonly OpToAppend[], ledger: Ledger): Promise<AppendOutcome> => {
    const first = ledger.head! + 1;
    const rec: JournalAppend = { kind: 'append', stream, first, ops: ops.map((op) => ({ id: op.id, workspace: workspaceOf(op), text: op.text })) };
    let mark: JournalMark;
    try {
      mark = journal.write(rec);
    } catch (err) {
      // A record may be half written: nothing may follow it.
      fail(err);
      return Promise.reject(broken!);
    }
    ledger.head = first + ops.length - 1;
    let bytes = 0;
    for (const op of ops) {
      ledger.filter.add(op.id);
      bytes += op.text.length;
    }
    unstored += 1;
    unstoredBytes += bytes;
    // Sent to the database thread before this returns: whatever is asked of it later runs after it.
    appendOps(db, stream, rec.ops)
      .then((out) => {
        if (!asJournaled(out, first, ops.length)) fail(new Error(`stream ${stream}: ops ${first}-${first + ops.length - 1} did not go in at their seqs`));
        // Once broken, no file goes: what it holds may be all that is left of an acknowledged op.
        else if (broken === null) journal.stored(mark);
      }, fail)
      .finally(() => settled(bytes));
    const out: AppendOutcome = {
      results: ops.map((op, i) => ({ op: op.id, seq: first + i, duplicate: false })),
      head: ledger.head,
      rows: ops.map((op, i) => ({ seq: first + i, op: op.text })),
    };
    emitter.emit(stream, out.head);
    if (!full()) return Promise.resolve(out);
    return new Promise((resolve) => room.push(() => resolve(out)));
  };

  return {
    ...inner,

    append(stream, ops) {
      if (broken) return Promise.reject(broken);
      if (deleting.has(stream)) return careful(stream, ops, null);
      const ledger = ledgerOf(stream);
      return certainlyNew(ledger, ops) ? journaled(stream, ops, ledger) : careful(stream, ops, ledger);
    },

    async deleteStream(name) {
      deleting.add(name);
      ledgers.delete(name);
      try {
        const ops = await inner.deleteStream(name);
        // Journaled ops of the stream ran before the delete; a stream made later by this name is another.
        if (ops !== null && broken === null) journal.write({ kind: 'drop', stream: name });
        return ops;
      } finally {
        deleting.delete(name);
        ledgers.delete(name);
      }
    },

    async ping() {
      if (broken) throw broken;
      await inner.ping();
      // A journaled append the database refused ahead of this ping has broken the store by now.
      if (broken) throw broken;
    },

    async close() {
      if (unstored > 0) await new Promise<void>((resolve) => idle.push(resolve));
      try {
        await inner.close();
      } finally {
        journal.close(broken === null);
      }
    },
  };
}
