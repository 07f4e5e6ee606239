// Where `npm start` puts its relay: the port asked for (7420, or NEXUS_RELAY_PORT), or a free one when
// that is taken, as the README promises.
import { DEFAULT_RELAY_PORT } from '../server/index.js';

/** The port asked for first: NEXUS_RELAY_PORT (0: any free one), else the relay's default. */
export function preferredPort(env: NodeJS.ProcessEnv): number {
  const raw = env['NEXUS_RELAY_PORT'];
  if (raw === undefined || raw === '') return DEFAULT_RELAY_PORT;
  const port = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(port >= 0 && port <= 65535)) throw new Error(`NEXUS_RELAY_PORT=${JSON.stringify(raw)} is not a port (0 to 65535; 0 takes a free one)`);
  return port;
}

/**
 * True when starting failed because the address is taken: the relay's ADDRESS_IN_USE, or the OS's
 * EADDRINUSE anywhere along the chain of causes (a coded error keeps the OS error as its `cause`).
 */
export function addressInUse(err: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e = err; typeof e === 'object' && e !== null && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    const code = (e as { code?: unknown }).code;
    if (code === 'EADDRINUSE' || code === 'ADDRESS_IN_USE') return true;
  }
  return false;
}
