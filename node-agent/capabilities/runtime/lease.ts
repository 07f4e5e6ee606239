// Per-command leases on the working copy: taken right before one acting command, revision-checked, heartbeated, released in finally.
// The lease on disk is an adapter's (adapters/workspace); what stays here decides and touches no file.
import { DEFAULT_LEASE_TTL_MS, type CommandLease, type CommandLeases } from '../../adapters/workspace/index.js';

export { DEFAULT_LEASE_TTL_MS, fileCommandLeases, LeaseRecordSchema, type CommandLease, type CommandLeases, type FileLeaseOptions, type LeaseRecord } from '../../adapters/workspace/index.js';

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
