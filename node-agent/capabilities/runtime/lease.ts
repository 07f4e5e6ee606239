// Per-command leases on the working copy: taken right before one acting command, revision-checked, heartbeated, released in finally.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
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

/** Whether a lease found in place may be cleared: only when its holder is provably gone. Pure. */
export function isStale(record: LeaseRecord, now: number, here: { host: string; alive: (pid: number) => boolean }): boolean {
  if (now >= record.expires_at) return true;
  return record.host === here.host && !here.alive(record.pid);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export type FileLeaseOptions = {
  /** The lease file, e.g. `<workspace>/.nxs/command-lease.json`. */
  file: string;
  /** The working copy's revision now; compared with what the model last inspected. */
  revision: () => Promise<string>;
  ttlMs?: number;
  now?: () => number;
};

export const DEFAULT_LEASE_TTL_MS = 30_000;

async function readRecord(file: string): Promise<LeaseRecord | null> {
  try {
    return LeaseRecordSchema.parse(JSON.parse(await readFile(file, 'utf8')));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    // A torn or foreign file is treated as held with no expiry information: it is left alone.
    return { lease_id: 'unreadable', owner: 'unknown', pid: -1, host: '', revision: '', acquired_at: 0, expires_at: Number.MAX_SAFE_INTEGER };
  }
}

/** Writes `record` to a fresh temporary file, for a `link` (create) or `rename` (replace) into place. */
async function staged(file: string, record: LeaseRecord): Promise<string> {
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(tmp, JSON.stringify(record) + '\n', { mode: 0o600 });
  return tmp;
}

/** A lease held as one file; `link` creates it atomically with its content, so a reader never sees it half-written. */
export function fileCommandLeases(opts: FileLeaseOptions): CommandLeases {
  const ttl = opts.ttlMs ?? DEFAULT_LEASE_TTL_MS;
  const now = opts.now ?? Date.now;
  const host = hostname();
  const file = opts.file;

  async function create(record: LeaseRecord): Promise<boolean> {
    await mkdir(path.dirname(file), { recursive: true });
    const tmp = await staged(file, record);
    try {
      await link(tmp, file);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    } finally {
      await unlink(tmp).catch(() => undefined);
    }
  }

  /** Removes the lease only while it is still `leaseId`: a lease someone else has taken since is not ours to remove. */
  async function removeIf(leaseId: string): Promise<boolean> {
    const current = await readRecord(file);
    if (current === null || current.lease_id !== leaseId) return false;
    const tomb = `${file}.${randomBytes(6).toString('hex')}.released`;
    await rename(file, tomb);
    const moved = await readRecord(tomb);
    if (moved?.lease_id !== leaseId) {
      // Lost a race with a takeover between the read and the rename: put theirs back.
      await rename(tomb, file).catch(() => undefined);
      return false;
    }
    await unlink(tomb);
    return true;
  }

  const leases: CommandLeases = {
    async recover() {
      const record = await readRecord(file);
      if (record === null || !isStale(record, now(), { host, alive })) return null;
      return (await removeIf(record.lease_id)) ? record : null;
    },

    async acquire({ owner, expectedRevision }) {
      const t = now();
      const record: LeaseRecord = { lease_id: randomBytes(8).toString('hex'), owner, pid: process.pid, host, revision: expectedRevision, acquired_at: t, expires_at: t + ttl };
      if (!(await create(record))) {
        // A crashed holder's lease is cleared by validated recovery, then the take is tried once more.
        if ((await leases.recover()) === null || !(await create(record))) {
          const holder = await readRecord(file);
          throw new NexusError('LEASE_HELD', `the working copy is held by ${holder?.owner ?? 'another editor'} for a command`, { holder: holder?.owner ?? null, pid: holder?.pid ?? null });
        }
      }
      let current: string;
      try {
        current = await opts.revision();
      } catch (err) {
        await removeIf(record.lease_id);
        throw err;
      }
      if (current !== expectedRevision) {
        await removeIf(record.lease_id);
        throw new NexusError('REVISION_CONFLICT', 'the working copy changed since it was last inspected; inspect it again before acting', { expected: expectedRevision, current });
      }
      return {
        id: record.lease_id,
        revision: expectedRevision,
        async heartbeat() {
          const held = await readRecord(file);
          if (held?.lease_id !== record.lease_id) throw new NexusError('LEASE_LOST', `the command lease ${record.lease_id} is no longer held`, { lease: record.lease_id });
          const tmp = await staged(file, { ...record, expires_at: now() + ttl });
          await rename(tmp, file);
        },
        async release() {
          if (!(await removeIf(record.lease_id))) {
            throw new NexusError('LEASE_LOST', `the command lease ${record.lease_id} was taken over or removed before it was released`, { lease: record.lease_id });
          }
        },
      };
    },
  };
  return leases;
}

/** Attaches a secondary error to a primary one, which stays what is thrown. */
export function addNote(err: unknown, note: string): void {
  if (err !== null && typeof err === 'object') {
    const e = err as { notes?: string[] };
    e.notes = [...(e.notes ?? []), note];
  }
}

/**
 * Runs `command` under its own lease: acquired immediately before, heartbeated while it runs,
 * released in `finally` on every path. A failed command's error stays primary and a release
 * failure is attached to it as a note; a release failure after success is what is thrown.
 */
export async function withCommandLease<T>(
  leases: CommandLeases,
  req: { owner: string; expectedRevision: string },
  command: (lease: CommandLease) => Promise<T>,
  heartbeatMs = DEFAULT_LEASE_TTL_MS / 3,
): Promise<T> {
  const lease = await leases.acquire(req);
  const timer = setInterval(() => {
    // A missed beat shows up at release as LEASE_LOST; nothing to do about it here.
    lease.heartbeat().catch(() => undefined);
  }, heartbeatMs);
  timer.unref();
  let primary: { err: unknown } | null = null;
  try {
    return await command(lease);
  } catch (err) {
    primary = { err };
    throw err;
  } finally {
    clearInterval(timer);
    try {
      await lease.release();
    } catch (cleanup) {
      // A failed command's error stays the one thrown; the release failure rides along as a note.
      if (primary !== null) addNote(primary.err, `releasing the command lease also failed: ${cleanup instanceof Error ? cleanup.message : String(cleanup)}`);
      else throw cleanup;
    }
  }
}
