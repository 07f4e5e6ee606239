import { runFile } from '../../infra/spawner.js';

// The git identity every test repository is made with. CI machines (and fresh clones) have no global
// identity, so a commit made without these fails with "Author identity unknown".
export const GIT_IDENTITY = {
  GIT_AUTHOR_NAME: 'Test Person',
  GIT_AUTHOR_EMAIL: 'test@example.invalid',
  GIT_COMMITTER_NAME: 'Test Person',
  GIT_COMMITTER_EMAIL: 'test@example.invalid',
} as const;

// The suite may itself run under a git hook; these would point a test's git at another repository.
const HOOK_VARIABLES = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_COMMON_DIR'];

/** `base` with the test identity set and a calling hook's repository variables removed. */
export function gitEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base, ...GIT_IDENTITY };
  for (const name of HOOK_VARIABLES) delete env[name];
  return env;
}

/** A failed git call, shaped as `execFile`'s error is: `code` is the exit code. */
export type GitError = Error & { code: number | string | null; stdout: string; stderr: string };

/**
 * Runs git and resolves with its stdout, or rejects with a {@link GitError}. It goes through the process
 * helper (`runFile`), as the product's own git calls do: a worker that holds stores forks slowly.
 */
export async function runTestGit(cwd: string, args: readonly string[], opts: { env?: NodeJS.ProcessEnv; maxBuffer?: number; input?: string } = {}): Promise<string> {
  const r = await runFile({
    file: 'git',
    args,
    cwd,
    env: opts.env ?? gitEnv(),
    timeoutMs: 0,
    maxBuffer: opts.maxBuffer ?? 64 * 1024 * 1024,
    ...(opts.input === undefined ? {} : { input: Buffer.from(opts.input) }),
  });
  const stdout = r.stdout.toString('utf8');
  const stderr = r.stderr.toString('utf8');
  if (r.exitCode === 0 && r.errorCode === undefined) return stdout;
  const err = new Error(`git ${args.join(' ')} failed (${r.errorCode ?? `exit ${r.exitCode}`}): ${stderr}`) as GitError;
  err.code = r.errorCode ?? r.exitCode;
  err.stdout = stdout;
  err.stderr = stderr;
  throw err;
}
