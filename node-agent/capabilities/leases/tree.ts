// Turning a working tree into commits and back, through private index files: the user's index is copied,
// never written, and the stash is never used.
import { join } from 'node:path';
import { readCappedBytes, writeFileAtomic } from '../../../infra/index.js';
import { deleteFromTree, LEASE_GIT_IDENTITY, removeOwnFile } from '../../adapters/git/index.js';
import { git, type Repo } from './repo.js';

/** The largest index copied (a repository of a few million files); past it the snapshot hashes afresh from HEAD. */
const MAX_INDEX_BYTES = 1024 * 2 ** 20;

export type Snapshot = {
  /** The commit holding the whole tree (tracked changes, deletions, untracked files not ignored), or null when clean. */
  work: string | null;
  /** The commit holding what was staged (second parent of `work`). */
  index: string | null;
  /** The trees of the whole tree and of the staged state, clean or not: two snapshots hold the same when these match. */
  trees: { work: string; index: string };
};

/**
 * Commits the tree as it stands on top of `head` without touching it (see {@link treesOf}). The work commit has two
 * parents, `head` and a commit of the staged state, so a restore can put both back.
 * `headTree`: `head`'s tree, when the caller read it already.
 */
export async function snapshot(repo: Repo, head: string, label: string, headTree?: string): Promise<Snapshot> {
  const trees = await treesOf(repo, head);
  const baseTree = headTree ?? (await git(repo, ['rev-parse', `${head}^{tree}`], { readOnly: true })).stdout.trim();
  if (trees.work === baseTree && trees.index === baseTree) return { work: null, index: null, trees };
  const env = { ...LEASE_GIT_IDENTITY };
  const index = (await git(repo, ['commit-tree', trees.index, '-p', head, '-m', `nexus: staged state of ${label}`], { env })).stdout.trim();
  const work = (await git(repo, ['commit-tree', trees.work, '-p', head, '-p', index, '-m', `nexus: uncommitted work of ${label}`], { env })).stdout.trim();
  return { work, index, trees };
}

/**
 * The trees the checkout holds, without touching it and without a commit: what is staged, and everything `git add -A`
 * would take (so .gitignore decides what stays out). A copy of the user's index does the adding: its stat data saves
 * hashing unchanged files.
 */
export async function treesOf(repo: Repo, head: string): Promise<Snapshot['trees']> {
  const tmp = join(repo.scratch, 'nexus-lease-park.index');
  await removeOwnFile(tmp);
  try {
    // Only a regular file is copied: a session can swap .git/index for a link to a secret (Nexus would copy the
    // secret where the session reads it) or to a FIFO. Without one, the staged state is HEAD's.
    const userIndex = await readCappedBytes(join(repo.gitDir, 'index'), MAX_INDEX_BYTES);
    if ('bytes' in userIndex) writeFileAtomic(tmp, userIndex.bytes, { mode: 0o600 });
    else await git(repo, ['read-tree', head], { indexFile: tmp });
    const index = (await git(repo, ['write-tree'], { indexFile: tmp })).stdout.trim();
    await git(repo, ['add', '-A'], { indexFile: tmp });
    const work = (await git(repo, ['write-tree'], { indexFile: tmp })).stdout.trim();
    return { work, index };
  } finally {
    await removeOwnFile(tmp);
  }
}

/**
 * Moves the files of the tree from commit `from` to commit `to`, touching only the paths that differ, with a
 * private index. Idempotent, so an interrupted restore can simply run it again: deletions ignore what is
 * already gone and checkout-index overwrites.
 */
export async function materialise(repo: Repo, from: string, to: string): Promise<void> {
  const diff = await git(repo, ['diff-tree', '-r', '-z', '--no-renames', '--name-status', from, to], { readOnly: true });
  const fields = splitNul(diff.raw);
  const deletes: Buffer[] = [];
  const writes: Buffer[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const status = fields[i]!.toString('latin1');
    (status === 'D' ? deletes : writes).push(fields[i + 1]!);
  }
  // Paths stay bytes: a name that is not UTF-8 must still reach the file it names.
  const top = Buffer.from(`${repo.top}/`);
  // Deletions first: a folder that becomes a file (or the reverse) must be out of the way.
  for (const path of deletes) await deleteFromTree(top, path);
  if (writes.length === 0) return;
  const tmp = join(repo.scratch, 'nexus-lease-restore.index');
  try {
    await git(repo, ['read-tree', to], { indexFile: tmp });
    const input = Buffer.concat(writes.flatMap((p) => [p, Buffer.from([0])]));
    await git(repo, ['checkout-index', '-f', '-z', '--stdin'], { indexFile: tmp, input });
  } finally {
    await removeOwnFile(tmp);
  }
}

function splitNul(raw: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let from = 0;
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === 0) {
      out.push(raw.subarray(from, i));
      from = i + 1;
    }
  }
  if (from < raw.length) out.push(raw.subarray(from));
  return out;
}
