// Opens a workspace store: PGlite under an exclusive file lock, migrated, made from a template copy.
import { messages, parse, PGlite, protocol } from '@electric-sql/pglite';
import { drizzle, type PgliteDatabase } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { acquireLock, cacheFileSizes, chooseWasmTier, pgliteStoreSettings, pgliteWasmModule, copyTemplate, describeOwner, finishTemplate, makeDataTemplate, pgliteVersion, PRIVATE_MODES, templateProblem, tightenTree, useNamedStatements, withPrivateUmask, type Release } from '../../../infra/index.js';
import { NexusError, userMessage } from '../../../protocol/errors.js';
import { nexusHome, packageRoot } from '../../paths.js';
import { drizzleClient } from './driver.js';
import { runCommitHooks } from './commit-hooks.js';
import * as schema from './schema.js';

/** PGlite's protocol pieces, from the build this store runs on. */
const pgliteProtocol = { messages, parse, protocol };

export { templateProblem };

export type Db = PgliteDatabase<typeof schema>;

export type Store = {
  readonly dir: string;
  readonly db: Db;
  readonly pg: PGlite;
  close(): Promise<void>;
};

/** How long a waiting command keeps trying for a store held by another process. */
const LOCK_WAIT_MS = 60_000;

function migrationsFolder(): string {
  return join(packageRoot(), 'migrations', 'node');
}

/** How a template is made, beyond its migrations: a change here makes every template again. */
const TEMPLATE_FORMAT = 'no-template-databases, one sparse WAL segment';

/**
 * Names what a template was made with: its schema, its format and the PGlite that made it, so neither a new
 * migration nor another PGlite ever reuses an old template.
 */
export function storeTemplateVersion(pglite = pgliteVersion()): string {
  const journal = readFileSync(join(migrationsFolder(), 'meta', '_journal.json'));
  return createHash('sha256').update(journal).update(TEMPLATE_FORMAT).update(` pglite ${pglite}`).digest('hex').slice(0, 16);
}

let journalEntries: number | undefined;

