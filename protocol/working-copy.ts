// The wire shape of a working-copy handover record: where a git working copy stood when a message was posted.
import { z } from 'zod';

/**
 * Where a git working copy stood at one moment.
 *
 * - `commit`: the full HEAD object name (40 hex; 64 in a SHA-256 repository), or `null` on an
 *   unborn branch (no commit yet).
 * - `branch`: the checked-out branch name, or `null` when HEAD is detached.
 * - `dirty`: true when anything differs from HEAD: staged or unstaged changes, or untracked files
 *   that are not ignored. Those changes live only in this folder, so a reader must know.
 * - `fingerprint`: `sha256:` + 64 hex over HEAD and the content of every changed tracked and
 *   untracked-but-not-ignored file. Two records with equal fingerprints name the same state,
 *   which is what lets a reader tell whether the working copy moved between two messages.
 */
export const WorkingCopySchema = z.object({
  commit: z
    .string()
    .regex(/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/, 'a full lowercase hex object name')
    .nullable(),
  branch: z.string().min(1).nullable(),
  dirty: z.boolean(),
  fingerprint: z.string().regex(/^sha256:[0-9a-f]{64}$/, "'sha256:' followed by 64 hex digits"),
});

/** A working-copy handover record; see {@link WorkingCopySchema}. */
export type WorkingCopy = z.infer<typeof WorkingCopySchema>;
