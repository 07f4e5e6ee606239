// Where the relay finds its SQL migrations and its version, and keeps its data by default.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;
let version: string | undefined;

/** The package root (source and dist sit at different depths, so walk up to package.json). */
function packageRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'nexus') return (root = dir);
    const up = dirname(dir);
    if (up === dir) throw new TypeError('nexus package root not found above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
}

/** The package version (package.json), as /v1/info and the build-info metric report it. */
export function packageVersion(): string {
  return (version ??= String((JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version?: unknown }).version ?? '0.0.0'));
}

/** The folder of the relay's SQL migrations (`migrations/relay`). */
export function relayMigrationsDir(): string {
  return join(packageRoot(), 'migrations', 'relay');
}

/** The relay's default data folder: `$NEXUS_HOME/relay`, or `~/.nexus/relay`. */
export function defaultRelayDataDir(env: NodeJS.ProcessEnv = process.env): string {
  const home = env['NEXUS_HOME'];
  return join(home && home.length > 0 ? resolve(home) : join(homedir(), '.nexus'), 'relay');
}
