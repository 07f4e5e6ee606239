// The working-copy lease's public door: the pure rules, the fold of its facts, the status view, and the mover
// that parks and restores work in a git working copy.
export { decide, type LeaseDecision } from './rules.js';
export { applyLeaseFact, foldLease } from './state.js';
export { leaseView, LIVENESS_NOTE, type LeaseView } from './view.js';
export { anyAlive, bound, finished, heldForHandback, provablyDead } from './area.js';
export { splitOrdered } from './ordered.js';
export type { LeaseIntent } from './events.js';
export { restoreNotice, type RestoreFacts } from './notice.js';
export { fenceGrant, park, recover, restore, PARK_BRANCH_PREFIX, type FaultPoint, type MoverOptions, type RestoreOutcome } from './mover.js';
export { TOKEN_REF } from './repo.js';
export { leaseStatus, describeLease, type LeaseStatus } from './status.js';
export { leasesCapability } from './record.js';
