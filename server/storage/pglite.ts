// The StreamStore on PGlite: one data directory, held by this process alone under a file lock.
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { join } from 'node:path';
import lockfile from 'proper-lockfile';
import { NexusError, userMessage } from '../../protocol/errors.js';
import { relayMigrationsDir } from '../paths.js';
import type { StreamStore } from './port.js';
import { makePrivateDir, tightenTree, withPrivateUmask, type Logger } from '../../infra/index.js';
import { CommitEmitter, migrate, sqlStreamStore, type Sql, type SqlDb } from './sql.js';

/** A lock not refreshed for this long belongs to a dead process and is taken over. */
const LOCK_STALE_MS = 10_000;

/** Options of {@link openPgliteStore}. */
export type PgliteStoreOptions = {
  /** The relay's data folder; the database lives in `<dataDir>/pgdata`. */
  dataDir: string;
  log: Logger;
  /** How long to wait for a lock held by another process (default 12 s, just past staleness). */
  lockWaitMs?: number;
};

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
 * own, so a proper-lockfile lock is held until `close()`; a second relay on the folder gets STORE_BUSY.
 * The folder is private: made under umask 077, and every folder set 0700 and file 0600 once open
 * (PGlite writes its initial files 0666 whatever the umask) and again at close.
 */
export async function openPgliteStore(opts: PgliteStoreOptions): Promise<StreamStore> {
  const target = join(opts.dataDir, 'pgdata');
  makePrivateDir(opts.dataDir);
  const waitMs = opts.lockWaitMs ?? LOCK_STALE_MS + 2_000;
  let pg: PGlite | undefined;
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(target, {
      realpath: false,
      lockfilePath: `${target}.lock`,
      stale: LOCK_STALE_MS,
      update: LOCK_STALE_MS / 4,
      retries: { retries: Math.ceil(waitMs / 100), minTimeout: 50, maxTimeout: 100, factor: 1.2 },
      onCompromised: (err) => {
        // Someone took the folder over: two writers would corrupt it, so this one stops using it.
        opts.log.error('relay data lock lost; closing the store', { dir: opts.dataDir, error: err });
        void pg?.close().catch(() => undefined);
      },
    });
  } catch (err) {
    throw new NexusError('STORE_BUSY', `the relay data folder ${opts.dataDir} is held by another process`, { cause: String(err) });
  }
  try {
    pg = await withPrivateUmask(() => PGlite.create({ dataDir: target }));
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
          await release().catch(() => undefined);
        }
      },
    });
  } catch (err) {
    await pg?.close().catch(() => undefined);
    await release().catch(() => undefined);
    throw new NexusError('STORE_FAILED', `the relay store in ${opts.dataDir} could not be opened: ${userMessage(err)}`);
  }
}
