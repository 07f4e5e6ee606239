// The trust folder's public door: trust entries (.nxs/trust.json), the seen-stamps store, and
// admitting a commission stamp against both.
import { STAMP_DEFAULT_CLOCK_TOLERANCE_SEC, verifyStamp, type StampVerdict } from '../../crypto/index.js';
import type { WorkspacePaths } from '../paths.js';
import { selfId, trustResolver } from './entries.js';
import { FileSeenStore, seenStampStore, type SeenStampStore } from './seen.js';

export {
  addTrust,
  findTrust,
  listTrust,
  readKeyArgument,
  removeTrust,
  resolveAlias,
  selfId,
  trustFile,
  trustResolver,
  type AddTrustInput,
  type AddTrustResult,
  type TrustEntry,
} from './entries.js';
export { FileSeenStore, MemorySeenStore, seenFile, seenStampStore, type FileSeenStoreOptions, type SeenStampStore } from './seen.js';

export type AdmitStampOptions = {
  now?: Date;
  clockToleranceSec?: number;
  /** Where admitted ids are kept (default: the workspace's `.nxs/stamps-seen.json`). */
  seen?: SeenStampStore;
};

/**
 * Verifies `token` as a stamp addressed to this workspace, from a workspace it trusts, and on
 * success remembers its jti so the same stamp is never admitted twice. Never throws on any token
 * (a failure to record the id refuses the stamp as STAMP_REPLAYED: fail closed).
 */
export async function admitStamp(paths: Pick<WorkspacePaths, 'nxs' | 'keys'>, token: unknown, opts: AdmitStampOptions = {}): Promise<StampVerdict> {
  const tolerance = opts.clockToleranceSec ?? STAMP_DEFAULT_CLOCK_TOLERANCE_SEC;
  const seen = opts.seen ?? seenStampStore(paths, { graceSec: tolerance });
  let audience: string;
  try {
    audience = selfId(paths);
  } catch {
    return { ok: false, code: 'STAMP_WRONG_AUDIENCE', message: 'this workspace has no readable public key to be addressed by' };
  }
  const verdict = await verifyStamp(token, {
    trust: trustResolver(paths),
    audience,
    seen: (jti) => seen.has(jti),
    clockToleranceSec: tolerance,
    ...(opts.now === undefined ? {} : { now: opts.now }),
  });
  if (!verdict.ok) return verdict;
  // Checked again and recorded in one step: two verifications of one stamp may both have passed `seen`.
  try {
    const { jti, exp } = verdict.claims;
    let fresh: boolean;
    if (seen instanceof FileSeenStore) fresh = seen.claim(jti, exp);
    else {
      fresh = !seen.has(jti);
      if (fresh) seen.add(jti, exp);
    }
    if (!fresh) return { ok: false, code: 'STAMP_REPLAYED', message: `the stamp ${verdict.claims.jti} was already used` };
  } catch (err) {
    return { ok: false, code: 'STAMP_REPLAYED', message: `the stamp's id could not be recorded, so it is not admitted (${err instanceof Error ? err.message : String(err)})` };
  }
  return verdict;
}
