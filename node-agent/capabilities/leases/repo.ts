// What the mover needs to know about a repository before it writes into it, the token ref that fences every
// change, and the journal that lets an interrupted move be finished or rolled back.
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { makePrivateDir, readCappedBytes, writeFileAtomic } from '../../../infra/index.js';
import { isNexusError, NexusError } from '../../../protocol/errors.js';
import { pathExists, statOrNull } from '../../adapters/files/index.js';
import {
  makeFilePrivate,
  mayHoldRepository,
  readJournalText,
  removeOwnFile,
  runGit,
  saysOutsideRepository,
  type RunGitOptions,
} from '../../adapters/git/index.js';

/** A full object name: 40 hex digits (SHA-1) or 64 (SHA-256). */
const OBJECT_NAME = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

/** The ref holding the current grant's token, as a blob `nexus-lease-token <n>`. Only ever raised. */
export const TOKEN_REF = 'refs/nexus/lease/token';

/**
 * `journal`: the file an interrupted move is recorded in; `scratch`: the folder for the move's private index files.
 * Both are in the folder given to {@link probe} (a workspace's `.nxs/`) when there is one (see {@link journalFile}).
 */
export type Repo = {
  top: string;
  gitDir: string;
  /** `sha1` or `sha256`; null when this git did not say (older than 2.25), and blob names are then asked of git. */
  objectFormat: 'sha1' | 'sha256' | null;
  tokenOids: Map<number, string>;
  journal: string;
  scratch: string;
};

export function git(repo: Repo, args: readonly string[], opts?: RunGitOptions) {
  return runGit(repo.top, args, opts);
}

/**
 * The repository whose work tree contains `dir`, or null when there is none (a plain or missing folder).
 * `journalDir`: where the journal of a move is kept (see {@link journalFile}).
 */
export async function probe(dir: string, journalDir?: string): Promise<Repo | null> {
  if ((await statOrNull(dir))?.isDirectory() !== true || !mayHoldRepository(dir)) return null;
  try {
    const out = await runGit(dir, ['rev-parse', '--show-toplevel', '--absolute-git-dir', '--show-object-format'], { readOnly: true });
    const [top, gitDir, format] = out.stdout.split('\n');
    if (!top || !gitDir) return null;
    const objectFormat = format === 'sha1' || format === 'sha256' ? format : null;
    return { top, gitDir, objectFormat, tokenOids: new Map(), journal: journalFile(gitDir, journalDir), scratch: journalDir ?? gitDir };
  } catch (err) {
    const stderr = isNexusError(err) ? String(err.details?.stderr ?? '') : '';
    if (saysOutsideRepository(stderr)) return null;
    throw err;
  }
}

const SEQUENCES: Array<[string, string]> = [
  ['rebase-merge', 'a rebase is in progress: finish it (git rebase --continue) or abort it (git rebase --abort)'],
  ['rebase-apply', 'a rebase or git am is in progress: finish it (--continue) or abort it (--abort)'],
  ['MERGE_HEAD', 'a merge is in progress: finish it (git commit) or abort it (git merge --abort)'],
  ['CHERRY_PICK_HEAD', 'a cherry-pick is in progress: finish it (git cherry-pick --continue) or abort it (git cherry-pick --abort)'],
  ['REVERT_HEAD', 'a revert is in progress: finish it (git revert --continue) or abort it (git revert --abort)'],
  ['sequencer', 'a cherry-pick or revert sequence is in progress: finish it (--continue) or abort it (--abort)'],
  ['BISECT_LOG', 'a bisect is in progress: end it (git bisect reset)'],
];

/**
 * What must be finished before the tree may be committed, or null. Committing a conflicted index would record
 * a half-finished merge as if it were the work.
 */
export async function unfinished(repo: Repo): Promise<string | null> {
  for (const [name, what] of SEQUENCES) {
    if (await pathExists(join(repo.gitDir, name))) return what;
  }
  const unmerged = await git(repo, ['ls-files', '-u', '-z'], { readOnly: true });
  if (unmerged.raw.length > 0) return 'the index has conflicted paths: resolve them (git add) or reset them';
  return null;
}

