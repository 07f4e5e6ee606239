// The working-copy lease as one record: its facts' op kinds and fold, `nxc withdraw`, the append policy every
// batch passes, and its clock.
import { LeaseOpPayloadSchema } from '../../../protocol/leases.js';
import type { ThreadsCapability } from '../threads/index.js';
import { leaseHandlers } from './commands.js';
import { leasePolicy, leaseTick } from './policy.js';
import { leaseProjection } from './store.js';

export const leasesCapability: ThreadsCapability<keyof typeof leaseHandlers> = {
  name: 'leases',
  opKinds: LeaseOpPayloadSchema.options.map((o) => o.shape.kind.value),
  projections: [leaseProjection],
  handlers: leaseHandlers,
  appendPolicies: [leasePolicy],
  afterCommit: [],
  tick: [leaseTick],
};