/** True when every migration in the journal is applied: the common case, checked with one query. */
async function isCurrent(pg: PGlite): Promise<boolean> {
  journalEntries ??= (JSON.parse(readFileSync(join(migrationsFolder(), 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] }).entries.length;
  try {
    const r = await pg.query<{ n: number }>('select count(*)::int as n from drizzle.__drizzle_migrations');
    return r.rows[0]?.n === journalEntries;
  } catch {
    return false;
  }
}

export type OpenOptions = {
  /** How long to wait while another live process holds the store (default 60 s). */
  waitMs?: number;
  /** What this process holds the store for, shown to anybody who waits for it. */
  purpose?: string;
  /** This process's NEXUS_HOME, recorded with the lock so a waiting command can name the node that holds it. */
  home?: string;
  /** Called once after about a second of waiting, with a line saying who holds the store. */
  onWait?: (line: string) => void;
  /**
   * The process is long-lived and may ingest in bulk (a node): V8 may optimise PGlite's code as it runs
   * (see infra/wasm.ts). Without it the process keeps baseline code, which a short-lived one starts faster with.
   */
  tiering?: boolean;
};

/**
 * The database a store's commands run on: drizzle over `pg`, running commit hooks, with the WAL bounded.
 * What the process keeps beside a store in memory (`keptPerStore`) is keyed by this object, so a PGlite
 * that comes to hold other contents (the test host reuses an open one, emptied) is given a new one.
 */
export function storeDatabase(pg: PGlite): Db {
  return checkpointing(runCommitHooks(drizzle(drizzleClient(pg), { schema })), pg);
}

/**
 * Takes the exclusive lock on `target`. Its holder is known by pid: a starved holder keeps it for as
 * long as it runs, a crashed one loses it at once. A store held by a node is refused at once, naming
 * that node, because a node keeps its stores open until it stops.
 */
export function acquireStoreLock(target: string, opts: OpenOptions): Promise<Release> {
  const waitMs = opts.waitMs ?? LOCK_WAIT_MS;
  return acquireLock(`${target}.lock`, {
    waitMs,
    purpose: opts.purpose ?? `a command (${process.argv.slice(1, 3).map((a) => basename(a)).join(' ')})`,
    ...(opts.home === undefined ? {} : { home: opts.home }),
    onWait: (owner) => opts.onWait?.(`waiting for the store at ${target}: it is held by ${describeOwner(owner)}`),
    refuseEarly: (owner) =>
      owner.purpose === NODE_PURPOSE
        ? new NexusError(
            'STORE_BUSY',
            `the store at ${target} is held by ${describeOwner(owner)}. Commands reach it through that node: run them with NEXUS_HOME=${owner.home ?? '<its home>'}` +
              ` (or stop that node, or \`nxs node unregister\` the workspace there)`,
            { pid: owner.pid, home: owner.home ?? null },
          )
        : null,
    busy: (owner) =>
      new NexusError('STORE_BUSY', `the store at ${target} is held by ${describeOwner(owner)} (waited ${Math.round(waitMs / 1000)} s)`, {
        pid: owner?.pid ?? null,
      }),
  });
}

/**
 * How PGlite starts a workspace store: its own defaults, with 16 MB of shared buffers (NEXUS_STORE_CACHE
 * sets another size, infra/pglite-wasm.ts) instead of the
 * 128 MB of a server's postgresql.conf. PostgreSQL zeroes its buffers at every start, so the default cost
 * ~0.85 s of CPU per open against ~0.35 s (measured on the template), paid by every command that opens
 * a store without a node and by a node per workspace it serves, each of which also kept the whole 128 MB
 * resident. A workspace store is small (the template is 25 MB on disk, most of it catalog and one WAL segment), and reads
 * past the buffers come from the operating system's page cache.
 */
/*
 * And at most 64 MB of WAL kept for reuse after a checkpoint (32 MB at least) instead of 1 GB (80 MB): WAL
 * is disk every store holds. A checkpoint is cheap here: at most 16 MB of dirty buffers, and no fsync
 * (PGlite runs with -F).
 *
 * And a new WAL segment is made at its full size without writing 16 MB of zeros into it first
 * (wal_init_zero off): the zeros went through PGlite's file system in small writes and held the database
 * for ~120 ms each time the log crossed into a new segment. Zero-filling reserves the disk space early;
 * a store that runs out of space fails on its next write either way, and runs without fsync already.
 *
 * And shared memory sized for the one backend PGlite runs (infra/pglite-wasm.ts, `pgliteStoreSettings`).
 */
function startParams(): string[] {
  return [...PGlite.defaultStartParams, ...pgliteStoreSettings().flatMap((s) => ['-c', s])];
}

/** What a node records as its purpose when it holds a store. */
export const NODE_PURPOSE = 'the node';

/** Where the package ships a migrated template, made at build time (`npm run build`). */
export function packagedTemplateDir(): string {
  return join(packageRoot(), 'dist', `store-template-${storeTemplateVersion()}`);
}

/** Where this machine keeps the template it made itself, when the package ships none it can use. */
export function homeTemplateDir(home: string): string {
  return join(home, 'cache', `store-template-${storeTemplateVersion()}`);
}

/** True when a new store is a copy away: the package ships a template, or this machine made one. */
export function storeTemplateReady(home = nexusHome()): boolean {
  return existsSync(join(packagedTemplateDir(), 'PG_VERSION')) || existsSync(join(homeTemplateDir(home), 'PG_VERSION'));
}

/**
 * Makes a migrated, empty store at `dir` (initdb and every migration: the slow part), unless a
 * usable one is there. One that fails {@link templateProblem} is removed and made again. A `shared`
 * template (the one the package ships) is readable by everybody and writable by its owner; any other
 * is private, in a private folder.
 */
export async function makeTemplate(dir: string, opts: { shared?: boolean } = {}): Promise<string> {
  return makeDataTemplate(dir, {
    ...opts,
    build: async (tmp) => {
      const pg = await PGlite.create({ dataDir: tmp, startParams: startParams(), pgliteWasmModule: await pgliteWasmModule() });
      try {
        await migrate(drizzle(drizzleClient(pg), { schema }), { migrationsFolder: migrationsFolder() });
        // Without initdb's template databases every store is 25 MB and 439 files instead of 39 MB and 1,039,
        // which every new workspace copies.
        await finishTemplate(pg);
      } finally {
        await pg.close();
      }
    },
  });
}

/**
 * Returns the folder of a migrated, empty store for this schema: the one the package ships (or
 * `packaged`) when it passes {@link templateProblem}, else one made once per machine under
 * NEXUS_HOME. Creating a PGlite data directory (initdb) takes seconds to minutes on a busy machine;
 * copying a template takes milliseconds.
 */
export async function storeTemplate(home = nexusHome(), packaged = packagedTemplateDir()): Promise<string> {
  if (existsSync(join(packaged, 'PG_VERSION')) && templateProblem(packaged, { shared: true }) === null) return packaged;
  return makeTemplate(homeTemplateDir(home));
}

/**
 * Creates a new store at `dir` from the template, private (folders 0700, files 0600). Refuses to
 * overwrite one. `packaged` replaces the package's template (where one is looked for first).
 */
export async function createStore(dir: string, home = nexusHome(), opts: { packaged?: string } = {}): Promise<void> {
  if (existsSync(dir)) throw new TypeError(`createStore: ${dir} already exists`);
  const packaged = opts.packaged ?? packagedTemplateDir();
  const template = await storeTemplate(home, packaged);
  try {
    copyTemplate(template, dir);
  } catch (err) {
    // A packaged template this user may not read (installed by another user): make one under NEXUS_HOME.
    if (template !== packaged) throw err;
    copyTemplate(await makeTemplate(homeTemplateDir(home)), dir);
  }
}

/** WAL written since the last checkpoint beyond which a committed transaction checkpoints the store. */
export const CHECKPOINT_WAL_BYTES = 64 * 2 ** 20;

/**
 * The shortest time between two looks at the WAL. PGlite writes WAL at some tens of MB a second at most, so
 * the bound is overshot by a few MB beyond what the last transaction wrote.
 */
export const WAL_CHECK_INTERVAL_MS = 100;

/** A WAL position (`16/B374D848`) as a number of bytes: exact up to 2^53, some eight petabytes. */
function walBytes(lsn: string): number {
  const [hi, lo] = lsn.split('/');
  return parseInt(hi!, 16) * 2 ** 32 + parseInt(lo!, 16);
}

/**
 * Makes every transaction of `db` that commits check how much WAL the store has written since its last
 * checkpoint, and checkpoint it past {@link CHECKPOINT_WAL_BYTES}. PGlite runs PostgreSQL as a single user,
 * without the checkpointer, and a single-user backend never checkpoints on its own however much WAL it
 * writes (max_wal_size counts only under a postmaster): a store is checkpointed when it closes, and not
 * before. So a node, which holds its stores open for days, kept all the WAL it wrote in pg_wal (a node that
 * taking in 1,000,000 ops held 1.3 GB of it by the 900,000th), and one that stopped without closing them
 * (killed, or its machine lost) left all of it to replay at its next start (a 100,000-op store left with
 * 556-577 MB of WAL since its checkpoint opened in 4.3-6.9 s, against ~1 s clean): a cold start that grew with
 * everything written since the last clean stop. One cheap query after a commit bounds both; it is asked at
 * most once per {@link WAL_CHECK_INTERVAL_MS}, since a command commits several small transactions in a few
 * milliseconds (the check was one query in nine of a busy store's), and a transaction that wrote much took
 * longer than that and is checked as soon as it commits.
 */
function checkpointing(db: Db, pg: PGlite): Db {
  /** Where the WAL stood at the last checkpoint: read from the control file at the first commit. */
  let redo: number | null = null;
  let checkedAt = Number.NEGATIVE_INFINITY;
  const transaction = db.transaction.bind(db);
  db.transaction = (async (fn, config) => {
    const result = await transaction(fn, config);
    const at = performance.now();
    if (at - checkedAt < WAL_CHECK_INTERVAL_MS) return result;
    checkedAt = at;
    try {
      redo ??= walBytes((await pg.query<{ lsn: string }>('select redo_lsn::text as lsn from pg_control_checkpoint()')).rows[0]!.lsn);
      const now = walBytes((await pg.query<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn')).rows[0]!.lsn);
      if (now - redo >= CHECKPOINT_WAL_BYTES) {
        await pg.exec('CHECKPOINT');
        redo = now;
      }
    } catch {
      // The transaction has committed; a checkpoint that could not be taken is tried again at the next look.
    }
    return result;
  }) as Db['transaction'];
  return db;
}

/**
 * Opens the store at `dir` for this process alone. The lock is held until `close()`;
 * a lock left by a crashed process goes stale and is taken over.
 */
export async function openStore(dir: string, opts: OpenOptions = {}): Promise<Store> {
  if (!existsSync(join(dir, 'PG_VERSION'))) {
    throw new NexusError('STORE_FAILED', `no store at ${dir}`);
  }
  // A bad NEXUS_STORE_CACHE is refused (USAGE) before the store is locked.
  const params = startParams();
  const release = await acquireStoreLock(dir, opts);
  let pg: PGlite | undefined;
  try {
    // PGlite writes its files 0666 whatever the umask: what it makes while opening is private from
    // birth where the umask reaches, and the whole tree is set private once open (a store an older
    // version left readable by others included) and again at close.
    chooseWasmTier(opts.tiering === true);
    const wasm = await pgliteWasmModule();
    pg = await withPrivateUmask(() => PGlite.create({ dataDir: dir, startParams: params, pgliteWasmModule: wasm }));
    // This process alone writes the folder (the lock): a relation's size is kept, not asked of the kernel at every plan.
    cacheFileSizes(pg);
    // Each statement text is parsed and planned once, not at every run (infra/pglite-statements.ts).
    useNamedStatements(pg, pgliteProtocol);
    // Ingest writes op texts as literals (kernel/log.ts), where a doubled quote must be the only escape.
    await pg.exec('SET standard_conforming_strings = on');
    const db = storeDatabase(pg);
    if (!(await isCurrent(pg))) await withPrivateUmask(() => migrate(db, { migrationsFolder: migrationsFolder() }));
    tightenTree(dir, PRIVATE_MODES);
    const client = pg;
    return {
      dir,
      db,
      pg: client,
      close: async () => {
        try {
          await client.close();
          tightenTree(dir, PRIVATE_MODES);
        } finally {
          release();
        }
      },
    };
  } catch (err) {
    await pg?.close().catch(() => undefined);
    release();
    if (err instanceof NexusError) throw err;
    throw new NexusError('STORE_FAILED', `the store at ${dir} could not be opened: ${userMessage(err)}`, undefined, { cause: err });
  }
}
