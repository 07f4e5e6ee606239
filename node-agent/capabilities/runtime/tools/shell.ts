// The Bash tool: one command in its own process group, so cancellation stops everything it started.
import { spawn } from 'node:child_process';

/** Kept in memory at most; the rest of a runaway output is dropped and said so. */
const MAX_CAPTURE_BYTES = 8 * 1024 * 1024;
/** After SIGTERM, how long a command gets before SIGKILL. */
const KILL_GRACE_MS = 2_000;

export type ShellResult = { exitCode: number | null; signal: string | null; output: string; stopped: boolean };

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/** Runs `command` with bash in `cwd`. An abort stops its whole process group (TERM, then KILL). */
export function runShell(command: string, cwd: string, env: NodeJS.ProcessEnv, signal: AbortSignal): Promise<ShellResult> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      resolve({ exitCode: null, signal: null, output: '', stopped: true });
      return;
    }
    const child = spawn('bash', ['-c', command], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let size = 0;
    let dropped = 0;
    let stopped = false;
    let killTimer: NodeJS.Timeout | undefined;
    const take = (c: Buffer) => {
      if (size >= MAX_CAPTURE_BYTES) {
        dropped += c.length;
        return;
      }
      chunks.push(c);
      size += c.length;
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    const onAbort = () => {
      stopped = true;
      if (child.pid === undefined) return;
      killGroup(child.pid, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(child.pid!, 'SIGKILL'), KILL_GRACE_MS);
      killTimer.unref();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    child.once('error', (err) => {
      signal.removeEventListener('abort', onAbort);
      reject(err);
    });
    child.once('close', (code, sig) => {
      signal.removeEventListener('abort', onAbort);
      if (killTimer) clearTimeout(killTimer);
      let output = Buffer.concat(chunks).toString('utf8');
      if (dropped > 0) output += `\n(${dropped} more bytes of output were dropped)`;
      resolve({ exitCode: code, signal: sig, output, stopped });
    });
  });
}

export function describeShell(r: ShellResult): string {
  const head = r.stopped ? 'stopped: the run was cancelled or ran out of time' : r.signal !== null ? `killed by ${r.signal}` : `exit code ${r.exitCode}`;
  return r.output === '' ? head : `${head}\n${r.output}`;
}