/** The commit a ref names, or null when it does not exist. */
export async function tip(repo: Repo, ref: string): Promise<string | null> {
  const out = await git(repo, ['rev-parse', '--verify', '-q', `${ref}^{commit}`], { okCodes: [1], readOnly: true });
  return out.code === 0 ? out.stdout.trim() : null;
}

/**
 * What each name resolves to (`main^{commit}`, `HEAD^{tree}`), or null for one that resolves to nothing, read in
 * one git process instead of one each: a move asks for four. A name git could not be handed on one line (empty, or
 * holding a newline, which no ref name may) resolves to nothing without asking.
 */
export async function resolveAll<const N extends readonly string[]>(repo: Repo, names: N): Promise<{ -readonly [K in keyof N]: string | null }> {
  const asked = names.filter((n) => n !== '' && !n.includes('\n'));
  const found = new Map<string, string | null>();
  if (asked.length > 0) {
    const out = await git(repo, ['cat-file', '--batch-check=%(objectname)'], { input: asked.map((n) => `${n}\n`).join(''), readOnly: true });
    const lines = out.stdout.split('\n');
    // One line per name, in order: the object's name, or `<name> missing` (or `ambiguous`).
    asked.forEach((n, i) => found.set(n, OBJECT_NAME.test(lines[i] ?? '') ? lines[i]! : null));
  }
  return names.map((n) => found.get(n) ?? null) as { -readonly [K in keyof N]: string | null };
}

/** A HEAD file holds a ref name or an object name: far under this. */
const HEAD_FILE_MAX_BYTES = 4096;

/**
 * HEAD's file as it is, read without a process: a checkout that moves to another branch rewrites it last. Null
 * when it is not a small regular file: a session can swap it for a FIFO (a read that never ends) or a link to
 * `/dev/zero` (one that never stops), and this runs in the node, not in the session's sandbox.
 */
export async function readHeadFile(repo: Repo): Promise<string | null> {
  const read = await readCappedBytes(join(repo.gitDir, 'HEAD'), HEAD_FILE_MAX_BYTES);
  return 'bytes' in read ? read.bytes.toString('utf8') : null;
}

/** The branch HEAD is on (short name), or null when it is detached. */
export async function currentBranch(repo: Repo): Promise<string | null> {
  const out = await git(repo, ['symbolic-ref', '-q', '--short', 'HEAD'], { okCodes: [1], readOnly: true });
  return out.code === 0 ? out.stdout.trim() : null;
}

/** The token's blob, written to the object store (a grant's ref must point at an object that exists). */
async function tokenOid(repo: Repo, token: number): Promise<string> {
  const known = repo.tokenOids.get(token);
  if (known) return known;
  const out = await git(repo, ['hash-object', '-w', '--stdin'], { input: tokenText(token) });
  const oid = out.stdout.trim();
  repo.tokenOids.set(token, oid);
  return oid;
}

function tokenText(token: number): string {
  return `nexus-lease-token ${token}\n`;
}

/**
 * The name the token's blob has, worked out here as git does (the hash of `blob <size>\0<text>`) when the
 * repository's object format is known. A guard needs only the name: a ref that holds the token points at a blob
 * that exists, and one that does not fails the compare-and-swap either way.
 */
function tokenName(repo: Repo, token: number): Promise<string> | string {
  if (repo.objectFormat === null) return tokenOid(repo, token);
  const text = Buffer.from(tokenText(token));
  return createHash(repo.objectFormat).update(`blob ${text.length}\0`).update(text).digest('hex');
}

/**
 * What the token ref holds now: the token (0 when no grant was ever fenced here, or the blob says no token), or
 * `foreign` when it names another kind of object than a blob, which no grant ever wrote.
 */
