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
 * True when starting failed because the address is taken. The relay reports it with a code of its
 * own and keeps the OS error as the cause; the OS code is checked too, wherever it sits.
 */
export function addressInUse(err: unknown): boolean {
  const e = err as { code?: unknown; cause?: { code?: unknown }; details?: { os_code?: unknown; cause?: { code?: unknown } }; message?: unknown } | null;
  if (e === null || typeof e !== 'object') return false;
  const codes = [e.code, e.cause?.code, e.details?.os_code, e.details?.cause?.code];
  return codes.includes('EADDRINUSE') || codes.includes('ADDRESS_IN_USE') || (typeof e.message === 'string' && e.message.includes('EADDRINUSE'));
}
