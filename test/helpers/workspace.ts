// Test harness: a real workspace in a temp folder (a real git repo), driven through the real CLI: as child processes, or its main in this process.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { inject } from 'vitest';
import { processAlive } from '../../infra/fs.js';
import { runFile, useProcessHelper } from '../../infra/spawner.js';
import { initWorkspace } from '../../node-agent/adapters/workspace/index.js';
import { openStore, type Store } from '../../node-agent/adapters/store/index.js';
import { gitEnv } from './git-env.js';
import { runMain, serveInProcess, type InProcessWorkspace, TestClock } from './host.js';
import { storeStamp } from './store-pool.js';
import { leftoverProcesses, stopProcesses, TEST_RUN_VARIABLE } from './leftovers.js';

export const REPO = resolve(import.meta.dirname, '..', '..');
export const AGENT = join(REPO, 'test', 'fixtures', 'agent.mjs');

export type CliResult = { code: number; stdout: string; stderr: string; json: any };

export type RunOpts = { env?: Record<string, string | undefined>; input?: string; cwd?: string };

function cleanEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('NXC_')) env[k] = v;
  env['NEXUS_HOME'] = inject('nexusHome');
  env['PATH'] = `${join(REPO, 'bin')}:${process.env['PATH'] ?? ''}`;
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

export async function runCli(bin: 'nxc' | 'nxs', args: string[], cwd: string, opts: RunOpts = {}): Promise<CliResult> {
  // Forked from the small helper: this worker may hold stores, and forking it would cost every call ~30 ms.
  useProcessHelper();
  const r = await runFile({
    file: process.execPath,
    args: [join(REPO, 'bin', bin), ...args],
    cwd,
    env: cleanEnv(opts.env),
    input: Buffer.from(opts.input ?? ''),
    timeoutMs: 0,
    maxBuffer: 64 * 1024 * 1024,
  });
  const stdout = r.stdout.toString('utf8');
  const stderr = r.stderr.toString('utf8');
  let json: any = null;
  try {
    json = JSON.parse(stdout);
  } catch {
    /* not JSON */
  }
  return { code: r.exitCode ?? 1, stdout, stderr, json };
}

export type PersonaSpec = { mode: string; arg?: string; tools?: string[] | null; timeout?: string; extra?: string };

export class TestWorkspace {
  readonly log: string;
  /** Set when this workspace has a node of its own (its own NEXUS_HOME). */
  home: string | undefined;
  /** Set while the workspace is served in this test's process (the default); null: real processes. */
  inproc: InProcessWorkspace | null = null;
  /**
   * With no in-process host: run `nxc`/`nxs` main in this process all the same, on the product's own
   * route (a real node's socket, or the store opened here) instead of as a child process.
   */
  cliInProcess = false;
  readonly clock = new TestClock();
  constructor(
    readonly root: string,
    readonly id: string,
    readonly short: string,
  ) {
    this.log = join(root, '..', 'agent-log.jsonl');
  }

  /** Serves this workspace in the test's own process: commands and sessions run without child processes. */
  serveInProcess(): this {
    this.inproc = serveInProcess(this.root, cleanEnv({ NXC_ACTOR: 'alice' }) as Record<string, string>, this.log, this.clock);
    return this;
  }

