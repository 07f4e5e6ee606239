// The in-process test host: the real engine, a real PGlite store (opened once and kept open), real
// git and the real CLI code (`nxc`/`nxs` main, argv to rendering), with sessions run as scripted
// functions instead of processes and time read from a clock the test moves. Commands on a workspace
// run one at a time, as the node's queue runs them.
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useProcessHelper } from '../../infra/index.js';
import type { Workspace } from '../../node-agent/adapters/workspace/index.js';
import { findWorkspace } from '../../node-agent/adapters/workspace/index.js';
import { baseEnvironment, doneMarker, startedMarker, type LaunchResult, type TurnLaunch } from '../../node-agent/adapters/sessions/index.js';
import { writeSpec } from '../../node-agent/adapters/sessions/spec.js';
import type { Store } from '../../node-agent/adapters/store/index.js';
import type { EngineDeps } from '../../node-agent/capabilities/context.js';
import type { Scheduler, Timers } from '../../node-agent/kernel/index.js';
import { hostFor, realDeps, type Host } from '../../node-agent/host/index.js';
import { SERVICE_NOT_RUNNING, type Router } from '../../node-agent/host/remote.js';
import { isRegistered, nodePaths, runningNode } from '../../node-agent/host/node/files.js';
import { main as nxcMain } from '../../node-agent/cli/nxc.js';
import { main as nxsMain } from '../../node-agent/cli/nxs.js';
import type { Io } from '../../node-agent/cli/io.js';
import { runScripted, type AgentCall } from './agents.js';
import { openPooled, parkPooled } from './store-pool.js';

export type CliResult = { code: number; stdout: string; stderr: string; json: any };

/**
 * A clock the test moves; every rule that reads time reads this one. Its `timers` are the kernel's Timers
 * port on this clock: a timer armed through them fires when the test moves the clock past it, not before.
 * The time read goes on with the wall clock (processes the tests start see it move), but a timer counts only
 * the test's moves: one armed for 1,000 ms fires at the move that brings them to 1,000, however long the
 * machine took meanwhile.
 */
export class TestClock {
  private offset = 0;
  private armed: Array<{ due: number; fn: () => void }> = [];
  now = (): Date => new Date(Date.now() + this.offset);
  advance(ms: number): void {
    this.offset += ms;
    // Earliest first; a timer armed by one that fires waits for the next move.
    const due = this.armed.filter((t) => t.due <= this.offset).sort((a, b) => a.due - b.due);
    this.armed = this.armed.filter((t) => t.due > this.offset);
    for (const t of due) t.fn();
  }
  readonly timers: Timers = {
    now: () => this.now().getTime(),
    after: (ms, fn) => {
      const timer = { due: this.offset + Math.max(0, ms), fn };
      this.armed.push(timer);
      return { cancel: () => void (this.armed = this.armed.filter((t) => t !== timer)) };
    },
  };
  /** Timers armed and not yet fired or cancelled. */
  get pendingTimers(): number {
    return this.armed.length;
  }
}

type Running = { pid: number; session: string; turn: number; deadline: number | null; stop: AbortController; done: Promise<void> };

/** Where a persona's runtime command names the fixture agent: `[node, agent.mjs, mode, arg?]`. */
function scriptOf(command: readonly string[]): { mode: string; arg: string } | null {
  const i = command.findIndex((c) => c.endsWith('agent.mjs'));
  if (i < 0) return null;
  return { mode: command[i + 1] ?? 'reply', arg: command[i + 2] ?? '' };
}

let nextPid = 1_000_000_000;

/** One workspace served in this process; the engine's Scheduler here only records the instants asked for. */
export class InProcessWorkspace implements Scheduler {
  private store: Store | null = null;
  private host: Host | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly running = new Map<number, Running>();
  private settling = 0;
  private closing = false;
  /** The environment of the command being served: a session commissioned now starts from it. */
  private commandEnv: NodeJS.ProcessEnv = {};
  private watch: NodeJS.Timeout | null = null;
  /** Engine dependencies a test replaces before the first command (e.g. a worker that cannot tell liveness). */
  overrides: Partial<EngineDeps> = {};
  /**
   * The stamp of the workspace's store as its template copy left it (see store-pool.ts), when the workspace is
   * new: an emptied store kept open from an earlier test may take its place at the first command.
   */
  pristine: number | null = null;
  /** The instants the engine asked a tick for (a node would set a timer for each); tests run `nxc tick` themselves. */
  readonly scheduledTicks: number[] = [];

  constructor(
    readonly workspace: Workspace,
    readonly clock: TestClock,
    /** The environment every CLI call and session starts from (NEXUS_HOME, PATH...). */
    readonly env: Record<string, string>,
    readonly agentLog: string,
  ) {}

  schedule(at: number): void {
    this.scheduledTicks.push(at);
  }

