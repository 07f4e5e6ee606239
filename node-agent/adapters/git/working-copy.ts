// Reads where a git working copy stands (HEAD, branch, dirtiness, content fingerprint) without changing it.
import { createHash } from 'node:crypto';
import { lstat, readlink, stat } from 'node:fs/promises';
import { NexusError } from '../../../protocol/errors.js';
import type { WorkingCopy } from '../../../protocol/working-copy.js';
import { mayHoldRepository } from './discovery.js';
import { spawnGit } from './run.js';

/** The words appended to a description when the working copy holds changes no commit holds. */
export const DIRTY_NOTE = 'uncommitted work NOT saved anywhere';

const SHORT_SHA_LENGTH = 12;
const FINGERPRINT_DOMAIN = 'nexus-working-copy/1';
// A git that hangs (a stuck fsmonitor hook, a dead network mount) must not hang every message.
const GIT_TIMEOUT_MS = 30_000;
// A file that vanishes between `git status` and hashing is a concurrent edit; reading again settles it.
const MAX_ATTEMPTS = 3;

/**
 * Reads the working copy that contains `dir`.
 *
 * Returns `null` when `dir` is not inside a git work tree (a plain folder, a missing folder, a
 * bare repository, the inside of `.git`); that case never throws and never prints. Git's own
 * output is always captured, never shown.
 *
 * Read-only by construction: git runs with `GIT_OPTIONAL_LOCKS=0`, so `git status` does not
 * write back its refreshed index, and nothing else that git runs here writes at all.
 *
 * Costs no process where no folder from `dir` up holds a repository, and one git process (`status`) for a clean tree. When paths are listed, `rev-parse
 * --show-toplevel` (their root), one `hash-object` batch when changed files exist, and one
 * `rev-parse` per changed submodule follow.
 *
 * @throws {NexusError} `INTERNAL` when git is missing, times out, or fails for a reason other
 *   than "not a work tree" (for example a repository refused by `safe.directory`).
 */
export async function readWorkingCopy(dir: string): Promise<WorkingCopy | null> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await readOnce(dir);
    } catch (err) {
      if (err instanceof ChangedWhileReading && attempt < MAX_ATTEMPTS) continue;
      if (err instanceof ChangedWhileReading) {
        throw new NexusError('INTERNAL', 'the working copy kept changing while it was read', {
          dir,
          stderr: err.stderr,
        });
      }
      throw err;
    }
  }
}

/**
 * One line a person can read, e.g. `9f2c1ab4e7d0 on feat/parser`,
 * `detached at 9f2c1ab4e7d0 · uncommitted work NOT saved anywhere`,
 * `no commits yet on main`, or `no working copy named (not a git repository)` for `null`.
 */
export function describeWorkingCopy(wc: WorkingCopy | null): string {
  if (wc === null) return 'no working copy named (not a git repository)';
  let where: string;
  if (wc.commit === null) {
    where = wc.branch === null ? 'no commits yet' : `no commits yet on ${wc.branch}`;
  } else {
    const short = wc.commit.slice(0, SHORT_SHA_LENGTH);
    where = wc.branch === null ? `detached at ${short}` : `${short} on ${wc.branch}`;
  }
  return wc.dirty ? `${where} · ${DIRTY_NOTE}` : where;
}

/** The same facts as a status row's suffix says them: `9f2c1ab4e7d0 on feat/parser, uncommitted work NOT saved`. */
export function describeTree(wc: WorkingCopy): string {
  const where = describeWorkingCopy({ ...wc, dirty: false });
  return wc.dirty ? `${where}, uncommitted work NOT saved` : where;
}

/** Thrown inside one read when the tree moved under it; the caller reads again. */
class ChangedWhileReading extends Error {
  constructor(readonly stderr: string) {
    super('the working copy changed while it was read');
  }
}

interface GitResult {
  ok: boolean;
  stdout: Buffer;
  stderr: string;
  /** Node's error code when git could not run or was killed (`ENOENT`, `ETIMEDOUT`...). */
  spawnCode: string | undefined;
  killed: boolean;
}

