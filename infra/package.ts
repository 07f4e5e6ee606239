// The installed package's own folder and version, for the node and the relay alike.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cachedRoot: string | undefined;
let cachedVersion: string | undefined;

/** Package `name`'s folder and version: `dir` or the nearest folder above it whose package.json names it; null when none does. */
function packageAbove(dir: string, name: string): { dir: string; version: unknown } | null {
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      const json = JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string; version?: unknown };
      if (json.name === name) return { dir, version: json.version };
    }
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

/** The installed package's root, found by walking up from this file (source and dist sit at different depths). */
export function packageRoot(): string {
  if (cachedRoot) return cachedRoot;
  const found = packageAbove(dirname(fileURLToPath(import.meta.url)), 'nexus');
  if (found === null) throw new TypeError('nexus package root not found above ' + fileURLToPath(import.meta.url));
  return (cachedRoot = found.dir);
}

/** The installed package's version, from its package.json (as /v1/info, the build-info metric and `--version` report it). */
export function packageVersion(): string {
  return (cachedVersion ??= String((JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version?: unknown }).version ?? '0.0.0'));
}

let cachedPglite: string | undefined;

/**
 * The version of PGlite this process runs, which decides the format of every data folder it makes: a
 * template made by another version is never taken for current ('unknown' when its package.json is not found).
 */
export function pgliteVersion(): string {
  if (cachedPglite === undefined) {
    const found = packageAbove(dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite')), '@electric-sql/pglite');
    cachedPglite = found === null ? 'unknown' : String(found.version);
  }
  return cachedPglite;
}
