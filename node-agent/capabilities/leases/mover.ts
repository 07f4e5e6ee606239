// The lease's hands in a git working copy: fence a grant, park an operation's uncommitted work onto a branch and
// check out its base, restore it later. Every change is guarded by the token ref; every move is journalled so
// that running it again after a crash finishes it or rolls it back, with every byte recoverable.
import { CHANNEL_DIR } from '../../../protocol/channel.js';
import { isNexusError, NexusError } from '../../../protocol/errors.js';
import { PERSONA_DIR } from '../../../protocol/persona.js';
import type { ParkRecord, ParkResult, RestoreResult } from '../../../protocol/leases.js';
import { restoreNotice, type RestoreFacts } from './notice.js';
import {
  clearJournal,
  currentBranch,
  git,
  guard,
  bringBackParked,
  dropParked,
  keepParked,
  probe,
  raiseToken,
  readHeadFile,
  readJournal,
  resolveAll,
  tip,
  unfinished,
  writeJournal,
  type Journal,
  type Repo,
  type TokenAuthority,
} from './repo.js';
import { materialise, snapshot, treesOf } from './tree.js';

/** Where a test may stop a move dead, after the git step it names. */
export type FaultPoint =
  | 'park:snapshot'
  | 'park:journal'
  | 'park:branch'
  | 'park:moving'
  | 'park:checkout'
  | 'park:clean'
  | 'restore:journal'
  | 'restore:checkout'
  | 'restore:materialise'
  | 'restore:index';

export type MoverOptions = {
  /** The folder a move's journal is kept in: the workspace's `.nxs/`, which no session can write (see repo.ts). */
  journalDir?: string;
  fault?: (point: FaultPoint) => void | Promise<void>;
  /** What the workspace's store says of its grants, so a token ref a session moved is set back (see repo.ts). */
  authority?: TokenAuthority;
};

export const PARK_BRANCH_PREFIX = 'nexus/park/';

const NO_COPY = 'this runtime names no working copy';
const NOT_A_REPO = 'the working copy is not a git repository';

/**
 * Raises the token ref to a new grant's token (the `fence` effect) and reports the branch the copy is on, the
 * base the operation starts from (`base_recorded`). Nothing to fence without a repository.
 * @throws {NexusError} LEASE_FENCED when a newer grant already fenced this copy.
 */
export async function fenceGrant(dir: string | null, token: number, opts: MoverOptions = {}): Promise<{ branch: string | null }> {
  const repo = dir === null ? null : await probe(dir);
  if (repo === null) return { branch: null };
  await raiseToken(repo, token, opts.authority);
  return { branch: await currentBranch(repo) };
}

/**
 * Parks the holder's work: commits everything uncommitted onto `nexus/park/<operation>` and checks out `base`;
 * ignored files stay in the tree. Refuses, changing nothing, when a sequence is in progress or a git command
 * fails (can pass), or when there is no repository, no base, no commit or no branch (cannot pass).
 * @throws {NexusError} LEASE_FENCED when the token ref no longer holds `token`.
 */
