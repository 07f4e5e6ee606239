// Data folders made once and copied many times. Creating a PGlite database runs PostgreSQL's initdb in
// WebAssembly (seconds of CPU, more on a busy machine); copying a finished one takes milliseconds. The
// package ships such templates in dist/ (made by `npm run build`), and a machine may make its own. A
// template is copied into every folder made from it, so it is trusted only when nobody but its owner
// could have changed it.
import { cpSync, existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
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

/**
 * Copies the template at `template` to the new folder `dest`, private (folders 0700, files 0600):
 * through a temporary sibling renamed into place, so `dest` is whole or absent.
 */
export function copyTemplate(template: string, dest: string): void {
  const tmp = `${dest}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  try {
    cpSync(template, tmp, { recursive: true });
    tightenTree(tmp, PRIVATE_MODES);
    renameSync(tmp, dest);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Removes initdb's template0 and template1, there for CREATE DATABASE, which neither a workspace store
 * nor a relay ever runs (each copy is then 25 MB and 439 files, not 39 MB and 1,039), and checkpoints,
 * so a copy starts with nothing to replay.
 */
export async function dropTemplateDatabases(pg: { exec(sql: string): Promise<unknown> }): Promise<void> {
  await pg.exec("UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')");
  await pg.exec('DROP DATABASE template0');
  await pg.exec('DROP DATABASE template1');
  await pg.exec('CHECKPOINT');
}
