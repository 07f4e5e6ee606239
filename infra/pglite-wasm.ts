// PostgreSQL's WebAssembly module, compiled once per process and handed to every PGlite instance in it.
//
// PGlite keeps a compiled module per JavaScript realm, so each worker thread that opens a database compiles
// its 9 MB again and fills a code space of its own as functions first run. A WebAssembly.Module can be
// posted to a thread of the same process, where V8 shares its compiled code: a relay's database thread that
// is handed the module starts on code already there. A process that opens stores and relay threads (the
// test workers above all, which open dozens) compiles once; measured, a thread's open and close after the
// first went from 0.59-0.72 s of CPU to 0.45-0.57 s.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { NexusError } from '../protocol/errors.js';

let compiled: Promise<WebAssembly.Module> | undefined;

// The compiler, typed here: the project's libraries declare WebAssembly's types but not its functions.
const wasm = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<WebAssembly.Module> } }).WebAssembly;

/**
 * The compiled module, shared by every store this process opens. Compile flags are fixed at the first call:
 * choose the tier (`chooseWasmTier`) first.
 */
export function pgliteWasmModule(): Promise<WebAssembly.Module> {
  compiled ??= (async () => {
    const file = join(dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite')), 'pglite.wasm');
    return wasm.compile(await readFile(file));
  })();
  // A failed read is not kept: the next store open tries again.
  compiled.catch(() => (compiled = undefined));
  return compiled;
}

export const STORE_CACHE_VARIABLE = 'NEXUS_STORE_CACHE';

/** What a store's buffer cache is when nothing sets it. */
export const DEFAULT_STORE_CACHE = '16MB';

const MIN_CACHE_BYTES = 128 * 1024;
const MAX_CACHE_BYTES = 1024 * 1024 * 1024;
const UNIT_BYTES: Record<string, number> = { kB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 };

/**
 * The PostgreSQL buffer cache (shared_buffers) of every PGlite store this process opens, workspace stores
 * and the relay's alike: NEXUS_STORE_CACHE as a PostgreSQL size (`4MB`, `512kB`, `1GB`), or 16 MB. PostgreSQL
 * zeroes the cache at every open (about 5 ms of CPU per MB here), and a PGlite heap keeps every page it ever
 * touched resident. A coded error for a size PostgreSQL would refuse or that is not a size at all.
 */
export function storeCacheSetting(env: NodeJS.ProcessEnv = process.env): string {
  const value = env[STORE_CACHE_VARIABLE];
  if (value === undefined || value === '') return DEFAULT_STORE_CACHE;
  const m = /^([1-9][0-9]{0,9})(kB|MB|GB)$/.exec(value);
  const bytes = m ? Number(m[1]) * UNIT_BYTES[m[2]!]! : NaN;
  if (!(bytes >= MIN_CACHE_BYTES && bytes <= MAX_CACHE_BYTES)) {
    throw new NexusError('USAGE', `${STORE_CACHE_VARIABLE} must be a size from 128kB to 1GB, such as 16MB, not ${JSON.stringify(value)}`);
  }
  return value;
}

/**
 * What a PGlite store sizes for one backend, not a server's hundred: PGlite runs PostgreSQL single-user,
 * with no other connection, no WAL sender, no replication slot and no autovacuum worker, yet PostgreSQL
 * sizes its shared memory (PGPROC slots, lock tables, per-backend status) for max_connections and zeroes
 * all of it at every open. From 100 connections to 4 (3 stay reserved for a superuser, and PostgreSQL
 * wants one more): 3 MB less to zero and to hold per store (8 MB of shared memory instead of 11 MB with a
 * 4 MB cache), about 8 ms of CPU per open here.
 */
const ONE_BACKEND_SETTINGS = ['max_connections=4', 'max_wal_senders=0', 'max_replication_slots=0', 'autovacuum_max_workers=1'];

/**
 * The settings every PGlite store starts with, a workspace's and the relay's: the buffer cache
 * ({@link storeCacheSetting}: a coded error for a bad NEXUS_STORE_CACHE), at most 64 MB of WAL kept for
 * reuse, new WAL segments not zero-filled first, and shared memory for one backend. Each store's opener
 * says why in its own terms and may add its own.
 */
export function pgliteStoreSettings(): string[] {
  return [`shared_buffers=${storeCacheSetting()}`, 'max_wal_size=64MB', 'min_wal_size=32MB', 'wal_init_zero=off', ...ONE_BACKEND_SETTINGS];
}
