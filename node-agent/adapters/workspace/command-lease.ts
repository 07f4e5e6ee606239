// The working copy's command lease on one machine: infra's lock folder, taken for one command and renewed while it runs.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { acquireLock, clearStaleLock, type LockOwner } from '../../../infra/index.js';
import { NexusError } from '../../../protocol/errors.js';

/**
 * What the runtime needs from whoever guards the working copy. The file-based one below
 * serves a single machine; the engine's working-copy lease can stand behind the same shape.
 */
export interface CommandLeases {
  /**
   * Takes the working copy for one command, if nobody else holds it and it is still at
   * `expectedRevision`. A live holder's lease is never touched.
   * @throws NexusError LEASE_HELD (another editor holds it) or REVISION_CONFLICT (it changed since inspection)
   */
  acquire(req: { owner: string; expectedRevision: string }): Promise<CommandLease>;
  /** Clears a lease whose holder is provably gone (its process is dead, or it stopped heartbeating). */
  recover(): Promise<LeaseRecord | null>;
}

export interface CommandLease {
  readonly id: string;
  readonly revision: string;
  /** Pushes the expiry on. @throws NexusError LEASE_LOST when the lease is no longer this one */
  heartbeat(): Promise<void>;
  /** @throws NexusError LEASE_LOST when the lease is no longer this one */
  release(): Promise<void>;
}

export const LeaseRecordSchema = z.object({
  lease_id: z.string(),
  owner: z.string(),
  pid: z.number().int(),
  host: z.string(),
  revision: z.string(),
  acquired_at: z.number(),
  expires_at: z.number(),
});
export type LeaseRecord = z.infer<typeof LeaseRecordSchema>;

export const DEFAULT_LEASE_TTL_MS = 30_000;

export type FileLeaseOptions = {
  /** The lease's lock folder, e.g. `<workspace>/.nxs/command-lease`. */
  file: string;
  /** The working copy's revision now; compared with what the model last inspected. */
  revision: () => Promise<string>;
  ttlMs?: number;
  now?: () => number;
};

/** A lease's owner record: the lock's own fields plus what the lease wrote beside them (`extra`). */
const OwnerRecordSchema = LeaseRecordSchema.omit({ expires_at: true }).extend({ expires: z.number() });
/** Who holds it, read leniently: a foreign or torn record still names what it can. */
const HolderSchema = z.object({ owner: z.string().catch(''), pid: z.number().int().nullable().catch(null) });

function leaseOf(owner: LockOwner | null): LeaseRecord | null {
  const r = OwnerRecordSchema.safeParse(owner);
  if (!r.success) return null;
  const { expires, ...rest } = r.data;
  return { ...rest, expires_at: expires };
}

function heldError(owner: LockOwner | null): NexusError {
  const h = HolderSchema.safeParse(owner ?? {});
  const holder = h.success && h.data.owner !== '' ? h.data.owner : null;
  const pid = h.success ? h.data.pid : null;
  return new NexusError('LEASE_HELD', `the working copy is held by ${holder ?? 'another editor'} for a command`, { holder, pid });
}

/**
 * A lease held as infra's lock folder with an expiry: a holder whose process is dead here, or that
 * stopped heartbeating, is cleared at the next take; a live, heartbeating one never.
 */
export function fileCommandLeases(opts: FileLeaseOptions): CommandLeases {
  const ttl = opts.ttlMs ?? DEFAULT_LEASE_TTL_MS;
  const now = opts.now ?? Date.now;
  const lock = opts.file;

  return {
    async recover() {
      return leaseOf(clearStaleLock(lock, now));
    },

    async acquire({ owner, expectedRevision }) {
      const id = randomBytes(8).toString('hex');
      // One try: the lock clears a gone holder itself before it gives up.
      const held = await acquireLock(lock, {
        waitMs: 0,
        purpose: `a command for ${owner}`,
        ttlMs: ttl,
        now,
        extra: { lease_id: id, owner, revision: expectedRevision, acquired_at: now() },
        busy: heldError,
      });
      let current: string;
      try {
        current = await opts.revision();
      } catch (err) {
        held();
        throw err;
      }
      if (current !== expectedRevision) {
        held();
        throw new NexusError('REVISION_CONFLICT', 'the working copy changed since it was last inspected; inspect it again before acting', { expected: expectedRevision, current });
      }
      return {
        id,
        revision: expectedRevision,
        async heartbeat() {
          if (!held.renew()) throw new NexusError('LEASE_LOST', `the command lease ${id} is no longer held`, { lease: id });
        },
        async release() {
          if (!held()) throw new NexusError('LEASE_LOST', `the command lease ${id} was taken over or removed before it was released`, { lease: id });
        },
      };
    },
  };
}
