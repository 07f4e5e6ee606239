// Where the relay finds its SQL migrations and its version, and keeps its data by default.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { packageRoot } from '../infra/index.js';

export { packageVersion } from '../infra/index.js';

/** The folder of the relay's SQL migrations (`migrations/relay`). */
export function relayMigrationsDir(): string {
  return join(packageRoot(), 'migrations', 'relay');
}

/** The relay's default data folder: `$NEXUS_HOME/relay`, or `~/.nexus/relay`. */
export function defaultRelayDataDir(env: NodeJS.ProcessEnv = process.env): string {
  const home = env['NEXUS_HOME'];
  return join(home && home.length > 0 ? resolve(home) : join(homedir(), '.nexus'), 'relay');
}