export async function park(
  dir: string | null,
  req: { operation: string; base: string | null; token: number; now: number },
  opts: MoverOptions = {},
): Promise<ParkResult> {
  if (dir === null) return unpassable(NO_COPY);
  const repo = await probe(dir, opts.journalDir);
  if (repo === null) return unpassable(NOT_A_REPO);
  const fault = opts.fault ?? (() => {});
  try {
    const j = await settleJournal(repo, opts, { kind: 'park', ...req });
    if (j !== null) return parked(j, req.now);
    if (req.base === null) return unpassable('no base branch was recorded for the operation');
    const what = await unfinished(repo);
    if (what !== null) return { outcome: 'refused_passable', what };
    const ref = `refs/heads/${PARK_BRANCH_PREFIX}${req.operation}`;
    const [head, headTree, baseCommit, previous] = await resolveAll(repo, ['HEAD^{commit}', 'HEAD^{tree}', `refs/heads/${req.base}^{commit}`, `${ref}^{commit}`]);
    if (head === null || headTree === null) return unpassable('the repository has no commit yet');
    const branch = await currentBranch(repo);
    if (branch === null) return unpassable('HEAD is detached: there is no branch to put the work back on');
    if (baseCommit === null) return unpassable(`the base branch ${req.base} does not exist`);
    await guard(repo, req.token, opts.authority);
    const headFile = await readHeadFile(repo);
    const snap = await snapshot(repo, head, `operation ${req.operation}`, headTree);
    const standing: Standing = { headFile, head, trees: snap.trees };
    // Only objects so far: refusing here leaves the tree, the index and every ref as they were.
    const declarations = await declarationChanges(repo, snap.work ?? head, baseCommit);
    if (declarations !== null) {
      return { outcome: 'refused_passable', what: `${req.base} holds other declarations than the working copy (${declarations}): a person brings them in, or puts them back, before the lease checks it out` };
    }
    await fault('park:snapshot');
    const journal: Journal = {
      kind: 'park',
      operation: req.operation,
      token: req.token,
      step: 'snapshot',
      branch,
      head,
      base: req.base,
      base_commit: baseCommit,
      work: snap.work,
      index: snap.index,
      previous,
    };
    await writeJournal(repo, journal);
    await fault('park:journal');
    // The branch's old value stays in its reflog; nothing is lost by moving it.
    if (snap.work !== null) {
      await git(repo, ['update-ref', '-m', `nexus: park ${req.operation}`, ref, snap.work]);
      await keepParked(repo, req.operation, ref, head);
    }
    await fault('park:branch');
    // The point of no return: from here a rerun finishes the move instead of rolling it back.
    await writeJournal(repo, { ...journal, step: 'moving' });
    await fault('park:moving');
    await finishPark(repo, { ...journal, step: 'moving' }, false, opts).catch(async (err: unknown) => {
      // Git refused before it changed anything (a lock a killed git left in .git, say). The holder keeps the copy
      // and works on, so a journal left saying "moving" would later finish this park over that newer work.
      if (isNexusError(err) && err.code === 'GIT_FAILED' && (await stillStands(repo, standing))) await rollBackPark(repo, journal);
      throw err;
    });
    return parked(journal, req.now);
  } catch (err) {
    if (isNexusError(err) && err.code === 'GIT_FAILED') return { outcome: 'refused_passable', what: `a git command failed: ${err.message}` };
    throw err;
  }
}

/** What a restore did, with the facts its notice was made from. */
export type RestoreOutcome = RestoreResult & { facts: RestoreFacts };

/**
 * Puts a parked operation back on its own branch and, when that branch has not moved, its work back in the tree
 * as it was left (staged changes staged). Never forces anything over work that is not the operation's: it then
 * leaves the work on its park branch and says so. The notice is the fixed text for the operation's session.
 * @throws {NexusError} LEASE_FENCED when the token ref no longer holds `token`.
 */
export async function restore(
  dir: string | null,
  req: { operation: string; token: number; record: ParkRecord },
  opts: MoverOptions = {},
): Promise<RestoreOutcome> {
  const r = req.record;
  const done = (applied: boolean, reason: string | null, branch_tip: string | null, base_tip: string | null): RestoreOutcome => {
    const facts: RestoreFacts = { operation: req.operation, record: r, branch_tip, base_tip, applied, reason };
    return { applied, notice: restoreNotice(facts), facts };
  };
  if (dir === null) return done(false, NO_COPY, null, null);
  const repo = await probe(dir, opts.journalDir);
  if (repo === null) return done(false, NOT_A_REPO, null, null);
  try {
    const resumed = await settleJournal(repo, opts, { kind: 'restore', ...req });
    // With the staged state's commit (the work's second parent), which the journal needs.
    const names = [`refs/heads/${r.branch}^{commit}`, `refs/heads/${r.base}^{commit}`, r.work === null ? '' : `${r.work}^2`, 'HEAD^{commit}', 'HEAD^{tree}'] as const;
    let [branchTip, baseTip, index, head, headTree] = await resolveAll(repo, names);
    // The work's objects are gone (a session deleted its branch and pruned them): they come back from the kept copy.
    if (r.work !== null && index === null && (await bringBackParked(repo, req.operation, `refs/heads/${PARK_BRANCH_PREFIX}${req.operation}`, r.work))) {
      [branchTip, baseTip, index, head, headTree] = await resolveAll(repo, names);
    }
    if (resumed === null) {
      await guard(repo, req.token, opts.authority);
      const what = await unfinished(repo);
      if (what !== null) return done(false, what, branchTip, baseTip);
      if (branchTip === null) return done(false, `its branch ${r.branch} no longer exists`, null, baseTip);
      const status = await git(repo, ['status', '--porcelain', '-z', '--untracked-files=all'], { readOnly: true });
      if (status.raw.length > 0) {
        // Asked again after a restore that finished but was never reported: the tree already is the work.
        if (await alreadyRestored(repo, r)) {
          await dropParked(repo, req.operation);
          return done(true, null, branchTip, baseTip);
        }
        return done(false, 'the working tree holds changes that are not this operation\u2019s', branchTip, baseTip);
      }
      // The move leaves the work (what the disk held when it was parked) or, when the branch moved on since, the
      // branch as it is now: that one must bring no declaration the disk did not hold then.
      const parkedFrom = r.work ?? r.head;
      const landing = r.work !== null && branchTip === r.head ? r.work : branchTip;
      const declarations = landing === parkedFrom ? null : await declarationChanges(repo, parkedFrom, landing);
      if (declarations !== null) {
        return done(false, `${r.branch} holds other declarations than the working copy had (${declarations}), so the lease did not check it out`, branchTip, baseTip);
      }
      if (r.work !== null && index === null) throw new NexusError('GIT_FAILED', `the parked work ${r.work} has no staged state (no second parent)`);
      const journal: Journal = { kind: 'restore', operation: req.operation, token: req.token, step: 'moving', branch: r.branch, head: r.head, base: r.base, base_commit: r.base_commit, work: r.work, index, previous: null };
      // The tree is clean here: it holds HEAD's tree, staged and all.
      const standing: Standing | null = head === null || headTree === null ? null : { headFile: await readHeadFile(repo), head, trees: { work: headTree, index: headTree } };
      await writeJournal(repo, journal);
      await (opts.fault ?? (() => {}))('restore:journal');
      await finishRestore(repo, journal, opts).catch(async (err: unknown) => {
        // As for a park: a restore git refused before it changed anything leaves nothing to finish later, when
        // the session started on the base (its work left on the park branch) may have changed the tree.
        if (isNexusError(err) && err.code === 'GIT_FAILED' && standing !== null && (await stillStands(repo, standing))) await clearJournal(repo);
        throw err;
      });
    }
    if (r.work !== null && branchTip !== r.head) {
      return done(false, `its branch ${r.branch} moved on since it was parked, so the work was left on ${PARK_BRANCH_PREFIX}${req.operation}`, branchTip, baseTip);
    }
    // The work is back in the tree: its kept copy is no longer needed.
    await dropParked(repo, req.operation);
    return done(true, null, branchTip, baseTip);
  } catch (err) {
    if (isNexusError(err) && err.code === 'GIT_FAILED') return done(false, `a git command failed: ${err.message}`, null, null);
    throw err;
  }
}

