// Where things live: the package's own files, the node's home folder, a workspace's .nxs folder.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

// From its own module, not infra's door: nxc's first module takes the home from here and must stay light.
export { packageRoot, packageVersion } from '../infra/package.js';

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