  /** Runs `fn` with this workspace's engine, after every command queued before it. */
  serve<T>(fn: (host: Host) => Promise<T>): Promise<T> {
    const next = this.queue.then(async () => {
      if (this.host === null) {
        // As a node does: git forks from a small helper, not from this worker once it holds stores.
        useProcessHelper();
        this.store = await openPooled(this.workspace.paths.store, { purpose: 'the test host', pristine: this.pristine });
        this.pristine = null;
        this.host = hostFor(
          realDeps(this.workspace, this.store.db, {
            now: this.clock.now,
            launch: (t) => this.launch(t),
            baseEnv: () => baseEnvironment(this.commandEnv),
            alive: (pid) => this.running.has(pid),
            // A withdrawal stops a turn as its supervisor would on SIGTERM: it ends and reports.
            stopSession: (proc) => {
              if (proc.sidecarPid !== null) this.running.get(proc.sidecarPid)?.stop.abort('stopped');
            },
            scheduleTick: (at) => this.schedule(at),
            stop: (pid) => this.running.get(pid)?.stop.abort('stopped'),
            ...this.overrides,
          }, this.env),
        );
      }
      return fn(this.host);
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Runs `fn` on the open store, in the workspace's queue (a node would do the same). */
  withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
    return this.serve(() => fn(this.store!));
  }

  /** As the real router does without a node: direct, with service_not_running while registered and no node runs. */
  readonly route: Router = async (ws, fn, env) => {
    const paths = nodePaths(env['NEXUS_HOME'] ? env['NEXUS_HOME'] : undefined);
    const unserved = isRegistered(paths, ws.id) && runningNode(paths) === null;
    const result = await this.serve((h) => {
      this.commandEnv = env;
      return fn(h.run);
    });
    return { result, via: 'direct', serviceWarning: unserved ? SERVICE_NOT_RUNNING : null };
  };

  /** Runs `nxc` or `nxs` in this process, as a person at a terminal (or a session) would. */
  cli(bin: 'nxc' | 'nxs', args: string[], opts: { env?: Record<string, string | undefined>; input?: string; cwd?: string } = {}): Promise<CliResult> {
    const env: NodeJS.ProcessEnv = { ...this.env };
    for (const [k, v] of Object.entries(opts.env ?? {})) {
      if (v === undefined) delete env[k];
      else env[k] = v;
    }
    return runMain(bin, args, { env, cwd: opts.cwd ?? this.workspace.paths.root, input: opts.input ?? '', route: this.route });
  }

  /** Starts a turn: writes its spec and prompt as the real launcher does, then runs its script soon after. */
  private async launch(t: TurnLaunch): Promise<LaunchResult> {
    const { spec, dir } = t;
    writeSpec(dir, spec, t.prompt);
    writeFileSync(startedMarker(dir, spec.turn), new Date().toISOString() + '\n');
    const script = scriptOf(spec.declaration.command);
    if (this.closing) {
      const error = 'the test host is closing';
      writeFileSync(doneMarker(dir, spec.turn), JSON.stringify({ error }) + '\n');
      return { sidecarPid: -1, runtimePid: null, error };
    }
    if (script === null) {
      const error = `the runtime ${JSON.stringify(spec.declaration.command[0])} could not be started: the test host runs scripted agents only`;
      writeFileSync(doneMarker(dir, spec.turn), JSON.stringify({ error }) + '\n');
      return { sidecarPid: -1, runtimePid: null, error };
    }
    const pid = nextPid++;
    const stop = new AbortController();
    const timeout = spec.declaration.timeout_ms;
    const entry: Running = { pid, session: spec.session, turn: spec.turn, deadline: timeout === null ? null : this.clock.now().getTime() + timeout, stop, done: Promise.resolve() };
    this.running.set(pid, entry);
    // A turn's supervisor stops it at its deadline: the clock runs with real time too, so look often.
    this.watch ??= setInterval(() => this.enforceDeadlines(), 25);
    entry.done = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.runTurn(entry, spec, t.prompt, script));
    return { sidecarPid: pid, runtimePid: pid, error: null };
  }

  private async runTurn(entry: Running, spec: TurnLaunch['spec'], prompt: string, script: { mode: string; arg: string }): Promise<void> {
    const sessionEnv = { ...(spec.base_env ?? this.env), ...spec.env };
    const sleep = (ms: number) =>
      new Promise<void>((resolve, reject) => {
        if (entry.stop.signal.aborted) return reject(entry.stop.signal.reason);
        const onAbort = () => (clearTimeout(timer), reject(entry.stop.signal.reason));
        // The listener goes with the timer: a script that polls must not pile listeners on the signal.
        const timer = setTimeout(() => (entry.stop.signal.removeEventListener('abort', onAbort), resolve()), ms);
        entry.stop.signal.addEventListener('abort', onAbort, { once: true });
      });
    const nxc = async (args: string[], extraEnv: Record<string, string> = {}, unset: string[] = []): Promise<AgentCall> => {
      const env: Record<string, string | undefined> = { ...spec.env, ...extraEnv };
      for (const k of unset) env[k] = undefined;
      const r = await this.cli('nxc', [...args, '--json'], { env, cwd: spec.workspace_dir });
      return { code: r.code, out: r.json };
    };
    let exitCode: number | null = 0;
    let signal: string | null = null;
    // The transcript, as a sidecar writes it: the runtime's output, mode 600.
    const transcript = (text: string) => appendFileSync(spec.transcript_file, text, { mode: 0o600 });
    transcript(`agent ${script.mode} turn ${spec.turn} of ${spec.handle}\n`);
    try {
      exitCode = await runScripted({ ...script, env: sessionEnv, prompt, nxc, sleep, signal: entry.stop.signal, log: this.agentLog, transcript });
    } catch {
      if (entry.stop.signal.aborted) {
        exitCode = null;
        signal = 'SIGTERM';
      } else exitCode = 1;
    }
    const timedOut = entry.stop.signal.aborted && entry.stop.signal.reason === 'timeout';
    // A crash leaves no report: the next look settles the turn as lost.
    if (entry.stop.signal.aborted && entry.stop.signal.reason === 'crash') return;
    // Like a sidecar, the turn's pid stays alive until its end is reported, so no reap takes it for a crash.
    this.settling++;
    try {
      const end = { session: spec.session, turn: spec.turn, exitCode, signal, timedOut };
      const result = await this.serve((h) => h.run('turns.finish', end));
      writeFileSync(doneMarker(join(this.workspace.paths.sessions, spec.session), spec.turn), JSON.stringify({ ...end, ...result, via: 'direct' }) + '\n');
    } finally {
      this.running.delete(entry.pid);
      this.settling--;
    }
  }

  /** Moves the clock; a turn whose declared timeout has passed is stopped, as its supervisor would. */
  advance(ms: number): void {
    this.clock.advance(ms);
    this.enforceDeadlines();
  }

  private enforceDeadlines(): void {
    const now = this.clock.now().getTime();
    for (const r of this.running.values()) if (r.deadline !== null && now >= r.deadline && !r.stop.signal.aborted) r.stop.abort('timeout');
    if (this.running.size === 0 && this.watch !== null) {
      clearInterval(this.watch);
      this.watch = null;
    }
  }

  /** Stops a running turn as a crash would: no report; the next command that looks settles it. */
  crash(pid: number): void {
    const r = this.running.get(pid);
    if (!r) return;
    this.running.delete(pid);
    r.stop.abort('crash');
  }

  runningPids(): number[] {
    return [...this.running.keys()];
  }

  /** Waits until no session turn runs and every command has been taken. */
  async waitIdle(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const pending = [...this.running.values()].map((r) => r.done);
      if (pending.length === 0 && this.settling === 0) {
        await this.queue;
        if (this.running.size === 0 && this.settling === 0) return;
        continue;
      }
      if (Date.now() > deadline) throw new Error(`sessions still running after ${timeoutMs} ms`);
      await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 50))]);
    }
  }

  /** Stops every running turn and closes the store. */
  close(): Promise<void> {
    return this.stop((store) => store.close());
  }

  /** As `close`, at the end of a test whose workspace is removed next: the store is emptied and kept open for another. */
  release(): Promise<void> {
    return this.stop(parkPooled);
  }

  private async stop(end: (store: Store) => Promise<void>): Promise<void> {
    this.closing = true;
    while (this.running.size > 0 || this.settling > 0) {
      for (const r of this.running.values()) r.stop.abort('closing');
      await Promise.allSettled([...this.running.values()].map((r) => r.done));
      await this.queue;
    }
    if (this.watch !== null) clearInterval(this.watch);
    this.watch = null;
    await this.queue;
    const store = this.store;
    this.store = null;
    this.host = null;
    if (store !== null) await end(store);
  }
}

/**
 * Runs the real `nxc`/`nxs` main in this process with `env` and `cwd` as a command's own. Without
 * `route` a command takes the product's way (the node's socket when a node serves the workspace, the
 * store opened here otherwise): the binary's path, less the process start.
 */
export async function runMain(bin: 'nxc' | 'nxs', args: string[], opts: { env: NodeJS.ProcessEnv; cwd: string; input?: string; route?: Router }): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const io: Io = {
    argv: args,
    env: opts.env,
    cwd: opts.cwd,
    stdout: (s) => void (stdout += s),
    stderr: (s) => void (stderr += s),
    readStdin: async () => opts.input ?? '',
    stdinIsTty: false,
    ...(opts.route ? { route: opts.route } : {}),
  };
  const code = await (bin === 'nxc' ? nxcMain(io) : nxsMain(io));
  let json: any = null;
  try {
    json = JSON.parse(stdout);
  } catch {
    /* not JSON */
  }
  return { code, stdout, stderr, json };
}

/** Finds the workspace at `root` and serves it in this process. */
export function serveInProcess(root: string, env: Record<string, string>, agentLog: string, clock = new TestClock()): InProcessWorkspace {
  return new InProcessWorkspace(findWorkspace(root, env), clock, env, agentLog);
}
