// The trust folder's public door: trust entries (.nxs/trust.json), the seen-stamps store, and
// admitting a commission stamp against both.
import { STAMP_DEFAULT_CLOCK_TOLERANCE_SEC, STAMP_MAX_KEYS, verifyStamp, workspaceOfKey, type PublicJwk, type StampVerdict } from '../../../crypto/index.js';
import type { WorkspaceId } from '../../../protocol/ids.js';
import type { WorkspacePaths } from '../../paths.js';
import { selfId, trustResolver } from './entries.js';
import { FileSeenStore, seenStampStore, type SeenStampStore } from './seen.js';

export {
  addTrust,
  findTrust,
  listTrust,
  readKeyArgument,
  removeTrust,
  resolveAlias,
  resolveWorkspaceRef,
  selfId,
  trustFile,
  trustResolver,
  type AddTrustInput,
  type AddTrustResult,
  type TrustEntry,
} from './entries.js';
export { FileSeenStore, MemorySeenStore, seenFile, seenStampStore, type FileSeenStoreOptions, type SeenStampStore } from './seen.js';

/** One row of a workspace's key chain as this node verified it: `key` was certified by a rotation op signed by `signedBy`. */
export type CertifiedKey = { key: string; signedBy: string };

export type AdmitStampOptions = {
  now?: Date;
  clockToleranceSec?: number;
  /** Where admitted ids are kept (default: the workspace's `.nxs/stamps-seen.json`). */
  seen?: SeenStampStore;
  /**
   * The key chain this node holds for `iss` (rows of `workspace_keys`, oldest first), or none. Only
   * keys reachable from the trusted genesis key through `signedBy` links are offered to verification.
   */
  certified?: (iss: WorkspaceId) => readonly CertifiedKey[];
};

/**
 * The keys of `rows` certified by a chain that starts at `genesis` (a key signed by the genesis key,
 * a key signed by one of those, ...), in the rows' order, the newest `max` of them at most.
 * Rows that are not canonical keys are ignored.
 */
export function chainFrom(genesis: string, rows: readonly CertifiedKey[], max: number = STAMP_MAX_KEYS - 1): string[] {
  const reached = new Set<string>([genesis]);
  const order: string[] = [];
  let grown = true;
  while (grown) {
    grown = false;
    for (const r of rows) {
      if (reached.has(r.key) || !reached.has(r.signedBy) || workspaceOfKey(r.key) === null) continue;
      reached.add(r.key);
      order.push(r.key);
      grown = true;
    }
  }
  const rank = new Map(rows.map((r, i) => [r.key, i]));
  order.sort((a, b) => rank.get(a)! - rank.get(b)!);
  return max <= 0 ? [] : order.slice(-max);
}

/**
 * The keys a stamp from `iss` may verify with: the trusted genesis key (read afresh, so removing the
 * trust entry refuses everything at once), then the keys its verified rotation chain certified.
 */
export function chainTrustResolver(
  paths: Pick<WorkspacePaths, 'nxs'>,
  certified?: (iss: WorkspaceId) => readonly CertifiedKey[],
): (iss: WorkspaceId) => PublicJwk[] | null {
  const trust = trustResolver(paths);
  return (iss) => {
    const genesis = trust(iss);
    if (genesis === null) return null;
    if (certified === undefined) return [genesis];
    const keys = chainFrom(genesis.x, certified(iss));
    return [genesis, ...keys.map((x): PublicJwk => ({ kty: 'OKP', crv: 'Ed25519', x }))];
  };
}

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
    trust: chainTrustResolver(paths, opts.certified),
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
