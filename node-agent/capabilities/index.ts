// The capabilities' shared registrations: the projections every stored op is folded into.
import type { Projection } from '../kernel/index.js';
import { roundsProjection } from './channels/projection.js';
import { keysProjection } from './keys/projection.js';
import { leaseProjection } from './leases/store.js';
import { operationsProjection, personaRunsProjection } from './threads/operations.js';

/** Every projection of a workspace store, in the order they run over a stored batch. */
export const PROJECTIONS: readonly Projection[] = [operationsProjection, personaRunsProjection, keysProjection, leaseProjection, roundsProjection];
