// Data folders made once and copied many times. Creating a PGlite database runs PostgreSQL's initdb in
// WebAssembly (seconds of CPU, more on a busy machine); copying a finished one takes milliseconds. The
// package ships such templates in dist/ (made by `npm run build`), and a machine may make its own. A
// template is copied into every folder made from it, so it is trusted only when nobody but its owner
// could have changed it.
import { chmodSync, closeSync, existsSync, fchmodSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { NexusError } from '../protocol/errors.js';
import { acquireLock, describeOwner } from './fs.js';
import { packageRoot } from './package.js';
import { makePrivateDir, PRIVATE_MODES, SHARED_MODES, tightenTree, treeProblem, withPrivateUmask } from './private-dir.js';

/**
 * Why the template at `dir` must not be copied, or null: it holds no database, or something in it is
 * not a plain file or folder, is writable by group or others, or is owned by another user. A `shared`
 * (packaged) template may also be owned by root or by whoever owns the installed package.
 */
export function templateProblem(dir: string, opts: { shared: boolean }): string | null {
  if (!existsSync(join(dir, 'PG_VERSION'))) return `${dir} holds no store`;
  const uid = process.getuid?.();
  if (uid === undefined) return null; // no POSIX owners and modes to go by
  const owners = new Set([uid]);
  if (opts.shared) {
    owners.add(0);
    owners.add(statSync(join(packageRoot(), 'package.json')).uid);
  }
  return treeProblem(dir, owners);
}

/**
 * Makes a template at `dir` with `build(tmp)` (which creates the database in the empty folder `tmp`),
 * unless a usable one is there; one that fails {@link templateProblem} is removed and made again. Made
 * under umask 077 and a lock (two processes may want it at once), then set to its modes and renamed
 * into place, so `dir` is never seen half made. A `shared` template is readable by everybody and
 * writable by its owner; any other is private, in a private folder.
 */
export async function makeTemplate(dir: string, opts: { shared?: boolean; build: (tmp: string) => Promise<void> }): Promise<string> {
  const shared = opts.shared ?? false;
  const modes = shared ? SHARED_MODES : PRIVATE_MODES;
  if (!shared) makePrivateDir(dirname(dir));
  const usable = () => existsSync(join(dir, 'PG_VERSION')) && templateProblem(dir, { shared }) === null;
  if (usable()) return dir;
  const waitMs = 120_000;
  const release = await acquireLock(`${dir}.lock`, {
    waitMs,
    purpose: 'making a data template',
    busy: (owner) => new NexusError('STORE_BUSY', `the template at ${dir} is being made by ${describeOwner(owner)} (waited ${Math.round(waitMs / 1000)} s)`, { pid: owner?.pid ?? null }),
  });
  try {
    if (usable()) return dir;
    if (existsSync(dir)) {
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch (err) {
        throw new NexusError('STORE_FAILED', `the template at ${dir} cannot be trusted (${templateProblem(dir, { shared }) ?? 'half made'}) and could not be removed: ${String(err)}`, undefined, { cause: err });
      }
    }
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    try {
      await withPrivateUmask(() => opts.build(tmp));
      tightenTree(tmp, modes);
      renameSync(tmp, dir);
    } catch (err) {
      rmSync(tmp, { recursive: true, force: true });
      throw err;
    }
    return dir;
  } finally {
    release();
  }
}

/**
 * Removes the templates of other versions beside `dir` (named as it is, `<name>-<hex hash>`): a template
 * of an older schema or PGlite is never used again.
 */
export function removeOtherTemplates(dir: string): void {
  const kind = basename(dir).replace(/-[0-9a-f]+$/, '');
  const other = new RegExp(`^${kind}-[0-9a-f]+$`);
  for (const name of readdirSync(dirname(dir))) {
    if (other.test(name) && name !== basename(dir)) rmSync(join(dirname(dir), name), { recursive: true, force: true });
  }
}

/** Bytes compared at a time when a large file is copied: a block of zeros is left as a hole. */
const BLOCK = 64 * 1024;
/** Files at least this large (WAL segments, 16 MB each) are copied block by block, holes kept. */
const SPARSE_FROM = 1024 * 1024;
const ZEROS = Buffer.alloc(BLOCK);

/**
 * Copies the template at `template` to the new folder `dest`, private (folders 0700, files 0600):
 * through a temporary sibling renamed into place, so `dest` is whole or absent. A large file's blocks
 * of zeros are not written but left as holes, which read back as the same zeros: a template's WAL
 * segment is 16 MB of which the database needs the few pages since its last checkpoint.
 */
export function copyTemplate(template: string, dest: string): void {
  const tmp = `${dest}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  try {
    copyTree(template, tmp);
    renameSync(tmp, dest);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** Copies the folder `from` to the new folder `to`, private from birth. Only plain files and folders are copied. */
function copyTree(from: string, to: string): void {
  mkdirSync(to, { mode: PRIVATE_MODES.dir });
  chmodSync(to, PRIVATE_MODES.dir);
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    if (entry.isDirectory()) copyTree(source, join(to, entry.name));
    else if (entry.isFile()) copyFile(source, join(to, entry.name));
    else throw new NexusError('STORE_FAILED', `the template holds ${source}, which is not a plain file or folder`);
  }
}

function copyFile(source: string, target: string): void {
  const data = readFileSync(source);
  const fd = openSync(target, 'wx', PRIVATE_MODES.file);
  try {
    fchmodSync(fd, PRIVATE_MODES.file);
    if (data.length < SPARSE_FROM) writeAll(fd, data, 0);
    else {
      for (let at = 0; at < data.length; at += BLOCK) {
        const block = data.subarray(at, at + BLOCK);
        if (!block.equals(ZEROS.subarray(0, block.length))) writeAll(fd, block, at);
      }
      ftruncateSync(fd, data.length);
    }
  } finally {
    closeSync(fd);
  }
}

function writeAll(fd: number, data: Buffer, position: number): void {
  for (let done = 0; done < data.length; ) done += writeSync(fd, data, done, data.length - done, position + done);
}

/**
 * Finishes a template's database before it is closed for the last time. Drops initdb's template0 and
 * template1, there for CREATE DATABASE, which neither a workspace store nor a relay ever runs (each copy
 * is then 25 MB and 439 files, not 39 MB and 1,039). Then moves to a new WAL segment and checkpoints
 * there, with the old segment removed rather than kept for reuse and the new one made without writing
 * its zeros: the template's WAL is one segment holding little more than the checkpoint record, where it
 * held everything initdb and the migrations wrote (8 MB), and a copy has nothing to replay.
 */
export async function finishTemplate(pg: { exec(sql: string): Promise<unknown> }): Promise<void> {
  await pg.exec("UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')");
  await pg.exec('DROP DATABASE template0');
  await pg.exec('DROP DATABASE template1');
  await pg.exec('SET wal_recycle = off');
  await pg.exec('SET wal_init_zero = off');
  await pg.exec('SELECT pg_switch_wal()');
  await pg.exec('CHECKPOINT');
}