/**
 * Finishes or rolls back whatever move a crash interrupted here, so the copy is in a known state; the engine
 * calls it when it starts. A park that had not yet touched the tree is rolled back; one that had is finished.
 */
export async function recover(dir: string | null, opts: MoverOptions = {}): Promise<Journal | null> {
  const repo = dir === null ? null : await probe(dir, opts.journalDir);
  if (repo === null) return null;
  const j = await readJournal(repo);
  await settleJournal(repo, opts, null);
  return j;
}

/**
 * Deals with a journal left by an interrupted move. Returns the journal when it was the very move asked for
 * now and has been finished (the caller reports it as done); null when there was none or it was settled.
 */
async function settleJournal(
  repo: Repo,
  opts: MoverOptions,
  want: { kind: Journal['kind']; operation: string; token: number } | null,
): Promise<Journal | null> {
  const j = await readJournal(repo);
  if (j === null) return null;
  const same = want !== null && j.kind === want.kind && j.operation === want.operation && j.token === want.token;
  if (j.kind === 'park' && j.step === 'snapshot') {
    // Nothing in the tree moved yet: put the park branch back and start afresh from the tree as it is now.
    await rollBackPark(repo, j);
    return null;
  }
  if (j.kind === 'park') await finishPark(repo, j, true, opts);
  else await finishRestore(repo, j, opts);
  return same ? j : null;
}

/** Undoes a park that has not touched the tree: its branch back where it was, and no journal. */
async function rollBackPark(repo: Repo, j: Journal): Promise<void> {
  const ref = `refs/heads/${PARK_BRANCH_PREFIX}${j.operation}`;
  const now = await tip(repo, ref);
  if (j.work !== null && now === j.work) {
    if (j.previous === null) await git(repo, ['update-ref', '-d', ref, j.work]);
    else await git(repo, ['update-ref', ref, j.previous, j.work]);
  }
  await dropParked(repo, j.operation);
  await clearJournal(repo);
}

/** Where a checkout stood before a move: HEAD's file (its branch, or a commit), its commit, and the trees it held. */
type Standing = { headFile: string | null; head: string; trees: { work: string; index: string } };

