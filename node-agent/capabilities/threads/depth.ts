// The depth guard: how deep a spawn chain is, and where it stops.
import { DEPTH_CAP } from '../../../protocol/depth.js';
import { NexusError } from '../../../protocol/errors.js';

export { DEPTH_CAP };

/**
 * The depth a caller acts at. The store's anchor is the floor: an environment
 * claim (NXC_HOP) may raise it and never lower it. A caller with no session is
 * exactly as deep as it claims, which is what a person at a terminal looks like.
 */
export function callerDepth(anchored: number | null, claimed: number | null): number {
  if (anchored === null) return claimed ?? 0;
  return claimed === null ? anchored : Math.max(anchored, claimed);
}

/**
 * The depth a commissioned session starts at: one below its caller. Past the cap
 * the trigger is refused here, before anything is written or started.
 */
export function commissionDepth(caller: number, target: string): number {
  const depth = caller + 1;
  if (depth > DEPTH_CAP) {
    throw new NexusError(
      'DEPTH_EXCEEDED',
      `commissioning ${target} would open hop ${depth}, past the cap of ${DEPTH_CAP}; answer or escalate instead`,
      { caller_depth: caller, cap: DEPTH_CAP },
    );
  }
  return depth;
}

/** Parses NXC_HOP: absent is no claim; anything but a non-negative integer is refused. */
export function parseHopClaim(raw: string | undefined): number | null {
  if (raw === undefined || raw === '') return null;
  if (!/^\d{1,6}$/.test(raw)) {
    throw new NexusError('BAD_ENVIRONMENT', `NXC_HOP must be a non-negative integer, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}