/** What the status listing says about one path. Paths are latin1 strings: one char per byte. */
interface PathFacts {
  /** Mode and object name in HEAD, when status told us and the path exists there. */
  head: { mode: string; oid: string } | undefined;
  /** Porcelain v2 submodule field (`N...` or `S<c><m><u>`), when given. */
  sub: string | undefined;
  /** Unmerged paths have no single "HEAD version" to compare against, so always count. */
  unmerged: boolean;
}

interface StatusListing {
  commit: string | null;
  branch: string | null;
  paths: Map<string, PathFacts>;
}

async function readOnce(dir: string): Promise<WorkingCopy | null> {
  // Outside any repository (the usual case for a workspace that is not a git project) no process is started.
  if (!mayHoldRepository(dir)) return null;
  const status = await runGit(dir, ['status', '--porcelain=v2', '-z', '--branch', '--untracked-files=all']);
  if (!status.ok && (await isOutsideWorkTree(dir, status))) return null;
  if (!status.ok) throw gitFailure('git status', dir, status);
  const listing = parseStatus(status.stdout.toString('latin1'));

  // A clean tree (the usual case, read on every message) lists no path, so it needs no top level: one process.
  let states = new Map<string, string>();
  if (listing.paths.size > 0) {
    const top = await runGit(dir, ['rev-parse', '--show-toplevel']);
    // The tree can vanish between the two calls; that reads as it would have before the status.
    if (!top.ok && (await isOutsideWorkTree(dir, top))) return null;
    if (!top.ok) throw gitFailure('git rev-parse', dir, top);
    // Keep the top level as bytes so a path that is not UTF-8 still reaches the file it names.
    states = await contentStates(dir, stripFinalNewline(top.stdout), listing);
  }

  const hash = createHash('sha256');
  hash.update(`${FINGERPRINT_DOMAIN}\0head\0${listing.commit ?? 'unborn'}\0`);
  // latin1 strings compare char by char, which is byte order: stable across locales and runs.
  for (const [path, state] of [...states].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    // A path never holds NUL and a state never does, so NUL separators cannot be forged.
    hash.update(Buffer.from(path, 'latin1'));
    hash.update(`\0${state}\0`);
  }

  return {
    commit: listing.commit,
    branch: listing.branch,
    dirty: listing.paths.size > 0,
    fingerprint: `sha256:${hash.digest('hex')}`,
  };
}

/**
 * Parses `git status --porcelain=v2 -z --branch`. Version 2 is used rather than 1 because its
 * header carries HEAD and the branch (saving two processes) and each entry carries the HEAD
 * mode and object name, which lets a path whose content equals HEAD drop out of the fingerprint.
 */
function parseStatus(out: string): StatusListing {
  const listing: StatusListing = { commit: null, branch: null, paths: new Map() };
  const note = (path: string, facts: Partial<PathFacts>): void => {
    // One path can appear twice (`git rm --cached f` lists `D f` and `? f`); merge what we learn.
    const known = listing.paths.get(path) ?? { head: undefined, sub: undefined, unmerged: false };
    listing.paths.set(path, {
      head: facts.head ?? known.head,
      sub: facts.sub ?? known.sub,
      unmerged: known.unmerged || (facts.unmerged ?? false),
    });
  };
  const headOf = (mode: string, oid: string): PathFacts['head'] =>
    mode === '000000' ? undefined : { mode, oid };

  const records = out.split('\0');
  for (let i = 0; i < records.length; i++) {
    const record = records[i] ?? '';
    if (record === '') continue;
    switch (record[0]) {
      case '#': {
        const [, key, value = ''] = fields(record, 2);
        // A branch literally named "(detached)" or "(initial)" is legal but would read as these;
        // accepted, since telling them apart would cost another process on every message.
        if (key === 'branch.oid') listing.commit = value === '(initial)' ? null : value;
        if (key === 'branch.head') {
          listing.branch = value === '(detached)' ? null : Buffer.from(value, 'latin1').toString('utf8');
        }
        break;
      }
      case '1': {
        // 1 XY sub mH mI mW hH hI path
        const f = fields(record, 8);
        note(f[8] ?? '', { head: headOf(f[3] ?? '', f[6] ?? ''), sub: f[2] });
        break;
      }
      case '2': {
        // 2 XY sub mH mI mW hH hI Xscore path, then origPath as the next NUL record.
        // hH/mH describe origPath in HEAD; the new path is counted with no HEAD version.
        const f = fields(record, 9);
        const origPath = records[++i] ?? '';
        note(f[9] ?? '', { sub: f[2] });
        if (origPath !== '') note(origPath, { head: headOf(f[3] ?? '', f[6] ?? '') });
        break;
      }
      case 'u': {
        // u XY sub m1 m2 m3 mW h1 h2 h3 path
        const f = fields(record, 10);
        note(f[10] ?? '', { sub: f[2], unmerged: true });
        break;
      }
      case '?': {
        // An untracked nested repository is listed as `dir/`; git would record it without the slash.
        note(record.slice(2).replace(/\/$/, ''), {});
        break;
      }
      default:
        // `!` (ignored) is not requested; anything newer from git is not ours to guess at.
        break;
    }
  }
  return listing;
}

