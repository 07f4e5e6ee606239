// The StreamStore on PGlite: one data directory, held by this process alone under a file lock.
import { join } from 'node:path';
import { NexusError, userMessage } from '../../protocol/errors.js';
import { relayMigrationsDir } from '../paths.js';
import type { StreamStore } from './port.js';
import { acquireLock, chooseWasmTier, describeOwner, makePrivateDir, tightenTree, withPrivateUmask, type Logger, type Release } from '../../infra/index.js';
import { PgliteThread } from './pglite-thread.js';
import { CommitEmitter, migrate, sqlStreamStore } from './sql.js';

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
 * paged read's window sort (500 ops, well under 1 MB); the relay makes no temporary tables. The database
 * thread checkpoints every 64 MB of WAL (pglite-worker.ts); max_wal_size and min_wal_size bound the
 * segments a checkpoint keeps for reuse.
 */
const PGLITE_SETTINGS = ['shared_buffers=16MB', 'work_mem=1MB', 'temp_buffers=1MB', 'max_wal_size=64MB', 'min_wal_size=32MB'];

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
  let pg: PgliteThread | undefined;
  const release: Release = await acquireLock(`${target}.lock`, {
    waitMs: opts.lockWaitMs ?? 5_000,
    purpose: 'a relay',
    busy: (owner) => new NexusError('STORE_BUSY', `the relay data folder ${opts.dataDir} is held by ${describeOwner(owner)}`),
  });
  try {
    // The relay runs for hours and takes in backlogs: V8's optimised code pays (see infra/wasm.ts).
    chooseWasmTier(true);
    // Every call fails from then on, and /readyz says so; the log says why.
    const broken = (err: Error) => opts.log.error('the relay store failed: every storage call fails until the relay restarts', { dir: opts.dataDir, error: err.message });
    pg = await withPrivateUmask(() => PgliteThread.open(target, PGLITE_SETTINGS, broken));
    const db = pg;
    // Appends write op texts as literals, where a doubled quote must be the only escape.
    await db.exec('SET standard_conforming_strings = on');
    await withPrivateUmask(() => migrate(db, relayMigrationsDir()));
    const loosened = tightenTree(opts.dataDir);
    if (loosened > 0) opts.log.debug('relay data folder made private', { dir: opts.dataDir, entries: loosened });
    let closed = false;
    return sqlStreamStore(db, new CommitEmitter(), {
      kind: 'pglite',
      // One thread runs the statements in the order they were sent: a second append can wait there.
      appendDepth: 2,
      close: async () => {
        if (closed) return;
        closed = true;
        try {
          await db.close();
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