export async function readToken(repo: Repo): Promise<{ oid: string | null; token: number; foreign: string | null }> {
  // The ref and the blob it names in one process: `<oid> <type> <size>`, then that many bytes (or `<ref> missing`).
  const out = await git(repo, ['cat-file', '--batch'], { input: `${TOKEN_REF}\n`, readOnly: true });
  const end = out.raw.indexOf(0x0a);
  const [oid, type, size] = out.raw.subarray(0, end === -1 ? out.raw.length : end).toString('latin1').split(' ');
  if (oid === undefined || !OBJECT_NAME.test(oid)) return { oid: null, token: 0, foreign: null };
  if (type !== 'blob') return { oid, token: 0, foreign: type ?? 'missing' };
  const text = out.raw.subarray(end + 1, end + 1 + Number(size)).toString('utf8');
  const m = /^nexus-lease-token (\d+)\n?$/.exec(text);
  return { oid, token: m ? Number(m[1]) : 0, foreign: null };
}

/**
 * What a fence and a guard may know of the workspace's own lease. Git's refs are a session's to write: one can
 * move the token ref anywhere (delete it, point it at a commit, or at a token no grant reached, which would fence
 * every grant after it and hold the copy where it is forever). The store is the lease's record, and no session
 * writes it: a ref that does not hold a grant which is the workspace's latest was not set by a newer grant of it.
 */
export type TokenAuthority = {
  /** The last token the workspace's lease granted, read from its store. Asked only after the ref was read. */
  lastGranted?: () => Promise<number>;
  /** Told when the ref held what no grant of this lease wrote, before it is set to `token`. */
  onReset?: (reset: { token: number; found: string }) => void;
};

/**
 * Raises the token ref to `token` by compare-and-swap. A ref already above it means a newer grant exists and
 * this caller decides on a stale state: LEASE_FENCED, and nothing is written. Unless `token` is the workspace's
 * latest grant ({@link TokenAuthority}): then a ref above it, or not a token at all, is set to it.
 */
export async function raiseToken(repo: Repo, token: number, authority: TokenAuthority = {}): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const cur = await readToken(repo);
    if (cur.foreign === null && cur.token === token) return;
    if (cur.foreign !== null || cur.token > token) await mayReset(token, cur, authority);
    if (await swapToken(repo, cur.oid, token)) return;
  }
  throw new NexusError('GIT_FAILED', 'the lease token ref kept changing while it was raised', { ref: TOKEN_REF });
}

/**
 * Guards one change to the checkout: compare-and-swap the token ref from `token` to itself, which fails unless
 * the ref still holds this grant's token. A holder that lost the lease can never move the checkout. When the
 * grant is the workspace's latest ({@link TokenAuthority}), a ref moved anywhere else is set back, and the change
 * goes ahead.
 */
export async function guard(repo: Repo, token: number, authority: TokenAuthority = {}): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const oid = await tokenName(repo, token);
    const out = await git(repo, ['update-ref', TOKEN_REF, oid, oid], { okCodes: [1, 128] });
    if (out.code === 0) return;
    const cur = await readToken(repo);
    await mayReset(token, cur, authority);
    // Swapped or not, the guard's own compare-and-swap decides on the next round.
    await swapToken(repo, cur.oid, token);
  }
  throw new NexusError('GIT_FAILED', 'the lease token ref kept changing while it was guarded', { ref: TOKEN_REF });
}

/**
 * Sets the token ref from `from` (its object, or null for no ref) to `token`'s blob, which is written first (a
 * session may have pruned it). False when the ref no longer held `from`.
 */
async function swapToken(repo: Repo, from: string | null, token: number): Promise<boolean> {
  const next = await tokenOid(repo, token);
  const out = await git(repo, ['update-ref', '-m', `nexus lease token ${token}`, TOKEN_REF, next, from ?? ''], { okCodes: [1, 128] });
  return out.code === 0;
}

/**
 * Returns when the ref, read as `cur`, may be set to `token`: the store says `token` is the latest grant, so
 * whatever the ref holds was not written by a newer one. Read in this order (ref, then store), a grant that
 * committed in between and raised the ref shows in the store. Otherwise throws what the ref's state means.
 */
