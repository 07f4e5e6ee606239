// The StreamStore on PGlite: one data directory, held by this process alone under a file lock.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { NexusError, userMessage } from '../../protocol/errors.js';
import { relayMigrationsDir } from '../paths.js';
import type { StreamStore } from './port.js';
import { acquireLock, chooseWasmTier, pgliteStoreSettings, copyTemplate, describeOwner, finishTemplate, makeDataTemplate, makePrivateDir, packageRoot, pgliteVersion, templateProblem, tightenTree, withPrivateUmask, type Logger, type Release } from '../../infra/index.js';
import { journaledStore, replayJournal } from './ahead.js';
import { Journal } from './journal.js';
import { PgliteThread } from './pglite-thread.js';
import { CommitEmitter, migrate, sqlStreamStore } from './sql.js';

/** Options of {@link openPgliteStore}. */
export type PgliteStoreOptions = {
  /** The relay's data folder; the database lives in `<dataDir>/pgdata`. */
  dataDir: string;
  log: Logger;
  /** How long to wait while another live process holds the folder (default 5 s: a relay still closing). */
  lockWaitMs?: number;
  /**
   * What a new database is copied from: the package's template by default ({@link packagedRelayTemplateDir});
   * null (or a template that fails its check) makes it with PostgreSQL's initdb instead.
   */
  template?: string | null;
};

/** How the relay's template is made: a change here, or another PGlite, makes it again. */
const TEMPLATE_FORMAT = 'initdb, template databases dropped, one sparse WAL segment';

/**
 * Where the package ships an empty relay database, made at build time (`npm run build`). A relay's
 * first start copies it instead of running initdb: milliseconds of disk against seconds of CPU
 * (10-15 s on a slow 2-core machine). The relay's migrations run at every open, so it holds none.
 */
export function packagedRelayTemplateDir(): string {
  const version = createHash('sha256').update(`${pgliteVersion()} ${TEMPLATE_FORMAT}`).digest('hex').slice(0, 16);
  return join(packageRoot(), 'dist', `relay-template-${version}`);
}

/** Makes the packaged relay template (a build step). */
export async function makeRelayTemplate(dir = packagedRelayTemplateDir()): Promise<string> {
  return makeDataTemplate(dir, {
    shared: true,
    build: async (tmp) => {
      const { PGlite } = await import('@electric-sql/pglite');
      const pg = await PGlite.create({ dataDir: tmp });
      try {
        await finishTemplate(pg);
      } finally {
        await pg.close();
      }
    },
  });
}

/**
 * Copies a usable template to `target` when there is no database there yet; else leaves it to PGlite
 * (an existing database is opened, a missing one made by initdb).
 */
function seedFromTemplate(target: string, template: string | null, log: Logger): void {
  if (existsSync(target)) return;
  // A copy a crashed process left half made: nobody else copies here while this process holds the lock.
  for (const name of readdirSync(dirname(target))) {
    if (name.startsWith(`${basename(target)}.tmp-`)) rmSync(join(dirname(target), name), { recursive: true, force: true });
  }
  if (template === null) return;
  const problem = templateProblem(template, { shared: true });
  if (problem !== null) {
    log.debug('relay template not used: the database is made by initdb', { template, problem });
    return;
  }
  try {
    copyTemplate(template, target);
  } catch (err) {
    log.debug('relay template could not be copied: the database is made by initdb', { template, error: userMessage(err) });
  }
}

/**
 * PGlite's WebAssembly heap only grows: every buffer page it ever touched stays resident until the
 * process ends. Its default shared_buffers (128 MB) lets a relay grow by that much as catch-ups walk a
 * large stream; 16 MB (NEXUS_STORE_CACHE sets another size) keeps the hot tail of every stream (appends and live reads touch only the last
 * pages) and leaves older pages to the OS page cache, which gives memory back. work_mem bounds the
 * paged read's window sort (500 ops, well under 1 MB); the relay makes no temporary tables. The database
 * thread checkpoints every 64 MB of WAL (pglite-worker.ts); max_wal_size and min_wal_size bound the
 * segments a checkpoint keeps for reuse. A new segment is not zero-filled first (wal_init_zero off): the
 * 16 MB of zeros held the thread ~120 ms, and every push waiting behind it, each time the log crossed
 * into a new segment (the slowest acks of a run at 1,000 pushes/s went from 66 ms to 18-37 ms).
 */
const pgliteSettings = () => [...pgliteStoreSettings(), 'work_mem=1MB', 'temp_buffers=1MB'];

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
  // A bad NEXUS_STORE_CACHE is refused (USAGE) before anything is made or locked.
  const settings = pgliteSettings();
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
    seedFromTemplate(target, opts.template === undefined ? packagedRelayTemplateDir() : opts.template, opts.log);
    // Every call fails from then on, and /readyz says so; the log says why.
    const broken = (err: Error) => opts.log.error('the relay store failed: every storage call fails until the relay restarts', { dir: opts.dataDir, error: err.message });
    pg = await withPrivateUmask(() => PgliteThread.open(target, settings, broken));
    const db = pg;
    // Appends write op texts as literals, where a doubled quote must be the only escape.
    await db.exec('SET standard_conforming_strings = on');
    await withPrivateUmask(() => migrate(db, relayMigrationsDir()));
    const loosened = tightenTree(opts.dataDir);
    if (loosened > 0) opts.log.debug('relay data folder made private', { dir: opts.dataDir, entries: loosened });
    // Appends acknowledged before the last process ended and not yet in the database go in first.
    const journalDir = join(opts.dataDir, 'journal');
    await replayJournal(db, journalDir, opts.log);
    const journal = Journal.begin(journalDir);
    journal.removeOld();
    let closed = false;
    const emitter = new CommitEmitter();
    const inner = sqlStreamStore(db, emitter, {
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
    return journaledStore(inner, db, journal, emitter, opts.log);
  } catch (err) {
    await pg?.close().catch(() => undefined);
    release();
    throw new NexusError('STORE_FAILED', `the relay store in ${opts.dataDir} could not be opened: ${userMessage(err)}`);
  }
}
