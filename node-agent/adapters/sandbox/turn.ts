// One session turn's sandbox: decided from the spec's workspace, the persona and `.nxs/config.json`, or refused.
import { appendFileSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { packageRoot } from '../../../infra/index.js';
import { NexusError } from '../../../protocol/errors.js';
import { runtimeKind, type Persona } from '../../../protocol/persona.js';
import { nexusHome, workspacePaths } from '../../paths.js';
import { declaredSandbox } from '../workspace/index.js';
import { bwrapArgv, bwrapWorks } from './bwrap.js';
import { seatbeltArgv } from './macos.js';
import { providerNetwork, proxyEnv } from './network.js';
import { sandboxPolicy, SANDBOX_HOME, type SandboxPolicy } from './policy.js';
import { startFilteringProxy, type FilteringProxy } from './proxy.js';

/** The environment variable the supervisor hands a runtime the turn's socket in (outside the sandbox only). */
export const SESSION_SOCKET_VARIABLE = 'NXS_SESSION_SOCKET';

/** How to get a sandbox, said in the refusal. */
export const INSTALL_HINT =
  'install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: `sudo dnf install bubblewrap`; Arch: `sudo pacman -S bubblewrap`) and allow unprivileged user namespaces, ' +
  'or declare "sandbox": "off" in .nxs/config.json to run sessions with nothing around them';

export type TurnSandbox =
  | {
      on: true;
      readonly policy: SandboxPolicy;
      /**
       * Starts the filtering proxy a host list needs, before the first `wrap`; nothing for `none` and `all`. Refused
       * requests are counted and logged, one JSON line each, in the session folder's `network.log`.
       */
      start(): Promise<void>;
      /** Stops the proxy (if one was started); the turn's sandboxed processes have ended or lose their way out. */
      close(): Promise<void>;
      /** How many requests the proxy refused this turn. */
      refused(): number;
      wrap(command: readonly string[], cwd: string): string[];
      env(base: NodeJS.ProcessEnv, opts?: { dropSecrets?: boolean }): Record<string, string>;
    }
  | { on: false };

/** The file, in the session's folder, where the proxy logs what it refused. */
export const NETWORK_LOG = 'network.log';

/** Variables a builtin runtime's tools never see: the provider key stays with the runtime outside. */
const SECRET_VARIABLE = /(^|_)(API_KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$/i;

/** A CLI's settings file kept read-only, and what stands in for it when there is none yet. */
type Kept = { path: string; empty: string };

/**
 * The CLI's own state folder (its login, its session logs): it calls its model itself, so it needs it writable. Its
 * settings file in there is kept read-only (SandboxPolicy.keep): codex's config.toml (MCP servers, `notify`, the
 * provider whose host the turn may reach), Claude Code's settings.json (hooks, helpers, environment).
 */
function cliState(kind: string, env: NodeJS.ProcessEnv, home: string): { write: string[]; env: Record<string, string>; keep: Kept[] } {
  if (kind === 'codex') {
    const dir = env['CODEX_HOME'] || join(home, '.codex');
    return { write: [dir], env: { CODEX_HOME: dir }, keep: [{ path: join(dir, 'config.toml'), empty: '' }] };
  }
  if (kind === 'claude-code') {
    const dir = env['CLAUDE_CONFIG_DIR'] || join(home, '.claude');
    return { write: [dir], env: { CLAUDE_CONFIG_DIR: dir }, keep: [{ path: join(dir, 'settings.json'), empty: '{}\n' }] };
  }
  return { write: [], env: {}, keep: [] };
}

/**
 * Makes each kept settings file a regular file the sandbox can pin: an empty one where there is none, so the session
 * cannot create it either. A link is refused: the session could replace the link itself, whatever it points at.
 */
function pinSettings(keep: readonly Kept[]): void {
  for (const k of keep) {
    mkdirSync(dirname(k.path), { recursive: true, mode: 0o700 });
    try {
      writeFileSync(k.path, k.empty, { flag: 'wx', mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (!lstatSync(k.path).isFile()) {
      throw new NexusError('SANDBOX_REFUSED', `${k.path} is not a regular file (a symbolic link?): a session could put another in its place, and with it the programs the CLI runs and the hosts it may reach. Make it a regular file`);
    }
  }
}

export type TurnSandboxInput = {
  workspaceDir: string;
  sessionDir: string;
  persona: Pick<Persona, 'tools' | 'permissions' | 'runtime'> & { network?: Persona['network']; sandbox?: Persona['sandbox'] };
  env: NodeJS.ProcessEnv;
  socket: string | null;
  platform?: NodeJS.Platform;
  /** Check that bubblewrap works first (a caller that did not launch the turn itself). */
  probe?: boolean;
};

/**
 * The turn's sandbox. Throws SANDBOX_UNAVAILABLE when none can be had and the workspace did not declare
 * `sandbox: off`, and SANDBOX_REFUSED for a declaration it cannot honour.
 */
export function turnSandbox(input: TurnSandboxInput): TurnSandbox {
  const declared = declaredSandbox(workspacePaths(input.workspaceDir));
  if (declared === 'off') return { on: false };
  const platform = input.platform ?? process.platform;
  if (platform !== 'linux' && platform !== 'darwin') throw new NexusError('SANDBOX_UNAVAILABLE', `sessions run only inside an OS sandbox, and none is known on ${platform}: declare "sandbox": "off" in .nxs/config.json to run them unconfined`);
  // Whether bubblewrap works was asked before the turn was launched (sandboxReadiness, once per launching process);
  // asking again here would cost every turn a process. A bwrap that stopped working fails the turn's start instead.
  if (platform === 'linux' && input.probe === true) {
    const works = bwrapWorks(input.env);
    if (!works.ok) throw new NexusError('SANDBOX_UNAVAILABLE', `sessions run only inside an OS sandbox: ${works.why}. To fix it, ${INSTALL_HINT}`);
  }
  const kind = runtimeKind(input.persona.runtime);
  const userHome = input.env['HOME'] || homedir();
  const state = cliState(kind, input.env, userHome);
  // Before the host list is read from them (providerNetwork).
  pinSettings(state.keep);
  const privateHome = join(input.sessionDir, 'home');
  if (!existsSync(privateHome)) {
    mkdirSync(privateHome, { recursive: true, mode: 0o700 });
    // Commits need a name: the user's git identity is not a secret, their credentials are (and stay out).
    const gitconfig = join(userHome, '.gitconfig');
    if (existsSync(gitconfig)) copyFileSync(gitconfig, join(privateHome, '.gitconfig'));
  }
  const p = input.persona;
  if (platform === 'darwin' && Array.isArray(p.network)) {
    throw new NexusError('SANDBOX_REFUSED', `network: [${p.network.join(', ')}] is a host list; on macOS this version enforces only none and all. Declare network: none or network: all`);
  }
  // The CLIs call their model themselves: by default they reach their provider's host, through the proxy (Linux only).
  const cli = kind === 'claude-code' || kind === 'codex';
  const readOnly = (Array.isArray(p.tools) && p.tools.length === 0 && p.permissions !== 'bypassPermissions') || p.permissions === 'plan';
  const decided = sandboxPolicy({
    copy: input.workspaceDir,
    nexusHome: nexusHome(input.env),
    userHome,
    privateHome,
    writable: !readOnly,
    network: p.network,
    defaultNetwork: cli ? (platform === 'linux' ? providerNetwork(kind, input.env) : 'all') : 'none',
    write: [...declared.write, ...(p.sandbox?.write ?? []), ...state.write],
    keep: state.keep.map((k) => k.path),
    // The session's `nxc` and Nexus's own scripts, and Node itself: hidden by the fresh /tmp when unpacked there.
    read: [packageRoot(), dirname(realExecPath())],
    hide: declared.hide,
    socket: input.socket,
  });
  for (const w of state.write) mkdirSync(w, { recursive: true, mode: 0o700 });
  let policy = decided;
  let proxy: FilteringProxy | null = null;
  let proxyDir: string | null = null;
  let refusedBefore = 0;
  return {
    on: true,
    get policy() {
      return policy;
    },
    async start() {
      if (!Array.isArray(policy.network) || proxy !== null) return;
      // A private folder of its own, short enough for a socket path wherever the session folder lies.
      proxyDir = mkdtempSync(join(tmpdir(), 'nxs-proxy-'));
      const log = join(input.sessionDir, NETWORK_LOG);
      proxy = await startFilteringProxy({
        path: join(proxyDir, 'p.sock'),
        hosts: policy.network,
        onRefuse: (r) => appendFileSync(log, JSON.stringify({ at: new Date().toISOString(), refused: `${r.host}${r.port === null ? '' : `:${r.port}`}`, method: r.method }) + '\n', { mode: 0o600 }),
      });
      policy = { ...policy, proxy: proxy.path };
    },
    async close() {
      const [p, dir] = [proxy, proxyDir];
      [proxy, proxyDir] = [null, null];
      if (p !== null) {
        refusedBefore += p.refused;
        await p.close();
      }
      if (dir !== null) rmSync(dir, { recursive: true, force: true });
    },
    refused: () => refusedBefore + (proxy?.refused ?? 0),
    wrap: (command, cwd) => (platform === 'darwin' ? seatbeltArgv(policy, join(input.sessionDir, 'tmp'), command) : bwrapArgv(policy, command, cwd, input.env)),
    env(base, opts = {}) {
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(base)) {
        if (v === undefined || k === SESSION_SOCKET_VARIABLE) continue;
        if (opts.dropSecrets === true && SECRET_VARIABLE.test(k)) continue;
        out[k] = v;
      }
      const tmp = platform === 'darwin' ? join(input.sessionDir, 'tmp') : '/tmp';
      if (platform === 'darwin') mkdirSync(tmp, { recursive: true, mode: 0o700 });
      return { ...out, ...state.env, ...(Array.isArray(policy.network) ? proxyEnv() : {}), HOME: platform === 'darwin' ? privateHome : SANDBOX_HOME, TMPDIR: tmp };
    },
  };
}

/** Node's own binary, links resolved (an install under /tmp reached through a link elsewhere is still under /tmp). */
function realExecPath(): string {
  try {
    return realpathSync(process.execPath);
  } catch {
    return process.execPath;
  }
}
