// What a session turn's sandbox lets it see, write and reach: one value, from the declarations and the machine.
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { NexusError } from '../../../protocol/errors.js';
import type { Network } from '../../../protocol/persona.js';

/** Where the session's private HOME is mounted inside; TMPDIR is a fresh tmpfs at /tmp. */
export const SANDBOX_HOME = '/tmp/home';

/** A sandbox, decided. Paths are absolute and real (symlinks resolved) on the machine outside. */
export type SandboxPolicy = {
  /** The working copy: the session's cwd, writable unless `writable` is false. */
  copy: string;
  writable: boolean;
  /** Read-only inside the copy even when it is writable: the rules the session runs under and git's executable config. */
  protect: string[];
  /** Declared write paths besides the copy (already checked). */
  write: string[];
  /**
   * Files inside those write paths that stay read-only: a CLI's own settings, which name the programs it runs and
   * the hosts it calls. A session that rewrote them would run its code in the user's next unsandboxed run of the
   * CLI, and widen its own network at its next turn (the host list is read from them). Regular files (turn.ts).
   */
  keep: string[];
  /**
   * Folders under a root the sandbox lays fresh and empty ({@link MASKED_ROOTS}) that a turn still needs to read:
   * Nexus's own install (the session's `nxc`, the demo's agent) and Node's, when either was unpacked under /tmp.
   * Read-only; a secret inside one is still hidden.
   */
  read: string[];
  /** Secrets: not there at all inside (an empty read-only folder, or an empty file). Mounted last, so nothing opens them. */
  hide: string[];
  /** The session's private HOME outside; mounted at SANDBOX_HOME. */
  home: string;
  /** A host list is enforced by the filtering proxy (proxy.ts): the sandbox itself has no network then either. */
  network: 'none' | 'all' | string[];
  /** With a host list: the filtering proxy's socket outside, bound at PROXY_SOCKET_PATH (set once the proxy listens). */
  proxy: string | null;
  /** The supervisor's socket outside, bound at SESSION_SOCKET_PATH; null: none (nxc inside reaches nothing). */
  socket: string | null;
};

/** The user's secrets a session never needs, relative to the home folder. */
export const HOME_SECRETS = ['.ssh', '.aws', '.config/gcloud', '.netrc', '.gnupg', '.kube', '.docker/config.json', '.git-credentials', '.config/gh', '.npmrc', '.pypirc', '.azure', '.password-store', '.nexus'];

/** Folders every sandbox replaces with an empty one of its own: what lies under them outside is not there inside. */
export const MASKED_ROOTS = ['/tmp', '/run'];

/** Paths inside a working copy that stay read-only whatever the session may write. */
export const PROTECTED_IN_COPY = ['.nxs-personas', '.nxs-channels', '.git/config', '.git/hooks'];

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    // Not there (yet): resolve what exists above it, so a symlinked parent is still seen through.
    const parent = dirname(p);
    return parent === p ? p : join(real(parent), p.slice(parent.length + (parent.endsWith(sep) ? 0 : 1)));
  }
}

function inside(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
}

/** Expands `~/` against the real home; anything else must be absolute. */
function expand(p: string, home: string): string {
  if (p === '~') return home;
  if (p.startsWith('~/')) return join(home, p.slice(2));
  if (!isAbsolute(p)) throw new NexusError('SANDBOX_REFUSED', `sandbox path ${JSON.stringify(p)} must be absolute or start with ~/`);
  return resolve(p);
}

/** The working-copy roots the node knows (its registry), read leniently: a missing or odd file knows none. */
function registeredCopies(nexusHome: string): string[] {
  try {
    const reg = JSON.parse(readFileSync(join(nexusHome, 'node', 'registry.json'), 'utf8')) as { workspaces?: Array<{ root?: unknown }> };
    return (reg.workspaces ?? []).flatMap((w) => (typeof w.root === 'string' ? [w.root] : []));
  } catch {
    return [];
  }
}

