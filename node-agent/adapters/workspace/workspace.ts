// A workspace: a folder with a private .nxs/ (store, key pair, config). Made by `nxs init`, found by walking up.
import { existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { generateWorkspaceKey } from '../../../crypto/index.js';
import { readSmallFileSync } from '../../../infra/index.js';
import { writeWorkspaceKey } from '../keys/index.js';
import { NexusError } from '../../../protocol/errors.js';
import { WorkspaceId, workspaceShort } from '../../../protocol/ids.js';
import { DailyBudgetSchema, OperationBudgetDeclarationSchema, PriceTableSchema, type DailyBudget, type PriceTable } from '../../../protocol/usage.js';
import { workspacePaths, type WorkspacePaths } from '../../paths.js';

const ConfigSchema = z.object({
  version: z.literal(1),
  workspace: WorkspaceId,
  name: z.string(),
  created_at: z.string(),
  /**
   * What all sessions of one operation may spend together (the operation budget): a number of turns, or
   * `{max_turns, max_tokens, max_cost}`. Absent: the engine's default turns, tokens and cost uncapped.
   * Declared here, for the whole workspace: a persona may declare lower, nothing can raise it.
   */
  operation_budget: OperationBudgetDeclarationSchema.optional(),
  /** The ceiling across all of this workspace's operations in one UTC day: `{max_tokens, max_cost}`. */
  daily_budget: DailyBudgetSchema.optional(),
  /** What each model costs per million tokens in and out, for runtimes that report tokens but no cost. */
  prices: PriceTableSchema.optional(),
  /**
   * The session sandbox: `off` runs sessions with nothing around them (every turn warns); otherwise more
   * secrets to hide from sessions, and paths every session may write besides its working copy.
   */
  sandbox: z
    .union([z.literal('off'), z.strictObject({ hide: z.array(z.string().min(1)).max(64).default([]), write: z.array(z.string().min(1)).max(64).default([]) })])
    .optional(),
});

/** What `.nxs/config.json` declares about the session sandbox. */
export type SandboxDeclaration = 'off' | { hide: string[]; write: string[] };

export type Workspace = {
  id: WorkspaceId;
  /** The four characters that prefix this workspace's session handles, as in `ab12/coder`. */
  short: string;
  name: string;
  paths: WorkspacePaths;
};

/** The most a workspace's config may weigh. */
const SMALL_FILE_MAX_BYTES = 64 * 1024;

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$/;

/** The config file, parsed and checked; a file that is unreadable or does not fit is CONFIG_INVALID, a refusal like any other. */
function parseConfig(paths: WorkspacePaths): z.infer<typeof ConfigSchema> {
  let raw: unknown;
  try {
    // Only a small regular file: a commit could put a FIFO or a link to a device here.
    raw = JSON.parse(readSmallFileSync(paths.config, SMALL_FILE_MAX_BYTES));
  } catch (err) {
    throw new NexusError('CONFIG_INVALID', `${paths.config} is unreadable: ${err instanceof Error ? err.message : String(err)}`, undefined, { cause: err });
  }
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined ? '' : `: ${issue.path.join('.') || '(the file)'}: ${issue.message}`;
    throw new NexusError('CONFIG_INVALID', `${paths.config} is not a valid workspace config${where}`);
  }
  return parsed.data;
}

function readConfig(paths: WorkspacePaths): Workspace {
  const config = parseConfig(paths);
  return { id: config.workspace, short: workspaceShort(config.workspace), name: config.name, paths };
}

/**
 * The operation budget `.nxs/config.json` declares, or null when it declares none. Read at every decision
 * rather than once when the workspace is opened, so a change applies to a serving node without a restart.
 */
export function declaredOperationBudget(paths: WorkspacePaths): { max_turns: number | null; max_tokens: number | null; max_cost: number | null } {
  const b = parseConfig(paths).operation_budget;
  if (b === undefined) return { max_turns: null, max_tokens: null, max_cost: null };
  if (typeof b === 'number') return { max_turns: b, max_tokens: null, max_cost: null };
  return { max_turns: b.max_turns ?? null, max_tokens: b.max_tokens ?? null, max_cost: b.max_cost ?? null };
}

/** What `.nxs/config.json` declares about spend beyond one operation: the daily ceiling and the price table (read at each decision too). */
export function declaredSpendRules(paths: WorkspacePaths): { daily: DailyBudget | null; prices: PriceTable } {
  const c = parseConfig(paths);
  return { daily: c.daily_budget ?? null, prices: c.prices ?? {} };
}

