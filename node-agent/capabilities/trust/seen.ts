// The ids of stamps already admitted, kept until each stamp can no longer pass on its own (past exp).
import { join } from 'node:path';
import { STAMP_DEFAULT_CLOCK_TOLERANCE_SEC } from '../../../crypto/index.js';
import { NexusError } from '../../../protocol/errors.js';
import type { WorkspacePaths } from '../../paths.js';
import { readJsonFile, withFileLock, writeJsonFileAtomic } from './files.js';

/** Where admitted stamp ids are remembered. A later integration may keep them in the store instead. */
export interface SeenStampStore {
  /** Whether `jti` was admitted (and is still remembered). */
  has(jti: string): boolean;
  /** Remembers `jti` until its stamp's `exp` (seconds since the epoch) plus the clock tolerance. */
  add(jti: string, exp: number): void;
}

export type FileSeenStoreOptions = {
  /** The clock, for pruning (default: Date.now). */
  now?: () => number;
  /** How long past `exp` an id is kept: the verifier's clock tolerance (default 60 s). */
  graceSec?: number;
};

const FILE_VERSION = 1;

export function seenFile(paths: Pick<WorkspacePaths, 'nxs'>): string {
  return join(paths.nxs, 'stamps-seen.json');
}

/**
 * `.nxs/stamps-seen.json` (mode 600): `{version: 1, seen: {jti: forget_after_seconds}}`. Every call
 * reads the file, so another instance (another process, or this one after a restart) sees what
 * was added; every write happens under a file lock and drops the ids whose time has passed.
 */
export class FileSeenStore implements SeenStampStore {
  private readonly now: () => number;
  private readonly graceSec: number;

  constructor(
    readonly file: string,
    opts: FileSeenStoreOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.graceSec = opts.graceSec ?? STAMP_DEFAULT_CLOCK_TOLERANCE_SEC;
  }

  private read(): Map<string, number> {
    const raw = readJsonFile(this.file);
    const seen = new Map<string, number>();
    if (raw === null) return seen;
    const table = (raw as { version?: unknown; seen?: unknown } | null)?.seen;
    if ((raw as { version?: unknown }).version !== FILE_VERSION || typeof table !== 'object' || table === null || Array.isArray(table)) {
      throw new NexusError('STORE_FAILED', `${this.file} is not a valid seen-stamps file; fix it or move it away`);
    }
    for (const [jti, until] of Object.entries(table)) if (typeof until === 'number') seen.set(jti, until);
    return seen;
  }

  private write(seen: Map<string, number>): void {
    const nowSec = Math.floor(this.now() / 1000);
    const kept: Record<string, number> = {};
    for (const [jti, until] of seen) if (until >= nowSec) kept[jti] = until;
    writeJsonFileAtomic(this.file, { version: FILE_VERSION, seen: kept });
  }

  has(jti: string): boolean {
    return this.read().has(jti);
  }

  add(jti: string, exp: number): void {
    withFileLock(this.file, () => {
      const seen = this.read();
      seen.set(jti, Math.max(seen.get(jti) ?? 0, exp + this.graceSec));
      this.write(seen);
    });
  }

  /** Adds `jti` unless it is there already, in one locked step; true when it was added. */
  claim(jti: string, exp: number): boolean {
    return withFileLock(this.file, () => {
      const seen = this.read();
      if (seen.has(jti)) return false;
      seen.set(jti, exp + this.graceSec);
      this.write(seen);
      return true;
    });
  }

  /** How many ids are remembered (expired ones included until the next write). */
  size(): number {
    return this.read().size;
  }
}

/** The workspace's seen-stamps store. */
export function seenStampStore(paths: Pick<WorkspacePaths, 'nxs'>, opts: FileSeenStoreOptions = {}): FileSeenStore {
  return new FileSeenStore(seenFile(paths), opts);
}

/** An in-memory store, for tests and for callers that keep the ids elsewhere. */
export class MemorySeenStore implements SeenStampStore {
  private readonly seen = new Map<string, number>();
  has(jti: string): boolean {
    return this.seen.has(jti);
  }
  add(jti: string, exp: number): void {
    this.seen.set(jti, exp);
  }
}
