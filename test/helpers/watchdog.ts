// A reporter that ends a run which has stopped moving, and says where it stopped.
//
// vitest's own timeouts fire on a worker's event loop: a worker blocked in a synchronous call, or one
// that stopped answering after its last file, holds the run open with nothing printed until the CI job's
// own limit ends it, silently, an hour or more later. This runs in the vitest process itself. When a
// file has run longer than NEXUS_TEST_FILE_LIMIT_S (default 600 s), or nothing has been reported for
// NEXUS_TEST_STALL_S (default 300 s: past the per-test and per-hook timeouts of 120 s), it prints the
// files and tests still running, every process of the run with its state and what it waits on in the
// kernel, stops them, and exits 1.
import { appendFileSync } from 'node:fs';
import type { Reporter, TestCase, TestModule } from 'vitest/node';
import { carriesMark, liveProcesses, processSeen, TEST_RUN_OWNER_VARIABLE, TEST_RUN_VARIABLE, type ProcessSeen } from './leftovers.js';

const CHECK_MS = 1_000;

function seconds(variable: string, fallback: number): number {
  const raw = process.env[variable];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${variable} must be a positive number of seconds, not ${JSON.stringify(raw)}`);
  return n;
}

/**
 * The processes that belong to this run: every descendant of `root`, and, when this process started the
 * run (its global setup marked it), every process carrying the run's mark (nodes detach from their parent).
 */
export function runProcesses(root: number, env: NodeJS.ProcessEnv = process.env): ProcessSeen[] {
  const all = liveProcesses();
  const run = env[TEST_RUN_OWNER_VARIABLE] === String(root) ? env[TEST_RUN_VARIABLE] : undefined;
  const out = new Map<number, ProcessSeen>();
  for (let found = [root]; found.length > 0; ) {
    const parents = new Set(found);
    found = [];
    for (const p of all) {
      if (!parents.has(p.ppid) || out.has(p.pid)) continue;
      out.set(p.pid, p);
      found.push(p.pid);
    }
  }
  if (run) for (const p of all) if (p.pid !== root && !out.has(p.pid) && carriesMark(p.pid, run)) out.set(p.pid, p);
  return [...out.values()].sort((a, b) => a.pid - b.pid);
}

type Running = { module: TestModule; since: number; tests: Map<string, number> };

export default class Watchdog implements Reporter {
  private readonly fileLimitMs = seconds('NEXUS_TEST_FILE_LIMIT_S', 600) * 1000;
  private readonly stallMs = seconds('NEXUS_TEST_STALL_S', 300) * 1000;
  private readonly files = new Map<string, Running>();
  private lastEvent = Date.now();
  private timer: NodeJS.Timeout | null = null;
  private fired = false;

  onTestRunStart(): void {
    this.lastEvent = Date.now();
    this.timer ??= setInterval(() => this.check(), CHECK_MS);
    // The run's end clears it; a run that never ends is what it is for, so it must not be unref'd.
  }

  onTestRunEnd(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  onTestModuleQueued(module: TestModule): void {
    this.lastEvent = Date.now();
    this.files.set(module.moduleId, { module, since: Date.now(), tests: new Map() });
  }

  onTestModuleCollected(module: TestModule): void {
    this.lastEvent = Date.now();
    // The module as collected, with its tests (the one queued may be a placeholder without them).
    const r = this.files.get(module.moduleId);
    if (r !== undefined) r.module = module;
  }

  onTestModuleEnd(module: TestModule): void {
    this.lastEvent = Date.now();
    this.files.delete(module.moduleId);
  }

  onTestCaseReady(test: TestCase): void {
    this.lastEvent = Date.now();
    this.files.get(test.module.moduleId)?.tests.set(test.fullName, Date.now());
    // For the watchdog's own test: its fixture blocks its worker only once this process knows the test started.
    const seen = process.env['NEXUS_TEST_WATCHDOG_SEEN'];
    if (seen) appendFileSync(seen, test.fullName + '\n');
  }

  onTestCaseResult(test: TestCase): void {
    this.lastEvent = Date.now();
    this.files.get(test.module.moduleId)?.tests.delete(test.fullName);
  }

  onHookStart(): void {
    this.lastEvent = Date.now();
  }

  onHookEnd(): void {
    this.lastEvent = Date.now();
  }

  private check(): void {
    if (this.fired) return;
    const now = Date.now();
    const late = [...this.files].filter(([, r]) => now - r.since > this.fileLimitMs);
    const quiet = now - this.lastEvent > this.stallMs;
    if (late.length === 0 && !quiet) return;
    this.fired = true;
    void this.stop(
      late.length > 0
        ? `${late.map(([f]) => relative(f)).join(', ')} ran past the limit of ${this.fileLimitMs / 1000} s per file (NEXUS_TEST_FILE_LIMIT_S)`
        : `nothing was reported for ${Math.round((now - this.lastEvent) / 1000)} s (NEXUS_TEST_STALL_S=${this.stallMs / 1000})`,
    );
  }

  private async stop(why: string): Promise<void> {
    const now = Date.now();
    const out = (line: string) => process.stderr.write(line + '\n');
    out(`\n!!! the test run stopped moving: ${why}.`);
    if (this.files.size === 0) out('  every file has ended; the run waits on its workers.');
    for (const [file, r] of this.files) {
      out(`  ${relative(file)}: running for ${Math.round((now - r.since) / 1000)} s`);
      for (const [name, since] of r.tests) out(`    test "${name}": running for ${Math.round((now - since) / 1000)} s`);
      // A worker sends its tests' starts on a 100 ms throttle whose trailing call can be lost (vitest 4.1),
      // and a loop that blocks stops them going out at all: the first test of the file with no result is
      // then named instead.
      if (r.tests.size === 0) {
        const pending = [...r.module.children.allTests()].find((t) => t.result().state === 'pending');
        if (pending !== undefined) out(`    test "${pending.fullName}": not finished (its start was not reported)`);
      }
    }
    const procs = runProcesses(process.pid);
    out(procs.length === 0 ? '  no process of the run is left.' : "  the run's processes (state, kernel wait, command):");
    for (const p of procs) out(`    pid ${p.pid} (parent ${p.ppid}) ${p.state} ${p.wchan}: ${p.command.slice(0, 300)}`);
    // Where each vitest worker's JavaScript stands, one worker at a time (they would share the inspector's port).
    // The inspector listens on loopback for that moment, where another user of the machine could reach it:
    // NEXUS_TEST_STACKS=0 goes without the stacks.
    const workers = process.env['NEXUS_TEST_STACKS'] === '0' ? [] : procs.filter((q) => /[/\\]vitest[/\\]dist[/\\]workers[/\\]/.test(q.command));
    for (const p of workers) {
      const stack = await javascriptStack(p.pid);
      out(`  worker ${p.pid}, its JavaScript ${stack === null ? 'did not pause within 3 s (it waits in the kernel, or has no inspector)' : 'stands at:'}`);
      for (const frame of stack ?? []) out(`    at ${frame}`);
      kill(p.pid);
      await gone(p.pid, 2_000);
    }
    out('  they are stopped now, and the run fails.\n');
    for (const p of procs) kill(p.pid);
    process.exit(1);
  }
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* gone already */
  }
}

async function gone(pid: number, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline && processSeen(pid) !== null) await new Promise((r) => setTimeout(r, 50));
}

/**
 * The JavaScript stack of a Node process, taken through its inspector: SIGUSR1 opens it on the default
 * port, and a pause, which V8 delivers between any two instructions, reports the frames. A process
 * blocked inside a system call cannot pause until the call returns: null after `waitMs`.
 */
export async function javascriptStack(pid: number, waitMs = 3_000): Promise<string[] | null> {
  const deadline = Date.now() + waitMs;
  try {
    process.kill(pid, 'SIGUSR1');
  } catch {
    return null;
  }
  let url: string | undefined;
  while (url === undefined && Date.now() < deadline) {
    try {
      const list = (await (await fetch('http://127.0.0.1:9229/json/list', { signal: AbortSignal.timeout(500) })).json()) as { webSocketDebuggerUrl?: string }[];
      url = list[0]?.webSocketDebuggerUrl;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  if (url === undefined) return null;
  const { WebSocket } = await import('ws');
  const socket = new WebSocket(url);
  try {
    return await new Promise<string[] | null>((done) => {
      const timer = setTimeout(() => done(null), Math.max(0, deadline - Date.now()));
      socket.on('error', () => done(null));
      socket.on('open', () => {
        socket.send(JSON.stringify({ id: 1, method: 'Debugger.enable' }));
        socket.send(JSON.stringify({ id: 2, method: 'Debugger.pause' }));
      });
      // A frame names its script by id; the scripts are announced, with their URLs, as the debugger is enabled.
      const scripts = new Map<string, string>();
      socket.on('message', (data) => {
        const message = JSON.parse(String(data)) as { method?: string; params?: { scriptId?: string; url?: string; callFrames?: Frame[] } };
        if (message.method === 'Debugger.scriptParsed' && message.params?.scriptId !== undefined) scripts.set(message.params.scriptId, message.params.url ?? '');
        if (message.method !== 'Debugger.paused') return;
        clearTimeout(timer);
        done((message.params?.callFrames ?? []).slice(0, 20).map((f) => describeFrame(f, scripts.get(f.location.scriptId))));
      });
    });
  } finally {
    socket.terminate();
  }
}

type Frame = { functionName: string; url: string; location: { scriptId: string; lineNumber: number; columnNumber: number } };

function describeFrame(f: Frame, scriptUrl: string | undefined): string {
  return `${f.functionName || '(anonymous)'} (${f.url || scriptUrl || 'unknown'}:${f.location.lineNumber + 1}:${f.location.columnNumber + 1})`;
}

function relative(file: string): string {
  const at = file.lastIndexOf('/test/');
  return at < 0 ? file : file.slice(at + 1);
}
