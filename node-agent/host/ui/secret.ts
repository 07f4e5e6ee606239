// The dashboard's secret: one per node, kept in NEXUS_HOME/node/ui-secret (mode 600). Every request
// must carry it (in the URL once, then in the cookie set from it), on loopback as much as beyond.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../../infra/index.js';

/** 32 random bytes as base64url: 43 characters, too many to guess. */
const SECRET_RE = /^[A-Za-z0-9_-]{43,128}$/;

export function secretFile(nodeDir: string): string {
  return join(nodeDir, 'ui-secret');
}

/** The node's dashboard secret, made on first use; a file that does not hold a long random token is replaced. */
export function uiSecret(nodeDir: string): string {
  const file = secretFile(nodeDir);
  try {
    const text = readFileSync(file, 'utf8').trim();
    if (SECRET_RE.test(text)) {
      // The secret is a password: nobody but the node's user may read it, whatever the umask said.
      chmodSync(file, 0o600);
      return text;
    }
  } catch {
    /* made below */
  }
  mkdirSync(nodeDir, { recursive: true, mode: 0o700 });
  const secret = randomBytes(32).toString('base64url');
  writeFileAtomic(file, secret + '\n', { mode: 0o600 });
  return secret;
}

/** True when the secret is long and random enough to guard a port reachable from other machines. */
export function strongSecret(secret: string): boolean {
  return SECRET_RE.test(secret);
}

/** Compares in constant time (over digests, so lengths leak nothing either). */
export function secretMatches(given: string | undefined | null, secret: string): boolean {
  if (typeof given !== 'string' || given.length === 0 || given.length > 256) return false;
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(secret).digest();
  return timingSafeEqual(a, b);
}

/**
 * Beyond loopback, the cookie that carries the secret after the first visit; named by port, so two
 * nodes on one host keep theirs apart. Browsers send it to every port of that host.
 */
export function cookieName(port: number): string {
  return `nxs_ui_${port}`;
}

/**
 * On loopback, the cookie that carries the secret. `__Host-` makes the browser keep it to the exact host
 * that set it (no Domain, Path=/, Secure): with the dashboard on a name of its own, no other local
 * server is sent it. Browsers treat http://*.localhost as a secure context, so Secure is honoured there.
 */
export const HOST_COOKIE = '__Host-nxs_ui';

/**
 * The dashboard's own host name on loopback: a name under `.localhost` (browsers resolve it to loopback
 * themselves) made from the secret, so another local server can neither share its cookies nor guess
 * the name to send a browser to. A new secret makes a new name.
 */
export function dashboardHostName(secret: string): string {
  return `nxs-${createHash('sha256').update('nxs-ui-host\0').update(secret).digest('hex').slice(0, 20)}.localhost`;
}
