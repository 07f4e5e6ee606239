// The StreamStore on PGlite: one data directory, held by this process alone under a file lock.
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { join } from 'node:path';
import { NexusError, userMessage } from '../../protocol/errors.js';
import { relayMigrationsDir } from '../paths.js';
import type { StreamStore } from './port.js';
import { acquireLock, chooseWasmTier, describeOwner, makePrivateDir, tightenTree, withPrivateUmask, type Logger, type Release } from '../../infra/index.js';
import { CommitEmitter, migrate, sqlStreamStore, type Sql, type SqlDb } from './sql.js';

/** Options of {@link openPgliteStore}. */
export type PgliteStoreOptions = {
  /** The relay's data folder; the database lives in `<dataDir>/pgdata`. */
  dataDir: string;
  log: Logger;
  /** How long to wait while another live process holds the folder (default 5 s: a relay still closing). */
  lockWaitMs?: number;
};

/**
 * PGlite's WebAssembly heap only grows: every buffer page it ever touched stays resident until the
 * process ends. Its default shared_buffers (128 MB) lets a relay grow by that much as catch-ups walk a
 * large stream; 16 MB keeps the hot tail of every stream (appends and live reads touch only the last
 * pages) and leaves older pages to the OS page cache, which gives memory back. work_mem bounds the
 * paged read's window sort (500 ops, well under 1 MB); the relay makes no temporary tables.
 */
const PGLITE_SETTINGS = ['shared_buffers=16MB', 'work_mem=1MB', 'temp_buffers=1MB'];

/**
 * PGlite runs in this thread: a query is synchronous WebAssembly whose promise settles as a microtask.
 * Twenty catch-ups reading page after page would chain queries through microtasks alone and never let
 * the event loop reach its I/O phase: /healthz and every socket would wait seconds. So top-level work
 * goes through one queue, one job per event-loop turn (the next job starts from setImmediate, which
 * runs after the I/O phase of the next turn): a request waits for at most one query, not all of them.
 */
export class Turns {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(job: () => Promise<T>): Promise<T> {
    const p = this.tail.then(() => new Promise<void>((r) => setImmediate(r))).then(job);
    this.tail = p.catch(() => undefined);
    return p;
  }
}

function adapt(db: PGlite | Transaction): Sql {
  return {
    query: async <T>(text: string, params?: unknown[]) => (await db.query<T>(text, params as unknown[])).rows,
    exec: async (script) => (await db.exec(script)).map((r) => r.rows as unknown[]),
  };
}

/**
 * Opens (creating on first use) the PGlite store in `dataDir`, migrated. PGlite has no lock of its
 * own, so the folder's lock is held until `close()`: a second relay on the folder gets STORE_BUSY while
 * the first one's process lives, however slow or starved it is, and takes the folder over at once when
 * that process is gone (the lock names its holder's pid and start time; nothing needs refreshing).
 * The folder is private: made under umask 077, and every folder set 0700 and file 0600 once open
 * (PGlite writes its initial files 0666 whatever the umask) and again at close.
 */
export async function openPgliteStore(opts: PgliteStoreOptions): Promise<StreamStore> {
  const target = join(opts.dataDir, 'pgdata');
  makePrivateDir(opts.dataDir);
  let pg: PGlite | undefined;
  const release: Release = await acquireLock(`${target}.lock`, {
    waitMs: opts.lockWaitMs ?? 5_000,
    purpose: 'a relay',
    busy: (owner) => new NexusError('STORE_BUSY', `the relay data folder ${opts.dataDir} is held by ${describeOwner(owner)}`),
  });
  try {
    // The relay runs for hours and takes in backlogs: V8's optimised code pays (see infra/wasm.ts).
    chooseWasmTier(true);
    pg = await withPrivateUmask(() => PGlite.create({ dataDir: target, startParams: [...PGlite.defaultStartParams, ...PGLITE_SETTINGS.flatMap((s) => ['-c', s])] }));
    const client = pg;
    // Appends write op texts as literals, where a doubled quote must be the only escape.
    await client.exec('SET standard_conforming_strings = on');
    const turns = new Turns();
    const direct = adapt(client);
    // Statements inside a transaction run on its own connection state: only whole jobs take turns.
    const db: SqlDb = {
      query: (text, params) => turns.run(() => direct.query(text, params)),
      exec: (script) => turns.run(() => direct.exec(script)),
      transaction: (fn) => turns.run(() => client.transaction((tx) => fn(adapt(tx)))),
    };
    await withPrivateUmask(() => migrate(db, relayMigrationsDir()));
    const loosened = tightenTree(opts.dataDir);
    if (loosened > 0) opts.log.debug('relay data folder made private', { dir: opts.dataDir, entries: loosened });
    let closed = false;
    return sqlStreamStore(db, new CommitEmitter(), {
      kind: 'pglite',
      close: async () => {
        if (closed) return;
        closed = true;
        try {
          await client.close();
          // Files PGlite wrote while open (its relation cache, new segments) come out of the umask.
          tightenTree(opts.dataDir);
        } finally {
          release();
        }
      },
    });
  } catch (err) {
    await pg?.close().catch(() => undefined);
    release();
    throw new NexusError('STORE_FAILED', `the relay store in ${opts.dataDir} could not be opened: ${userMessage(err)}`);
  }
}
