// Stream and operator tokens: made random, stored only as their sha256, compared in constant time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * A fresh token: `nxr_` and 32 random bytes, base64url. The prefix keeps a token from ever starting
 * with `-` (one in 64 bare base64url strings does), which a command line would read as an option
 * (`nxs sync bind --token -x...` was refused as USAGE); it also makes a leaked token easy to search for.
 */
export function newToken(): string {
  return `nxr_${randomBytes(32).toString('base64url')}`;
}

/** What is stored for a token: its sha256, hex. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Whether `token` hashes to `hash`, without leaking where they differ. */
export function tokenMatches(token: string, hash: string): boolean {
  const a = Buffer.from(hashToken(token), 'hex');
  const b = Buffer.from(hash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