/** Splits off `count` space-separated fields; the rest (a path, spaces and all) is the last item. */
function fields(record: string, count: number): string[] {
  const parts: string[] = [];
  let from = 0;
  for (let n = 0; n < count; n++) {
    const space = record.indexOf(' ', from);
    if (space === -1) break;
    parts.push(record.slice(from, space));
    from = space + 1;
  }
  parts.push(record.slice(from));
  return parts;
}

/**
 * Works out what each listed path holds now, as `<mode> <object name>` or a marker. Paths whose
 * content equals HEAD are left out, so the fingerprint depends on the files, not on how the
 * index got there (staged or not, a rename staged or just done on disk).
 */
async function contentStates(
  dir: string,
  topBytes: Buffer,
  listing: StatusListing,
): Promise<Map<string, string>> {
  // Blob names must match HEAD's to compare with them; a 64-hex HEAD means a SHA-256 repository.
  const objectHash = listing.commit?.length === 64 ? 'sha256' : 'sha1';
  const states = new Map<string, string>();
  const files: { path: string; facts: PathFacts; mode: string }[] = [];
  const gitlinks: { path: string; abs: Buffer; facts: PathFacts }[] = [];

  const settle = (path: string, facts: PathFacts, mode: string, oid: string, extra = ''): void => {
    const sameAsHead = !facts.unmerged && facts.head?.mode === mode && facts.head.oid === oid;
    if (sameAsHead && extra === '') return;
    states.set(path, extra === '' ? `${mode} ${oid}` : `${mode} ${oid} ${extra}`);
  };

  await Promise.all(
    [...listing.paths].map(async ([path, facts]) => {
      const abs = Buffer.concat([topBytes, Buffer.from('/'), Buffer.from(path, 'latin1')]);
      const info = await lstat(abs).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return null;
        throw err;
      });
      if (info === null) {
        // Gone from disk and absent from HEAD (added, then removed) is the same as never there.
        if (facts.head !== undefined || facts.unmerged) states.set(path, 'deleted');
      } else if (info.isSymbolicLink()) {
        // `hash-object` would follow the link (and fail on a dangling one); git stores the target.
        const target = await readlink(abs, { encoding: 'buffer' });
        settle(path, facts, '120000', blobName(target, objectHash));
      } else if (info.isFile()) {
        files.push({ path, facts, mode: info.mode & 0o111 ? '100755' : '100644' });
      } else if (info.isDirectory()) {
        // A directory is listed only as a submodule or a nested repository; one without `.git`
        // (a tracked file replaced by a folder) has its files listed on their own.
        const hasGit = await lstat(Buffer.concat([abs, Buffer.from('/.git')])).then(
          () => true,
          () => false,
        );
        if (hasGit) gitlinks.push({ path, abs, facts });
        else states.set(path, 'directory');
      } else {
        // A FIFO or socket: never hand it to hash-object, which would block reading it.
        states.set(path, `other ${(info.mode >>> 12).toString(8)}`);
      }
    }),
  );

  const [oids] = await Promise.all([
    hashFiles(dir, topBytes, files.map((f) => f.path)),
    ...gitlinks.map(async ({ path, abs, facts }) => {
      // Its checked-out commit says which state it is in; edits inside it show as status flags only.
      const head = await runGit(abs.toString('utf8'), ['rev-parse', '--verify', '-q', 'HEAD']);
      const oid = head.ok ? head.stdout.toString('latin1').trim() : 'unborn';
      const flags = facts.sub?.startsWith('S') ? facts.sub.slice(2).replace(/\./g, '') : '';
      settle(path, facts, '160000', oid, flags);
    }),
  ]);
  files.forEach((file, index) => settle(file.path, file.facts, file.mode, oids[index] ?? ''));
  return states;
}