  /** Runs `fn` on the workspace's store: the in-process one, or the store opened here (no node may hold it). */
  async withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
    if (this.inproc) return this.inproc.withStore(fn);
    const store = await openStore(join(this.root, '.nxs', 'store'));
    try {
      return await fn(store);
    } finally {
      await store.close();
    }
  }

  /** Moves the test clock (in process only); turns past their declared timeout are stopped. */
  advance(ms: number): void {
    if (!this.inproc) throw new Error('advance() needs an in-process workspace');
    this.inproc.advance(ms);
  }

  private homeEnv(): Record<string, string> {
    return this.home ? { NEXUS_HOME: this.home } : {};
  }

  nxc(args: string[], opts: RunOpts = {}): Promise<CliResult> {
    if (this.inproc) return this.inproc.cli('nxc', args, { ...opts, env: { NXC_ACTOR: 'alice', ...this.homeEnv(), ...opts.env } });
    return this.real('nxc', args, { ...opts, env: { NXC_ACTOR: 'alice', AGENT_LOG: this.log, ...this.homeEnv(), ...opts.env } });
  }

  /** A command on the product's own route: a child process, or main in this process (`cliInProcess`) with the same environment. */
  private real(bin: 'nxc' | 'nxs', args: string[], opts: RunOpts): Promise<CliResult> {
    const cwd = opts.cwd ?? this.root;
    if (!this.cliInProcess) return runCli(bin, args, cwd, opts);
    return runMain(bin, args, { env: cleanEnv(opts.env), cwd, input: opts.input ?? '' });
  }

  async nxs(args: string[], opts: RunOpts = {}): Promise<CliResult> {
    if (this.inproc && args[0] !== 'node') return this.inproc.cli('nxs', args, { ...opts, env: { ...this.homeEnv(), ...opts.env } });
    if (args[0] === 'node' && (args[1] === 'start' || args[1] === 'run') && this.inproc) {
      // A node takes the store: the in-process host hands it over, and commands go through the node from now on.
      await this.inproc.close();
      this.inproc = null;
    }
    // A node started here passes its environment on to the sessions it runs, so the agent log goes with it.
    return this.real('nxs', args, { ...opts, env: { AGENT_LOG: this.log, ...this.homeEnv(), ...opts.env } });
  }

  /** Gives this workspace a NEXUS_HOME of its own (sharing the suite's store template), without starting a node. */
  ownHome(): string {
    const home = join(this.root, '..', 'nexus-home');
    mkdirSync(home, { recursive: true });
    if (!existsSync(join(home, 'cache'))) symlinkSync(join(inject('nexusHome'), 'cache'), join(home, 'cache'));
    this.home = home;
    return home;
  }

  /**
   * Gives this workspace a node of its own: a private NEXUS_HOME, `nxs node start`, and `nxs node
   * register`. Commands then go over the node's socket. The node is the real `nxs node run` process;
   * the two commands that start and register it run in this process (a child process each would add
   * only its own start).
   */
  async startNode(args: string[] = [], extraEnv: Record<string, string> = {}): Promise<void> {
    // A node holds the store: a workspace served in process hands it over first.
    await this.inproc?.close();
    this.inproc = null;
    this.ownHome();
    // The node passes its environment on to the sessions it starts (`extraEnv`: a runtime's keys and home).
    const env = cleanEnv({ AGENT_LOG: this.log, ...extraEnv, ...this.homeEnv() });
    const started = await runMain('nxs', ['node', 'start', ...args, '--json'], { env, cwd: this.root });
    if (started.code !== 0) throw new Error(`nxs node start failed: ${started.stdout}${started.stderr}`);
    const reg = await runMain('nxs', ['node', 'register', '--json'], { env, cwd: this.root });
    if (reg.code !== 0) throw new Error(`nxs node register failed: ${reg.stdout}${reg.stderr}`);
  }

  /** Stops this workspace's node; one that does not stop when asked (or whose stop failed) is killed. */
  async stopNode(): Promise<void> {
    if (!this.home) return;
    const info = join(this.home, 'node', 'node.json');
    const pid = existsSync(info) ? (JSON.parse(readFileSync(info, 'utf8')) as { pid?: number }).pid : undefined;
    await this.nxs(['node', 'stop', '--json']).catch(() => undefined);
    if (pid !== undefined && processAlive(pid) && isNodeProcess(pid)) process.kill(pid, 'SIGKILL');
  }

  /** Changes `.nxs/config.json` (members given as undefined are removed). The engine reads it at each decision. */
  config(patch: Record<string, unknown>): void {
    const file = join(this.root, '.nxs', 'config.json');
    const config = { ...JSON.parse(readFileSync(file, 'utf8')), ...patch };
    writeFileSync(file, JSON.stringify(config, null, 2) + '\n');
  }

  /** Declares a persona whose runtime is the scriptable fixture agent. */
  persona(role: string, spec: PersonaSpec): void {
    const dir = join(this.root, '.nxs-personas');
    mkdirSync(dir, { recursive: true });
    const lines = [`model: fake-model`, `system_prompt: You are ${role}.`];
    if (spec.tools !== null) lines.push(`tools: ${JSON.stringify(spec.tools ?? ['Bash'])}`);
    if (spec.timeout) lines.push(`timeout: ${spec.timeout}`);
    lines.push(`runtime:`, `  command: ${JSON.stringify([process.execPath, AGENT, spec.mode, ...(spec.arg ? [spec.arg] : [])])}`);
    if (spec.extra) lines.push(spec.extra);
    writeFileSync(join(dir, `${role}.yaml`), lines.join('\n') + '\n');
  }

  /** Every nxc call the fixture agents made, in order. */
  agentLog(): any[] {
    if (!existsSync(this.log)) return [];
    return readFileSync(this.log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  }

  sessionDirs(): string[] {
    const dir = join(this.root, '.nxs', 'sessions');
    return existsSync(dir) ? readdirSync(dir).filter((d) => d.startsWith('s-')) : [];
  }

  /** Waits until every session turn started here has been settled by its sidecar. */
  async waitIdle(timeoutMs = 90_000): Promise<void> {
    if (this.inproc) return this.inproc.waitIdle(timeoutMs);
    const deadline = Date.now() + timeoutMs;
    let quietChecks = 0;
    while (Date.now() < deadline) {
      let pending = 0;
      for (const s of this.sessionDirs()) {
        const files = readdirSync(join(this.root, '.nxs', 'sessions', s));
        for (const f of files) {
          const m = /^turn-(\d+)\.started$/.exec(f);
          if (m && !files.includes(`turn-${m[1]}.done`)) pending++;
        }
      }
      quietChecks = pending === 0 ? quietChecks + 1 : 0;
      if (quietChecks >= 2) return;
      await new Promise((r) => setTimeout(r, 150));
    }
    throw new Error(`sessions still running after ${timeoutMs} ms`);
  }

  async status(all = true): Promise<any> {
    const r = await this.nxc(['status', ...(all ? ['--all'] : []), '--json']);
    if (r.code !== 0) throw new Error(`status failed: ${r.stderr}${r.stdout}`);
    return r.json;
  }

  /**
   * Closes the in-process host, stops the node and every session process still working in this
   * workspace's folder (a sidecar, an agent), whatever state a failed test left them in.
   */
  async cleanup(): Promise<void> {
    await this.inproc?.release().catch(() => undefined);
    await this.stopNode();
    await stopProcesses(processesIn(join(this.root, '..')));
    rmSync(join(this.root, '..'), { recursive: true, force: true });
  }
}

