// The trust folder's public door: trust entries (.nxs/trust.json), the seen stamp ids (in the store), and
// admitting a commission stamp against both.
import { STAMP_DEFAULT_CLOCK_TOLERANCE_SEC, STAMP_MAX_KEYS, verifyStamp, workspaceOfKey, type PublicJwk, type StampVerdict } from '../../../crypto/index.js';
import type { WorkspaceId } from '../../../protocol/ids.js';
import type { WorkspacePaths } from '../../paths.js';
import type { Exec } from '../../kernel/index.js';
import { selfId, trustResolver } from './entries.js';
import { claimStamp } from './seen.js';

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
export { claimStamp, stampSeen } from './seen.js';
export { INVITE_PREFIX, inviteOf, readKeyOffer, type KeyOffer } from './offer.js';

/** One row of a workspace's key chain as this node verified it: `key` was certified by a rotation op signed by `signedBy`. */
export type CertifiedKey = { key: string; signedBy: string };

export type AdmitStampOptions = {
  now?: Date;
  clockToleranceSec?: number;
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
 * Verifies `token` as a stamp addressed to this workspace, from a workspace it trusts: everything but the
 * replay check, which is `claimAdmission` inside the transaction that admits the commission. Never throws.
 */
export async function verifyAdmission(paths: Pick<WorkspacePaths, 'nxs' | 'keys'>, token: unknown, opts: AdmitStampOptions = {}): Promise<StampVerdict> {
  let audience: string;
  try {
    audience = selfId(paths);
  } catch {
    return { ok: false, code: 'STAMP_WRONG_AUDIENCE', message: 'this workspace has no readable public key to be addressed by' };
  }
  return verifyStamp(token, {
    trust: chainTrustResolver(paths, opts.certified),
    audience,
    // Replays are caught by the claim in the store, in the admitting transaction.
    seen: () => false,
    clockToleranceSec: opts.clockToleranceSec ?? STAMP_DEFAULT_CLOCK_TOLERANCE_SEC,
    ...(opts.now === undefined ? {} : { now: opts.now }),
  });
}

/**
 * Claims a verified stamp's id in the store (`db`: the admitting transaction), kept until its expiry plus the
 * clock tolerance: the verdict as it was, or STAMP_REPLAYED when the id was admitted before.
 */
export async function claimAdmission(db: Exec, verdict: StampVerdict, opts: Pick<AdmitStampOptions, 'now' | 'clockToleranceSec'> = {}): Promise<StampVerdict> {
  if (!verdict.ok) return verdict;
  const { jti, exp } = verdict.claims;
  const nowSec = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  const fresh = await claimStamp(db, jti, exp + (opts.clockToleranceSec ?? STAMP_DEFAULT_CLOCK_TOLERANCE_SEC), nowSec);
  return fresh ? verdict : { ok: false, code: 'STAMP_REPLAYED', message: `the stamp ${jti} was already used` };
}

/** Verifies `token` and claims its id in `db` in one call, for a caller that holds no wider transaction. */
export async function admitStamp(db: Exec, paths: Pick<WorkspacePaths, 'nxs' | 'keys'>, token: unknown, opts: AdmitStampOptions = {}): Promise<StampVerdict> {
  return claimAdmission(db, await verifyAdmission(paths, token, opts), opts);
}
export { trustCapability } from './record.js';