async function mayReset(token: number, cur: Awaited<ReturnType<typeof readToken>>, authority: TokenAuthority): Promise<void> {
  const latest = authority.lastGranted === undefined ? false : (await authority.lastGranted()) === token;
  if (!latest) {
    if (cur.foreign !== null) throw new NexusError('GIT_FAILED', `${TOKEN_REF} names a ${cur.foreign} object, not the token's blob`, { ref: TOKEN_REF, oid: cur.oid });
    throw fenced(token, cur.token);
  }
  const found = cur.oid === null ? 'nothing' : cur.foreign !== null ? `a ${cur.foreign} (${cur.oid})` : `token ${cur.token} (${cur.oid})`;
  authority.onReset?.({ token, found });
}

function fenced(token: number, current: number): NexusError {
  return new NexusError('LEASE_FENCED', `the working-copy lease is at token ${current}; a move under token ${token} is refused`, { token, current });
}

// ---------------------------------------------------------------------------------------------------------
// The journal: one interrupted move at most, never in the work tree.

/**
 * A workspace keeps its journal in its private `.nxs/`, which no session sees: the git folder is the session's to
 * write, and a journal planted there would have the next move "finish" a checkout of the session's choosing. A
 * journal an older version left in the git folder is not read then, for the same reason. A copy no session works
 * in (no folder given) keeps it in its git folder. The private index files go beside it: one in the git folder
 * could be swapped for a link between its removal and its writing, and Nexus would write through the link.
 */
function journalFile(gitDir: string, journalDir: string | undefined): string {
  return journalDir === undefined ? join(gitDir, 'nexus-lease-journal.json') : join(journalDir, 'lease-journal.json');
}

export type Journal = {
  kind: 'park' | 'restore';
  operation: string;
  token: number;
  /** park: 'snapshot' (nothing in the tree changed yet: roll back) or 'moving' (finish). restore: 'moving'. */
  step: 'snapshot' | 'moving';
  branch: string;
  head: string;
  base: string;
  base_commit: string;
  work: string | null;
  index: string | null;
  /** The park branch's value before this park, to roll back to. */
  previous: string | null;
};

export async function readJournal(repo: Repo): Promise<Journal | null> {
  const text = await readJournalText(repo.journal);
  return text === null ? null : (JSON.parse(text) as Journal);
}

/** Written whole or not at all: infra's atomic write (a synced temporary file renamed over the journal). */
export async function writeJournal(repo: Repo, j: Journal): Promise<void> {
  writeFileAtomic(repo.journal, JSON.stringify(j), { mode: 0o600 });
}

export async function clearJournal(repo: Repo): Promise<void> {
  await removeOwnFile(repo.journal);
}

// ---------------------------------------------------------------------------------------------------------
// A private copy of each park's work. The park branch and its objects are in .git, which sessions write: a
// session of another operation can delete the branch and prune what it held, and the work is nowhere else.

/** Where the copy of an operation's parked work is kept: beside the journal, where no session reaches. */
function keptFile(repo: Repo, operation: string): string {
  return join(repo.scratch, 'parked', `${operation}.bundle`);
}

/**
 * Copies what a park committed under `ref` (the work and its staged state, without the history they stand on,
 * `head`) into a bundle kept with the journal, readable by its owner alone.
 */
export async function keepParked(repo: Repo, operation: string, ref: string, head: string): Promise<void> {
  const file = keptFile(repo, operation);
  makePrivateDir(dirname(file));
  await git(repo, ['bundle', 'create', file, ref, `^${head}`]);
  await makeFilePrivate(file);
}

/**
 * Puts the kept copy's objects back into the repository and its branch back where it was missing, when the park's
 * objects are gone from it. False when there is no copy to take them from.
 */
export async function bringBackParked(repo: Repo, operation: string, ref: string, work: string): Promise<boolean> {
  const file = keptFile(repo, operation);
  if ((await statOrNull(file))?.isFile() !== true) return false;
  await git(repo, ['bundle', 'unbundle', file]);
  // A branch a session moved is left where it is; a deleted one names the work again, as the notice says.
  await git(repo, ['update-ref', ref, work, ''], { okCodes: [1, 128] });
  return true;
}

/** The copy is dropped once the work is back in the tree. */
export async function dropParked(repo: Repo, operation: string): Promise<void> {
  await removeOwnFile(keptFile(repo, operation));
}
