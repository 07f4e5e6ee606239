// The one way Nexus runs git: hooks and signing off, a clean environment, bytes kept, failures coded.
//
// Why execFile and not simple-git (already a dependency): the lease's mover needs, per call, its own index file
// (GIT_INDEX_FILE), bytes on stdin (paths for checkout-index), and stdout as raw bytes (`-z` listings whose paths
// need not be UTF-8). simple-git decodes output as text, takes stdin for no command, and sets the environment per
// instance; it would also queue each call behind its scheduler. A process per call is the cost either way.
// bench/lease.ts prints both side by side.
import { runFile } from '../../../infra/spawner.js';
import { commonDir, driverOverrides } from './drivers.js';
import { NexusError } from '../../../protocol/errors.js';

export type RunGitOptions = {
  /** Extra environment for this call (an identity, dates...). */
  env?: Record<string, string>;
  /** Bytes for git's stdin; strings go as UTF-8. */
  input?: string | Buffer;
  /** A private index file (GIT_INDEX_FILE), so the user's index is never read for writing nor written. */
  indexFile?: string;
  timeoutMs?: number;
  /** Exit codes that are answers rather than failures (e.g. 1 for `diff --quiet`). Always includes 0. */
  okCodes?: readonly number[];
  /** For reads: git must not refresh and write back the index as a side effect. */
  readOnly?: boolean;
};

export type GitRun = {
  /** stdout decoded as UTF-8; use `raw` for listings whose paths are bytes. */
  stdout: string;
  raw: Buffer;
  stderr: string;
  code: number;
};

/** The fixed author and committer of every commit the lease makes. */
export const LEASE_GIT_IDENTITY: Readonly<Record<string, string>> = {
  GIT_AUTHOR_NAME: 'Nexus working-copy lease',
  GIT_AUTHOR_EMAIL: 'lease@nexus.invalid',
  GIT_COMMITTER_NAME: 'Nexus working-copy lease',
  GIT_COMMITTER_EMAIL: 'lease@nexus.invalid',
};

const DEFAULT_TIMEOUT_MS = 60_000;
// Listings of a big tree run to megabytes; never truncate them.
const MAX_BUFFER = 1024 * 1024 * 1024;

// What git clears itself when it enters another repository: inherited from a hook or a parent git they would
// point this call at some other repository than `cwd`.
const REPOSITORY_LOCAL_ENV = [
  'GIT_ALTERNATE_OBJECT_DIRECTORIES',
  'GIT_CONFIG',
  'GIT_CONFIG_PARAMETERS',
  'GIT_CONFIG_COUNT',
  'GIT_OBJECT_DIRECTORY',
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_IMPLICIT_WORK_TREE',
  'GIT_GRAFT_FILE',
  'GIT_INDEX_FILE',
  'GIT_NO_REPLACE_OBJECTS',
  'GIT_REPLACE_REF_BASE',
  'GIT_PREFIX',
  'GIT_SHALLOW_FILE',
  'GIT_COMMON_DIR',
] as const;

// A hook would run the user's code inside our bookkeeping; signing would prompt or fail with nobody there; a
// stuck fsmonitor would hang us. And a session writes in this repository: nothing it could have set may run
// here, outside its sandbox, so every setting that names a program is pinned to a harmless one (the session's
// sandbox keeps .git/config and .git/hooks read-only; this holds where a workspace runs sessions without one).
const FIXED_CONFIG = [
  ['core.hooksPath', '/dev/null'],
  ['commit.gpgsign', 'false'],
  ['tag.gpgsign', 'false'],
  ['core.fsmonitor', 'false'],
  ['core.pager', 'cat'],
  ['core.sshCommand', 'ssh'],
  ['core.askPass', ''],
  ['credential.helper', ''],
  ['core.editor', ':'],
  ['sequence.editor', ':'],
  ['core.gitProxy', ''],
  ['core.alternateRefsCommand', ''],
  ['uploadpack.packObjectsHook', ''],
  ['protocol.ext.allow', 'never'],
  ['gpg.program', 'false'],
].flatMap(([k, v]) => ['-c', `${k}=${v}`]);

// Variables that name a program git would run: ours are never set for a session's benefit, and none is wanted.
const PROGRAM_ENV = ['GIT_EXTERNAL_DIFF', 'GIT_PAGER', 'GIT_SSH', 'GIT_SSH_COMMAND', 'GIT_ASKPASS', 'SSH_ASKPASS', 'GIT_EDITOR', 'GIT_SEQUENCE_EDITOR', 'GIT_PROXY_COMMAND'] as const;

/** Everything a git call ended with, failure included. */
export type GitOutcome = GitRun & {
  /** Exited with 0 (or an `okCodes` code). */
  ok: boolean;
  /** Why git could not be started at all (ENOENT: no git, or no such folder). */
  spawnCode: string | undefined;
  /** Stopped at the timeout. */
  killed: boolean;
};

/** Runs `git <args>` in `cwd` and resolves with how it ended, whatever that was: the caller decides what a failure means. */
export async function spawnGit(cwd: string, args: readonly string[], opts: RunGitOptions = {}): Promise<GitOutcome> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of REPOSITORY_LOCAL_ENV) delete env[name];
  for (const name of PROGRAM_ENV) delete env[name];
  env.PAGER = 'cat';
  // A main repository's .git never holds `commondir`; one a session wrote there would point git at a config of its own.
  const pinned = commonDir(cwd);
  if (pinned !== null) env.GIT_COMMON_DIR = pinned;
  env.LC_ALL = 'C';
  env.GIT_TERMINAL_PROMPT = '0';
  if (opts.readOnly) env.GIT_OPTIONAL_LOCKS = '0';
  if (opts.indexFile !== undefined) env.GIT_INDEX_FILE = opts.indexFile;
  Object.assign(env, opts.env);
  const timeout = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const okCodes = new Set([0, ...(opts.okCodes ?? [])]);
  const drivers = await driverOverrides(cwd, env);
  const r = await runFile({ file: 'git', args: [...FIXED_CONFIG, ...drivers, ...args], cwd, env, timeoutMs: timeout, maxBuffer: MAX_BUFFER, ...(opts.input === undefined ? {} : { input: Buffer.from(opts.input) }) });
  const code = r.exitCode ?? -1;
  return {
    stdout: r.stdout.toString('utf8'),
    raw: r.stdout,
    stderr: r.stderr.toString('utf8'),
    code,
    ok: !r.killed && r.errorCode === undefined && okCodes.has(code),
    spawnCode: r.errorCode,
    killed: r.killed,
  };
}

/**
 * Runs `git <args>` in `cwd` and resolves with its output when it exits with 0 (or a code in `okCodes`).
 * @throws {NexusError} `GIT_FAILED` when git cannot be started, times out, or exits with any other code; the
 *   details carry the arguments, the exit code, stderr and the cause.
 */
export async function runGit(cwd: string, args: readonly string[], opts: RunGitOptions = {}): Promise<GitRun> {
  const r = await spawnGit(cwd, args, opts);
  if (r.ok) return { stdout: r.stdout, raw: r.raw, stderr: r.stderr, code: r.code };
  const why =
    r.spawnCode === 'ENOENT'
      ? 'git is not installed or not on PATH (or the folder does not exist)'
      : r.killed
        ? `did not finish within ${opts.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`
        : `exited with ${r.code}`;
  throw new NexusError('GIT_FAILED', `git ${args[0] ?? ''} ${why}: ${r.stderr.trim().split('\n')[0] ?? ''}`.trim(), {
    cwd,
    args: [...args],
    code: r.code,
    stderr: r.stderr.trim(),
  });
}