/** Whether the checkout still stands exactly where `before` found it: same HEAD, same tree, same index. */
async function stillStands(repo: Repo, before: Standing): Promise<boolean> {
  // A HEAD that could not be read safely says nothing: the move is left to be finished, as after a crash.
  if (before.headFile === null || (await readHeadFile(repo)) !== before.headFile) return false;
  const [head] = await resolveAll(repo, ['HEAD^{commit}']);
  if (head !== before.head) return false;
  const now = await treesOf(repo, head);
  return now.work === before.trees.work && now.index === before.trees.index;
}

async function finishPark(repo: Repo, j: Journal, resumed: boolean, opts: MoverOptions): Promise<void> {
  const fault = opts.fault ?? (() => {});
  await guard(repo, j.token, opts.authority);
  if (resumed) {
    // A fresh park set the branch a moment ago; a resumed one sets it again, whatever happened to it since.
    if (j.work !== null) await git(repo, ['update-ref', `refs/heads/${PARK_BRANCH_PREFIX}${j.operation}`, j.work]);
    // The tree may be anywhere between the work and the base: keep what it holds before forcing the checkout.
    const head = await tip(repo, 'HEAD');
    const rescue = head === null ? null : await snapshot(repo, head, `operation ${j.operation} (interrupted park)`);
    if (rescue?.work) await git(repo, ['update-ref', `refs/nexus/rescue/${j.operation}-${j.token}`, rescue.work]);
  }
  await git(repo, ['checkout', '-f', '-q', j.base]);
  await fault('park:checkout');
  // Untracked files the work took are on the park branch; ignored ones are not touched (no -x).
  await git(repo, ['clean', '-f', '-d', '-q']);
  await fault('park:clean');
  await clearJournal(repo);
}

async function finishRestore(repo: Repo, j: Journal, opts: MoverOptions): Promise<void> {
  const fault = opts.fault ?? (() => {});
  await guard(repo, j.token, opts.authority);
  // Forced: the tree was checked clean before the journal was written, and anything since is this move's own.
  await git(repo, ['checkout', '-f', '-q', j.branch]);
  await fault('restore:checkout');
  const branchTip = await tip(repo, `refs/heads/${j.branch}`);
  if (j.work !== null && branchTip === j.head) {
    await materialise(repo, j.head, j.work);
    await fault('restore:materialise');
    if (j.index !== null) {
      await git(repo, ['read-tree', j.index]);
      await git(repo, ['update-index', '-q', '--refresh'], { okCodes: [1] });
    }
    await fault('restore:index');
  }
  await clearJournal(repo);
}

async function alreadyRestored(repo: Repo, r: ParkRecord): Promise<boolean> {
  const head = await tip(repo, 'HEAD');
  if (r.work === null || head !== r.head || (await currentBranch(repo)) !== r.branch) return false;
  const now = await treesOf(repo, head);
  const trees = await git(repo, ['rev-parse', `${head}^{tree}`, `${r.work}^{tree}`], { readOnly: true });
  const [headTree, workTree] = trees.stdout.trim().split('\n');
  // A clean checkout holds none of the work.
  if (now.work === headTree && now.index === headTree) return false;
  return now.work === workTree;
}

/** The folders of declarations sessions run under: a session may not write them, nor may a move of the lease. */
const DECLARATION_DIRS = [PERSONA_DIR, CHANNEL_DIR];

/**
 * The declaration files a move to commit `to` would write with other content than `disk` (the commit holding what a
 * person left on disk) has, or add, as one line; null when there are none. A session cannot write those folders,
 * but git's objects and refs are its to write: it can commit another declaration without touching the file. A
 * checkout by the lease must never be the way such a commit reaches the disk, so such a move is not made. A
 * declaration the move would take off the disk (one nobody committed, parked with the work) raises nobody's
 * permissions, and moves as it always did.
 */
async function declarationChanges(repo: Repo, disk: string, to: string): Promise<string | null> {
  const diff = await git(repo, ['diff-tree', '-r', '-z', '--no-renames', '--diff-filter=d', '--name-only', disk, to, '--', ...DECLARATION_DIRS], { readOnly: true });
  const paths = diff.raw.toString('utf8').split('\0').filter((p) => p !== '');
  if (paths.length === 0) return null;
  const shown = paths.slice(0, 5).join(', ');
  return paths.length > 5 ? `${shown} and ${paths.length - 5} more` : shown;
}

function parked(j: Journal, now: number): ParkResult {
  return {
    outcome: 'parked',
    record: {
      token: j.token,
      branch: j.branch,
      head: j.head,
      base: j.base,
      base_commit: j.base_commit,
      park_branch: `${PARK_BRANCH_PREFIX}${j.operation}`,
      work: j.work,
      at: now,
    },
  };
}

function unpassable(why: string): ParkResult {
  return { outcome: 'refused_unpassable', why };
}