/** Workspaces beside this one (a folder of checkouts is the common layout): each sibling holding `.nxs/`. */
function siblingCopies(copy: string): string[] {
  const parent = dirname(copy);
  try {
    return readdirSync(parent).flatMap((name) => {
      const p = join(parent, name);
      return p !== copy && existsSync(join(p, '.nxs')) ? [p] : [];
    });
  } catch {
    return [];
  }
}

/** Every entry under `dir` but the branch that leads down to `keep` (which lies inside `dir`). */
export function hideAround(dir: string, keep: string): string[] {
  const out: string[] = [];
  for (let cur = dir; cur !== keep; ) {
    const next = join(cur, relative(cur, keep).split(sep)[0]!);
    let names: string[] = [];
    try {
      names = readdirSync(cur);
    } catch {
      // Unreadable: nothing in it can be listed, so nothing is hidden by name.
    }
    for (const name of names) if (join(cur, name) !== next) out.push(join(cur, name));
    cur = next;
  }
  return out;
}

export type PolicyInput = {
  copy: string;
  nexusHome: string;
  /** The user's real home folder (the secrets under it are hidden). */
  userHome: string;
  /** The private HOME outside (under the session's folder). */
  privateHome: string;
  writable: boolean;
  network: Network | undefined;
  /** The default when nothing is declared: `none` for tools and commands, the provider's host for CLIs that call their model. */
  defaultNetwork: Network;
  /** Declared by the workspace and the persona. */
  write: string[];
  /** Files in the write paths kept read-only (see SandboxPolicy.keep). */
  keep?: string[];
  /** Folders a turn reads from wherever they lie (see SandboxPolicy.read): kept only when under a masked root. */
  read?: string[];
  hide: string[];
  socket: string | null;
};

/**
 * Decides a turn's sandbox. A declared write path that would open `.nxs/`, NEXUS_HOME or another workspace is refused.
 * A host list is kept as declared; the turn starts the proxy that enforces it (turn.ts).
 */
export function sandboxPolicy(input: PolicyInput): SandboxPolicy {
  const copy = real(input.copy);
  const home = real(input.userHome);
  const nexusHome = real(input.nexusHome);
  const net = input.network ?? input.defaultNetwork;
  const copies = [copy, ...registeredCopies(nexusHome).map(real), ...siblingCopies(copy)];
  const stores = copies.map((c) => join(c, '.nxs'));
  const write = input.write.map((p) => real(expand(p, home)));
  for (const w of write) {
    const opens = [nexusHome, ...stores].find((s) => inside(w, s) || inside(s, w)) ?? copies.slice(1).find((c) => inside(w, c) || inside(c, w));
    if (opens !== undefined || inside(copy, w)) {
      throw new NexusError('SANDBOX_REFUSED', `sandbox write path ${w} would open ${opens ?? copy}, which no declaration can make writable`);
    }
  }
  const wanted = [...new Set([...stores, nexusHome, ...HOME_SECRETS.map((s) => join(home, s)), ...input.hide.map((p) => real(expand(p, home)))])];
  // A copy inside a hidden folder (npm start keeps its demo workspace under NEXUS_HOME) would vanish with it:
  // such a folder is hidden around the copy instead, entry by entry on the way down to it.
  const hide = [...new Set(wanted.flatMap((h) => (h !== copy && inside(copy, h) ? hideAround(h, copy) : [h])))];
  return {
    copy,
    writable: input.writable,
    protect: PROTECTED_IN_COPY.map((p) => join(copy, p)),
    write,
    keep: [...(input.keep ?? [])],
    read: [...new Set((input.read ?? []).map(real))].filter((r) => MASKED_ROOTS.some((m) => inside(r, m) && r !== m)),
    hide,
    home: input.privateHome,
    network: Array.isArray(net) ? [...net] : net,
    proxy: null,
    socket: input.socket,
  };
}