/** Hashes the current content of files (root-relative latin1 paths) in one `hash-object` call. */
async function hashFiles(dir: string, topBytes: Buffer, paths: readonly string[]): Promise<string[]> {
  if (paths.length === 0) return [];
  // --stdin-paths reads lines but C-unquotes a line that starts with a double quote, so quoting
  // every path carries newlines and a leading quote through intact. hash-object also applies
  // the path's attributes (autocrlf, clean filters), which makes its names comparable with HEAD's.
  const input = paths.map((p) => `${cQuote(p)}\n`).join('');
  const result = await runGit(topBytes.toString('utf8'), ['hash-object', '--stdin-paths'], input);
  if (!result.ok) {
    if (result.spawnCode !== undefined) throw gitFailure('git hash-object', dir, result);
    // The usual cause is a file deleted or replaced since status listed it.
    throw new ChangedWhileReading(result.stderr);
  }
  const oids = result.stdout.toString('latin1').split('\n').filter((line) => line !== '');
  if (oids.length !== paths.length) throw new ChangedWhileReading(result.stderr);
  return oids;
}

const C_ESCAPES: Record<string, string> = { '\\': '\\\\', '"': '\\"', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function cQuote(path: string): string {
  return `"${path.replace(/[\\"\n\r\t]/g, (c) => C_ESCAPES[c] ?? c)}"`;
}

/** The object name git gives a blob with this content (used for symlink targets). */
function blobName(content: Buffer, algorithm: 'sha1' | 'sha256'): string {
  return createHash(algorithm).update(`blob ${content.length}\0`).update(content).digest('hex');
}

function stripFinalNewline(bytes: Buffer): Buffer {
  return bytes.length > 0 && bytes[bytes.length - 1] === 0x0a ? bytes.subarray(0, -1) : bytes;
}

/** True when git failed only because `dir` is not inside a work tree. */
async function isOutsideWorkTree(dir: string, result: GitResult): Promise<boolean> {
  if (result.spawnCode === 'ENOENT' || result.spawnCode === 'ENOTDIR') {
    // Node reports a missing `cwd` as a missing program; look at the folder to tell them apart.
    return stat(dir).then(
      (info) => !info.isDirectory(),
      () => true,
    );
  }
  return saysOutsideRepository(result.stderr);
}

/**
 * Whether git's error says the folder is in no work tree of this user's. LC_ALL=C (runGit) keeps these messages in
 * English whatever the user's locale. A repository git will not use for this user (another user's, found above a
 * folder of theirs that holds none) is none of theirs either.
 */
export function saysOutsideRepository(stderr: string): boolean {
  return /not a git repository|must be run in a work tree|detected dubious ownership/.test(stderr);
}

function gitFailure(what: string, dir: string, result: GitResult): NexusError {
  const reason =
    result.spawnCode === 'ENOENT'
      ? 'git is not installed or not on PATH'
      : result.killed
        ? `${what} did not finish within ${GIT_TIMEOUT_MS / 1000}s`
        : `${what} failed`;
  return new NexusError('INTERNAL', `could not read the working copy: ${reason}`, {
    dir,
    stderr: result.stderr.trim(),
  });
}

/** Runs a read-only git call (no index refresh written back); resolves on failure too, callers decide what it means. */
function runGit(cwd: string, args: readonly string[], input?: string): Promise<GitResult> {
  // latin1 turns each char back into the byte it came from, so paths round-trip exactly.
  return spawnGit(cwd, args, { readOnly: true, timeoutMs: GIT_TIMEOUT_MS, ...(input === undefined ? {} : { input: Buffer.from(input, 'latin1') }) }).then((r) => ({
    ok: r.ok,
    stdout: r.raw,
    stderr: r.stderr,
    spawnCode: r.spawnCode,
    killed: r.killed,
  }));
}
