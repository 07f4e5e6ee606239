// Open stores kept for reuse within a worker. Starting PostgreSQL in PGlite is most of what a test's first
// command costs (~0.15 s of CPU warm, more under load, and a few hundred opens in the fast lane); emptying an
// open store with one TRUNCATE costs a fraction of that. So at the end of a test the host empties its store
// and keeps it open, instead of closing it; the next new workspace's store is that one, moved into place.
//
// A store's files always live at the workspace's own `.nxs/store`, as in the product. A store kept open is
// moved with its folder: PGlite's file system names each file by the mount's root and its path at every
// open, so the root is pointed at the folder's new place, and a moved folder keeps the files it has open.
import { mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { PRIVATE_MODES, tightenTree, type Release } from '../../infra/index.js';
import { acquireStoreLock, createStore, openStore, storeDatabase, type OpenOptions, type Store } from '../../node-agent/adapters/store/index.js';

/** Where PGlite mounts the store's folder in its own file system. */
const PGDATA = '/pglite/data';

/** How many emptied stores a worker keeps open: each holds some tens of megabytes. */
const KEPT = 2;

/** An open store, and the folder its files are in now. */
type Slot = { inner: Store; at: string };

/**
 * A new store as first seen in this worker: its shape (migrations, relations, columns, triggers, functions) and
 * its tables, which every store of that shape has.
 */
let fresh: { shape: string; tables: string[] } | null = null;
let root: string | null = null;
let made = 0;
const parked: Slot[] = [];
/** The slot behind each store handed out, while it is open, and the lock taken for it here (none at the first). */
const slots = new WeakMap<Store, { slot: Slot; release: Release | null }>();

function poolRoot(): string {
  root ??= mkdtempSync(join(tmpdir(), 'nexus-store-pool-'));
  return root;
}

/** Moves the open store's folder to `to` (which must not exist), and PGlite's mount with it. */
function move(slot: Slot, to: string): void {
  // The mount is found before anything moves: a PGlite whose insides differ fails here, its files in place.
  const fs = (slot.inner.pg as PGlite & { Module: { FS: { lookupPath(p: string): { node: { mount: { opts: { root: string } } } } } } }).Module.FS;
  const mount = fs.lookupPath(PGDATA).node.mount;
  if (mount.opts.root !== slot.at) throw new Error(`PGlite's data folder is mounted from ${mount.opts.root}, not ${slot.at}`);
  renameSync(slot.at, to);
  mount.opts.root = to;
  slot.at = to;
}

/**
 * A store's shape. A test may change it (undo migrations, add a table, drop an index); such a store is
 * never kept for another.
 */
async function shapeOf(pg: PGlite): Promise<string> {
  const { rows } = await pg.query<{ shape: string }>(`
    select (select count(*) from drizzle.__drizzle_migrations)::text
      || ':' || (select count(*) from pg_trigger where not tgisinternal)::text
      || ':' || (select count(*) from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname not in ('pg_catalog', 'information_schema'))::text
      || ':' || md5(string_agg(n.nspname || '.' || c.relname || '.' || c.relkind::text || '.' || coalesce(a.attname || ' ' || a.atttypid::text, ''), ',' order by n.nspname, c.relname, a.attnum)) as shape
    from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    left join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
    where n.nspname not in ('pg_catalog', 'information_schema', 'pg_toast')`);
  return rows[0]!.shape;
}

/** Learns what a new store looks like from one known to be new (a template copy not opened before). */
async function learnFresh(pg: PGlite): Promise<void> {
  if (fresh !== null) return;
  const { rows } = await pg.query<{ name: string }>(`select format('%I.%I', schemaname, tablename) as name from pg_tables where schemaname = 'public'`);
  fresh = { shape: await shapeOf(pg), tables: rows.map((r) => r.name) };
}

/** What changes whenever a store is opened and closed (the control file is rewritten at each start and stop). */
export function storeStamp(dir: string): number | null {
  return statSync(join(dir, 'global', 'pg_control'), { throwIfNoEntry: false })?.mtimeMs ?? null;
}

function handOut(slot: Slot, release: Release | null): Store {
  const pg = slot.inner.pg;
  const store: Store = {
    dir: slot.at,
    // A new database object: nothing the product kept beside the last one carries over.
    db: storeDatabase(pg),
    pg,
    close: async () => {
      slots.delete(store);
      try {
        await slot.inner.close();
        // The inner close tightens the folder it was opened at; a store moved since is tightened where it is.
        if (slot.at !== slot.inner.dir) tightenTree(slot.at, PRIVATE_MODES);
      } finally {
        release?.();
      }
    },
  };
  slots.set(store, { slot, release });
  return store;
}

/** Moves a kept store to `dir` (which must not exist) and hands it out, under `dir`'s own store lock. */
async function reuse(slot: Slot, dir: string, opts: OpenOptions): Promise<Store> {
  // The product's own store lock: whatever else opens `dir` waits for this holder, or is refused as openStore refuses.
  const release = await acquireStoreLock(dir, opts);
  try {
    move(slot, dir);
  } catch (err) {
    release();
    await slot.inner.close();
    throw err;
  }
  tightenTree(dir, PRIVATE_MODES);
  return handOut(slot, release);
}

/**
 * Opens the store at `dir`, as openStore does. With `pristine` (the stamp of `dir` as its template copy left
 * it) and an emptied store kept, that store takes the place of the copy, unless the copy has been opened since.
 */
export async function openPooled(dir: string, opts: OpenOptions & { pristine?: number | null } = {}): Promise<Store> {
  const isNew = opts.pristine != null && storeStamp(dir) === opts.pristine;
  const kept = isNew ? parked.pop() : undefined;
  if (kept !== undefined) {
    rmSync(dir, { recursive: true, force: true });
    return reuse(kept, dir, opts);
  }
  const inner = await openStore(dir, opts);
  if (isNew) await learnFresh(inner.pg);
  return handOut({ inner, at: dir }, null);
}

/** A new empty store at `dir` (which must not exist), open: an emptied one moved there, or a template copy. */
export async function freshPooled(dir: string, home: string, opts: OpenOptions = {}): Promise<Store> {
  const kept = parked.pop();
  if (kept !== undefined) return reuse(kept, dir, opts);
  await createStore(dir, home);
  const inner = await openStore(dir, opts);
  await learnFresh(inner.pg);
  return handOut({ inner, at: dir }, null);
}

/**
 * Done with `store`, whose folder the caller removes next: the store is emptied, moved out, and kept open for
 * the next new one. Its lock folder goes with the caller's folder. A store not opened here, already closed,
 * or that cannot be emptied is closed instead.
 */
export async function parkPooled(store: Store): Promise<void> {
  const held = slots.get(store);
  if (held === undefined || parked.length >= KEPT) return store.close();
  const { slot, release } = held;
  try {
    if (fresh === null || (await shapeOf(slot.inner.pg)) !== fresh.shape) return store.close();
    // Only the tables that hold rows: a TRUNCATE costs some milliseconds per table, each made anew on disk.
    const { tables } = fresh;
    const filled = (await slot.inner.pg.query<Record<string, boolean>>(`select ${tables.map((t, i) => `exists (select 1 from ${t}) as t${i}`).join(', ')}`)).rows[0]!;
    const full = tables.filter((_, i) => filled[`t${i}`]);
    if (full.length > 0) await slot.inner.pg.exec(`TRUNCATE ${full.join(', ')}`);
    // And every sequence that has been used starts again, whether its table holds rows now or not.
    await slot.inner.pg.query(
      `select setval(format('%I.%I', schemaname, sequencename)::regclass, start_value, false) from pg_sequences where schemaname = 'public' and last_value is not null`,
    );
    slots.delete(store);
    move(slot, join(poolRoot(), `kept-${made++}`));
  } catch {
    return store.close();
  }
  release?.();
  parked.push(slot);
}

/** How many emptied stores this worker keeps open now. */
export function keptCount(): number {
  return parked.length;
}

/** Closes every store kept open. */
export async function closeKept(): Promise<void> {
  for (const slot of parked.splice(0)) await slot.inner.close().catch(() => undefined);
}
