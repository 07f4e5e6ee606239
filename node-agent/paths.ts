// Where things live: the package's own files, the node's home folder, a workspace's .nxs folder.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

let cachedRoot: string | undefined;

/** The installed package's root, found by walking up from this file (source and dist sit at different depths). */
export function packageRoot(): string {
  if (cachedRoot) return cachedRoot;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'nexus') {
      cachedRoot = dir;
      return dir;
    }
    const up = dirname(dir);
    if (up === dir) throw new TypeError('nexus package root not found above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
}

let cachedVersion: string | undefined;

/** The installed package's version, from its package.json. */
export function packageVersion(): string {
  cachedVersion ??= (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  return cachedVersion;
}

/** The node's state folder: NEXUS_HOME, or ~/.nexus. */
export function nexusHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env['NEXUS_HOME'];
  return fromEnv && fromEnv.length > 0 ? resolve(fromEnv) : join(homedir(), '.nexus');
}

/** The layout of a workspace's private folder. */
export function workspacePaths(root: string) {
  const nxs = join(root, '.nxs');
  return {
    root,
    nxs,
    config: join(nxs, 'config.json'),
    store: join(nxs, 'store'),
    keys: join(nxs, 'keys'),
    sessions: join(nxs, 'sessions'),
    personas: join(root, '.nxs-personas'),
  };
}
export type WorkspacePaths = ReturnType<typeof workspacePaths>;