/** The sandbox `.nxs/config.json` declares (read at each turn's start, like the budget). */
export function declaredSandbox(paths: WorkspacePaths): SandboxDeclaration {
  return parseConfig(paths).sandbox ?? { hide: [], write: [] };
}

/**
 * Whether `.nxs/config.json` is there. A `.nxs` this user may not look into (another user's workspace, its
 * folder private to its owner) is neither "no workspace", which would send the walk on upwards to some other
 * one, nor a folder to move away: it is refused, naming the owner.
 * @throws {NexusError} `CONFIG_INVALID` when the folder or the file cannot be looked at.
 */
function holdsConfig(paths: WorkspacePaths): boolean {
  try {
    // Whatever is there (a folder, a FIFO) is the workspace's: reading it says what is wrong with it.
    statSync(paths.config);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    if (code !== 'EACCES' && code !== 'EPERM') throw new NexusError('CONFIG_INVALID', `${paths.config} cannot be looked at: ${(err as Error).message}`, undefined, { cause: err });
    const owner = ownerOf(paths.nxs);
    const yours = typeof process.getuid === 'function' ? ` (you are uid ${process.getuid()})` : '';
    throw new NexusError(
      'CONFIG_INVALID',
      `${paths.nxs} is not readable by you${yours}: the workspace belongs to ${owner === null ? 'another user' : `uid ${owner}`}; run nxc and nxs as the user who owns it`,
      { path: paths.nxs, owner },
      { cause: err },
    );
  }
}

function ownerOf(path: string): number | null {
  try {
    return statSync(path).uid;
  } catch {
    return null;
  }
}

/**
 * Finds the workspace for `start`: NXC_WORKSPACE_DIR when set (sessions get it),
 * otherwise the nearest folder at or above `start` holding `.nxs/config.json`.
 */
export function findWorkspace(start: string, env: NodeJS.ProcessEnv = process.env): Workspace {
  const pinned = env['NXC_WORKSPACE_DIR'];
  if (pinned) {
    const paths = workspacePaths(resolve(pinned));
    if (!holdsConfig(paths)) throw new NexusError('NOT_A_WORKSPACE', `NXC_WORKSPACE_DIR=${pinned} is not a workspace`);
    return readConfig(paths);
  }
  let dir = resolve(start);
  for (;;) {
    const paths = workspacePaths(dir);
    if (holdsConfig(paths)) return readConfig(paths);
    const up = dirname(dir);
    if (up === dir) {
      throw new NexusError('NOT_A_WORKSPACE', `no workspace at or above ${resolve(start)}; run \`nxs init\` in the project folder`);
    }
    dir = up;
  }
}

export type InitResult = { created: boolean; workspace: Workspace };

/**
 * Makes `root` a workspace. Everything is built in a temporary folder and renamed
 * into place, so a crash leaves either no workspace or a whole one. A second run
 * changes nothing and says so.
 */
export async function initWorkspace(root: string, opts: { name?: string; home?: string } = {}): Promise<InitResult> {
  const paths = workspacePaths(resolve(root));
  if (holdsConfig(paths)) return { created: false, workspace: readConfig(paths) };
  const name = opts.name ?? basename(paths.root);
  if (!NAME_RE.test(name)) {
    throw new NexusError('USAGE', `workspace name ${JSON.stringify(name)} is not valid: letters, digits, space, . _ - (up to 64)`);
  }
  if (existsSync(paths.nxs)) {
    throw new NexusError('USAGE', `${paths.nxs} exists but holds no workspace config; move it away and run init again`);
  }
  const tmp = join(paths.root, `.nxs.tmp-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  try {
    mkdirSync(tmp, { mode: 0o700 });
    // The folder ignores itself, so it never reaches git whatever the repository's own .gitignore says.
    writeFileSync(join(tmp, '.gitignore'), '*\n');
    const key = generateWorkspaceKey();
    writeWorkspaceKey(join(tmp, 'keys'), key);
    // Loaded here only: finding a workspace must not load PGlite (the node's RPC path stays light).
    const { createStore } = await import('../store/index.js');
    await createStore(join(tmp, 'store'), opts.home);
    mkdirSync(join(tmp, 'sessions'), { mode: 0o700 });
    const config = { version: 1 as const, workspace: key.id, name, created_at: new Date().toISOString() };
    writeFileSync(join(tmp, 'config.json'), JSON.stringify(config, null, 2) + '\n');
    renameSync(tmp, paths.nxs);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  return { created: true, workspace: readConfig(paths) };
}