/** This run's processes (by the suite's mark) whose working directory is inside `dir`: sessions run in their workspace. */
function processesIn(dir: string): number[] {
  const run = process.env[TEST_RUN_VARIABLE];
  if (run === undefined) return [];
  let base: string;
  try {
    base = realpathSync(dir); // what /proc/<pid>/cwd shows
  } catch {
    return [];
  }
  return leftoverProcesses(run)
    .map((p) => p.pid)
    .filter((pid) => {
      try {
        const cwd = readlinkSync(`/proc/${pid}/cwd`);
        if (cwd === base || cwd.startsWith(`${base}/`)) return true;
        // A session's sidecar and sandbox name the workspace in their arguments wherever they run from.
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').some((arg) => arg === base || arg.startsWith(`${base}/`));
      } catch {
        return false; // gone meanwhile
      }
    });
}

/** True when `pid` runs `nxs node run` (a pid record may outlive its node and name another process). */
function isNodeProcess(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').includes('node run');
  } catch {
    return false;
  }
}

function git(cwd: string, ...args: string[]): void {
  execFileSync('git', args, { cwd, stdio: 'ignore', env: gitEnv() });
}

let repoTemplate: string | null = null;

/**
 * A repository with one commit, made once per test process and copied for each workspace: five git
 * processes forked from a worker that holds stores cost more than the copy. The declaration folders
 * are ignored, as a team would commit or ignore them, so a fresh workspace reads as a clean tree.
 */
function templateRepo(): string {
  if (repoTemplate !== null && existsSync(repoTemplate)) return repoTemplate;
  const dir = join(mkdtempSync(join(tmpdir(), 'nexus-repo-template-')), 'repo');
  mkdirSync(dir);
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.email', 'test@example.com');
  git(dir, 'config', 'user.name', 'Test');
  writeFileSync(join(dir, 'README.md'), '# test repo\n');
  writeFileSync(join(dir, '.gitignore'), '.nxs-personas/\n.nxs-channels/\n');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'init');
  process.once('exit', () => rmSync(join(dir, '..'), { recursive: true, force: true }));
  return (repoTemplate = dir);
}

/**
 * A fresh git repository with one commit, made a workspace with `nxs init`. `onDisk`: in the disk's
 * temp folder, not the suite's tmpfs scratch (a runtime's sandbox may show only the disk).
 */
export async function makeWorkspace(opts: { git?: boolean; real?: boolean; cliInProcess?: boolean; onDisk?: boolean } = {}): Promise<TestWorkspace> {
  const parent = opts.onDisk ? (process.env['NEXUS_TEST_DISK_TMPDIR'] ?? tmpdir()) : tmpdir();
  const base = mkdtempSync(join(parent, 'nexus-ws-'));
  const root = join(base, 'repo');
  if (opts.git !== false) cpSync(templateRepo(), root, { recursive: true });
  else mkdirSync(root);
  const { workspace } = await initWorkspace(root, { home: inject('nexusHome') });
  const pristine = storeStamp(workspace.paths.store);
  const ws = new TestWorkspace(root, workspace.id, workspace.short);
  // The scripted agents append to a log beside the copy, and wait for gate files the test makes in `shared/`: paths the
  // workspace declares writable for its sessions' sandboxes, which see nothing else outside the copy.
  writeFileSync(ws.log, '');
  mkdirSync(join(base, 'shared'));
  const config = JSON.parse(readFileSync(join(root, '.nxs', 'config.json'), 'utf8'));
  writeFileSync(join(root, '.nxs', 'config.json'), JSON.stringify({ ...config, sandbox: { write: [ws.log, join(base, 'shared')] } }, null, 2) + '\n');
  ws.cliInProcess = opts.cliInProcess === true;
  if (opts.real) return ws;
  ws.serveInProcess().inproc!.pristine = pristine;
  return ws;
}
