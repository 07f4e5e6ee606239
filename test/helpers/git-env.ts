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
