// Opens a workspace store: PGlite under an exclusive file lock, migrated, made from a template copy.
import { PGlite } from '@electric-sql/pglite';
import { drizzle, type PgliteDatabase } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import lockfile from 'proper-lockfile';
import { NexusError } from '../../../protocol/errors.js';
import { nexusHome, packageRoot } from '../../paths.js';
import * as schema from './schema.js';

export type Db = PgliteDatabase<typeof schema>;

export type Store = {
  readonly dir: string;
  readonly db: Db;
  readonly pg: PGlite;
  close(): Promise<void>;
};

/** How long a waiting command keeps trying for a store held by another process. */
const LOCK_WAIT_MS = 60_000;
/** A lock not refreshed for this long belongs to a process that died; it is taken over. */
const LOCK_STALE_MS = 10_000;

function migrationsFolder(): string {
  return join(packageRoot(), 'migrations', 'node');
}

/** Identifies the schema a template was made with, so a new migration never reuses an old template. */
function schemaVersion(): string {
  const journal = readFileSync(join(migrationsFolder(), 'meta', '_journal.json'));
  return createHash('sha256').update(journal).digest('hex').slice(0, 16);
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

/** Takes the exclusive lock on `target`, waiting up to `waitMs`; resolves to its release. */
async function acquireLock(target: string, waitMs: number): Promise<() => Promise<void>> {
  mkdirSync(dirname(target), { recursive: true });
  try {
    return await lockfile.lock(target, {
      realpath: false,
      lockfilePath: `${target}.lock`,
      stale: LOCK_STALE_MS,
      update: LOCK_STALE_MS / 4,
      retries: { retries: Math.ceil(waitMs / 100), minTimeout: 25, maxTimeout: 100, factor: 1.2 },
      onCompromised: (err) => {
        // Another process took the lock over while we held it: the store may be shared now. Stop.
        process.stderr.write(`nexus: the store lock at ${target} was lost (${err.message}); exiting\n`);
        process.exit(1);
      },
    });
  } catch (err) {
    throw new NexusError('STORE_BUSY', `the store at ${target} is held by another process (waited ${Math.round(waitMs / 1000)} s)`, {
      cause: String(err),
    });
  }
}

async function withDirLock<T>(target: string, waitMs: number, fn: () => Promise<T>): Promise<T> {
  const release = await acquireLock(target, waitMs);
  try {
    return await fn();
  } finally {
    await release().catch(() => undefined);
  }
}

/**
 * Returns the folder of a migrated, empty store for this schema, creating it once per machine.
 * Creating a PGlite data directory (initdb) takes seconds; copying this one takes milliseconds.
 */
export async function storeTemplate(home = nexusHome()): Promise<string> {
  const dir = join(home, 'cache', `store-template-${schemaVersion()}`);
  if (existsSync(join(dir, 'PG_VERSION'))) return dir;
  return withDirLock(dir, 120_000, async () => {
    if (existsSync(join(dir, 'PG_VERSION'))) return dir;
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    const pg = await PGlite.create({ dataDir: tmp });
    try {
      await migrate(drizzle(pg, { schema }), { migrationsFolder: migrationsFolder() });
    } finally {
      await pg.close();
    }
    renameSync(tmp, dir);
    return dir;
  });
}

/** Creates a new store at `dir` from the template. Refuses to overwrite one. */
export async function createStore(dir: string, home = nexusHome()): Promise<void> {
  if (existsSync(dir)) throw new TypeError(`createStore: ${dir} already exists`);
  const template = await storeTemplate(home);
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  cpSync(template, tmp, { recursive: true });
  renameSync(tmp, dir);
}

/**
 * Opens the store at `dir` for this process alone. The lock is held until `close()`;
 * a lock left by a crashed process goes stale and is taken over.
 */
export async function openStore(dir: string, opts: { waitMs?: number } = {}): Promise<Store> {
  if (!existsSync(join(dir, 'PG_VERSION'))) {
    throw new NexusError('STORE_FAILED', `no store at ${dir}`);
  }
  const release = await acquireLock(dir, opts.waitMs ?? LOCK_WAIT_MS);
  let pg: PGlite | undefined;
  try {
    pg = await PGlite.create({ dataDir: dir });
    const db = drizzle(pg, { schema });
    if (!(await isCurrent(pg))) await migrate(db, { migrationsFolder: migrationsFolder() });
    const client = pg;
    return {
      dir,
      db,
      pg: client,
      close: async () => {
        try {
          await client.close();
        } finally {
          await release().catch(() => undefined);
        }
      },
    };
  } catch (err) {
    await pg?.close().catch(() => undefined);
    await release().catch(() => undefined);
    if (err instanceof NexusError) throw err;
    throw new NexusError('STORE_FAILED', `the store at ${dir} could not be opened: ${String(err)}`);
  }
}
