// Runs short-lived programs (git, above all) and hands back what they printed.
//
// Why a helper process: starting a program from Node forks the calling process first. A process that holds a
// PGlite store maps hundreds of megabytes, and forking it costs ~30 ms of blocked main thread and kernel time
// (measured: 4 ms per `git --version` from a bare process, 33 ms from one holding a store), before the copy-on-
// write faults that follow. A node reads its working copy on every message, so that cost lands on every message.
// The helper is a small Node process started once; it forks from its own small footprint and answers over IPC.
import { execFile, fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from './package.js';

export type RunFileRequest = {
  file: string;
  args: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Bytes for the program's stdin (closed at once when absent). */
  input?: Buffer;
  timeoutMs: number;
  maxBuffer: number;
};

export type RunFileResult = {
  stdout: Buffer;
  stderr: Buffer;
  /** The exit code; null when the program was killed by a signal or never ran. */
  exitCode: number | null;
  /** Node's error code when the program could not run or its output overflowed (`ENOENT`, `ERR_CHILD_PROCESS_STDIO_MAXBUFFER`...). */
  errorCode: string | undefined;
  /** Stopped at its timeout. */
  killed: boolean;
};

/** What a request's promise resolves with when the helper exits before answering it. */
export const HELPER_GONE = 'ERR_PROCESS_HELPER_EXITED';

/** Runs `req` from this process: the fork happens here. `started` hears the program's process once it is made. */
export function runFileHere(req: RunFileRequest, started?: (child: ChildProcess) => void): Promise<RunFileResult> {
  return new Promise((resolve) => {
    const child = execFile(
      req.file,
      [...req.args],
      { cwd: req.cwd, env: req.env, encoding: 'buffer', maxBuffer: req.maxBuffer, timeout: req.timeoutMs, windowsHide: true },
      (error, stdout, stderr) => {
        const err = error as (NodeJS.ErrnoException & { killed?: boolean; code?: number | string }) | null;
        resolve({
          stdout,
          stderr,
          exitCode: err === null ? 0 : typeof err.code === 'number' ? err.code : null,
          errorCode: typeof err?.code === 'string' ? err.code : undefined,
          killed: err?.killed ?? false,
        });
      },
    );
    started?.(child);
    // A program may exit before reading all of stdin; that shows in its exit, not as a pipe error.
    child.stdin?.on('error', () => {});
    child.stdin?.end(req.input ?? Buffer.alloc(0));
  });
}

/** What the helper sends: a program's pid once it runs, then what it did. */
export type HelperMessage = { id: number; pid: number } | ({ id: number } & RunFileResult);

/** `pid`: the program's, once the helper said it runs; it is stopped if the helper goes first. */
type Pending = { resolve: (r: RunFileResult) => void; pid: number | null };
type Helper = { child: ChildProcess; pending: Map<number, Pending> };

let enabled = false;
let helper: Helper | null = null;
let unavailable = false;
let nextId = 1;

/** The helper's script: it ships built, beside this file's compiled copy. */
function helperScript(): string {
  return join(packageRoot(), 'dist', 'infra', 'spawner-child.js');
}

/**
 * From now on, programs run through the helper process (started now, so its own fork happens before
 * the caller grows). For long-lived processes that hold a store: the node, a test host. A one-shot
 * command would pay the helper's start for nothing and keeps forking here.
 */
export function useProcessHelper(): void {
  enabled = true;
  start();
}

/** Runs `req` through the helper when one is in use and can run, from this process otherwise. */
export function runFile(req: RunFileRequest): Promise<RunFileResult> {
  const h = enabled ? (helper ?? start()) : null;
  if (h === null) return runFileHere(req);
  const id = nextId++;
  return new Promise((resolve) => {
    h.pending.set(id, { resolve, pid: null });
    if (h.pending.size === 1) h.child.channel?.ref();
    h.child.send({ id, ...req, args: [...req.args] });
  });
}

function start(): Helper | null {
  if (helper !== null) return helper;
  if (unavailable) return null;
  const script = helperScript();
  if (!existsSync(script)) {
    // Run from source before a build: everything still works, forking here.
    unavailable = true;
    return null;
  }
  // Its own environment is bare: each request carries the one its program runs with.
  const child = fork(script, [], {
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    execArgv: [],
    env: { PATH: process.env['PATH'] ?? '' },
  });
  const h: Helper = { child, pending: new Map() };
  child.on('message', (m: HelperMessage) => {
    const p = h.pending.get(m.id);
    if (p === undefined) return;
    if ('pid' in m) return void (p.pid = m.pid);
    const { id, ...r } = m;
    h.pending.delete(id);
    if (h.pending.size === 0) child.channel?.unref();
    p.resolve({ ...r, stdout: asBuffer(r.stdout), stderr: asBuffer(r.stderr) });
  });
  const gone = () => {
    if (helper === h) helper = null;
    for (const p of h.pending.values()) {
      // A program the helper still ran would live on with no one to wait for it (a helper killed outright
      // cannot stop it itself): stopped here, as its answer is given up.
      if (p.pid !== null) stopProgram(p.pid);
      p.resolve({ stdout: Buffer.alloc(0), stderr: Buffer.from('the process helper exited before the program finished\n'), exitCode: null, errorCode: HELPER_GONE, killed: false });
    }
    h.pending.clear();
  };
  child.on('exit', gone);
  child.on('error', gone);
  // Idle, the helper never keeps this process alive; it exits itself when this process goes.
  child.unref();
  child.channel?.unref();
  helper = h;
  return h;
}

/**
 * SIGTERM to a program whose answer nobody waits for any more, when it is still there. Not SIGKILL: git
 * removes its lock files (`index.lock`, a ref's `.lock`) on SIGTERM, and one killed outright would leave
 * them to refuse every later call on that repository.
 */
export function stopProgram(pid: number): void {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    // It ended already.
  }
}

/** Structured clone hands Buffers over as plain Uint8Arrays. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The helper's pid while one runs (the tests look at it). */
export function processHelperPid(): number | null {
  return helper?.child.pid ?? null;
}

/** Stops the helper (tests; a process that wants it gone before it exits). Pending requests resolve with HELPER_GONE. */
export function stopProcessHelper(): void {
  helper?.child.kill();
  helper = null;
  enabled = false;
}
