// Where the tools may reach: a path resolved through its links to the real working copy, out of .nxs/ and the rule folders.
import path from 'node:path';
import { realOrAncestor, realOrAncestorSync, realPath, realPathSync, statSyncOrNull } from '../../../adapters/files/index.js';

/** A tool's own refusal or failure, told to the model as an error result; the run goes on. */
export class ToolFailure extends Error {
  override name = 'ToolFailure';
}

export type Access = 'read' | 'write';

/** The workspace's private folder (keys, the store, the sync token), in this working copy or any nested one. */
export const PRIVATE_DIR = '.nxs';
/** The declarations sessions run under: no session rewrites its own permissions or a channel's rules. */
export const RULE_DIRS: readonly string[] = ['.nxs-personas', '.nxs-channels'];

/**
 * Why `abs` (already resolved through its links) is out of a tool's reach from `realRoot`, or null.
 * Reading `.nxs/artifacts/` is the one way into `.nxs/`: the runtime stores long outputs there.
 */
export function reachRefusal(realRoot: string, abs: string, access: Access, shown: string): string | null {
  const rel = path.relative(realRoot, abs);
  if (rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return `${shown} is outside the working directory`;
  const parts = rel.split(path.sep);
  const priv = parts.indexOf(PRIVATE_DIR);
  if (priv !== -1 && !(access === 'read' && priv === 0 && parts[1] === 'artifacts')) return `${shown} is in the workspace's private .nxs/ folder`;
  if (access === 'read') return null;
  const rules = parts.find((p) => RULE_DIRS.includes(p));
  if (rules !== undefined) return `${shown} is in ${rules}/, the declarations sessions run under; only a person changes them`;
  if (parts[0] === '.git') return `${shown} is inside .git/; use git commands instead`;
  return null;
}

/**
 * The absolute path of `p` under `root`, or a refusal. Links are followed before the check,
 * so a link cannot lead out, into `.nxs/` or into a rule folder.
 */
export async function resolveInside(root: string, p: string, access: Access): Promise<string> {
  const realRoot = await realPath(root);
  const abs = await realOrAncestor(path.resolve(realRoot, p));
  const refused = reachRefusal(realRoot, abs, access, p);
  if (refused !== null) throw new ToolFailure(refused);
  return abs;
}

/**
 * Why a path a shell command names is out of reach for reading, or null: the same rule as the
 * file tools, and besides a FIFO, a socket or a device is refused (reading one can block forever).
 */
export function readRefusalSync(root: string, p: string): string | null {
  let realRoot: string;
  try {
    realRoot = realPathSync(root);
  } catch {
    return `the working directory ${root} cannot be resolved`;
  }
  const abs = realOrAncestorSync(path.resolve(realRoot, p));
  const refused = reachRefusal(realRoot, abs, 'read', p);
  if (refused !== null) return refused;
  const info = statSyncOrNull(abs);
  if (info === null) return null; // nothing there (yet): the command finds nothing either
  if (!info.isFile() && !info.isDirectory()) return `${p} is not a regular file or folder`;
  return null;
}
