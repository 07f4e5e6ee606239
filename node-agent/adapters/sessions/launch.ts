// Starts a session turn: a detached sidecar process that runs the persona's runtime and reports its end.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../paths.js';
import { writeSpec, type SessionSpec } from './spec.js';
import { NexusError } from '../../../protocol/errors.js';
import { workspacePaths } from '../../paths.js';
import { bwrapWorks, INSTALL_HINT } from '../sandbox/index.js';
import { declaredSandbox } from '../workspace/index.js';

export type TurnLaunch = { spec: SessionSpec; prompt: string; dir: string };
/**
 * `code`: why a start was refused, as an error code (SANDBOX_UNAVAILABLE: no sandbox here, and the workspace did not
 * declare `sandbox: off`). `sandboxOff`: the turn started with nothing around it, because the workspace says so.
 */
export type LaunchResult = { sidecarPid: number; runtimePid: number | null; error: string | null; code?: string; sandboxOff?: boolean };

/** Whether this workspace's turns run sandboxed, unsandboxed by declaration, or cannot start. Checked before any process starts. */
export function sandboxReadiness(workspaceDir: string, env: NodeJS.ProcessEnv = process.env): { off: boolean; refusal: NexusError | null } {
  let declared;
  try {
    declared = declaredSandbox(workspacePaths(workspaceDir));
  } catch {
    declared = null; // the sidecar reads the config again and says what is wrong with it
  }
  if (declared === 'off') return { off: true, refusal: null };
  if (process.platform === 'darwin') return { off: false, refusal: null };
  if (process.platform !== 'linux') return { off: false, refusal: new NexusError('SANDBOX_UNAVAILABLE', `sessions run only inside an OS sandbox, and none is known on ${process.platform}; ${INSTALL_HINT}`) };
  const works = bwrapWorks(env);
  return { off: false, refusal: works.ok ? null : new NexusError('SANDBOX_UNAVAILABLE', `sessions run only inside an OS sandbox: ${works.why}. To fix it, ${INSTALL_HINT}`) };
}

/** How long a launch waits for the sidecar to report the runtime's pid. */
const REPORT_TIMEOUT_MS = 15_000;

/** The sidecar to start: its bundle (one file to load at each turn's start), or the compiled module when no bundle was made. */
export function sidecarScript(): string {
  const bundled = join(packageRoot(), 'dist', 'bin', 'sidecar.js');
  return existsSync(bundled) ? bundled : join(packageRoot(), 'dist', 'node-agent', 'cli', 'sidecar.js');
}

/** The environment a session's processes inherit: ours, less any NXC_* identity of the caller. */
export function baseEnvironment(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !k.startsWith('NXC_')) out[k] = v;
  return out;
}

export function startedMarker(dir: string, turn: number): string {
  return join(dir, `turn-${turn}.started`);
}

export function doneMarker(dir: string, turn: number): string {
  return join(dir, `turn-${turn}.done`);
}

/**
 * Writes the turn's spec and prompt, then starts its sidecar detached (it outlives
 * the command that launched it) and waits only for the runtime's pid.
 */
export async function launchTurn(launch: TurnLaunch): Promise<LaunchResult> {
  const { spec, dir } = launch;
  const ready = sandboxReadiness(spec.workspace_dir, spec.base_env ?? process.env);
  if (ready.refusal !== null) return { sidecarPid: -1, runtimePid: null, error: `${ready.refusal.code}: ${ready.refusal.message}`, code: ready.refusal.code };
  const specFile = writeSpec(dir, spec, launch.prompt);
  writeFileSync(startedMarker(dir, spec.turn), new Date().toISOString() + '\n');
  const logFd = openSync(join(dir, `turn-${spec.turn}.sidecar.log`), 'a', 0o600);
  let child;
  try {
    child = spawn(process.execPath, [sidecarScript(), specFile], {
      cwd: spec.workspace_dir,
      detached: true,
      stdio: ['ignore', 'pipe', logFd],
      env: spec.base_env ?? baseEnvironment(),
    });
  } finally {
    closeSync(logFd);
  }
  const sidecarPid = child.pid ?? -1;
  const report = await new Promise<{ runtimePid: number | null; error: string | null }>((resolve) => {
    let buffer = '';
    const timer = setTimeout(() => resolve({ runtimePid: null, error: 'the sidecar did not report in time' }), REPORT_TIMEOUT_MS);
    const done = (r: { runtimePid: number | null; error: string | null }) => {
      clearTimeout(timer);
      resolve(r);
    };
    child.on('error', (err) => done({ runtimePid: null, error: `the sidecar could not start: ${err.message}` }));
    child.on('exit', (code) => done({ runtimePid: null, error: `the sidecar exited early (${code ?? 'signal'})` }));
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      const nl = buffer.indexOf('\n');
      if (nl < 0) return;
      try {
        const msg = JSON.parse(buffer.slice(0, nl)) as { runtime_pid?: number; error?: string };
        done({ runtimePid: msg.runtime_pid ?? null, error: msg.error ?? null });
      } catch {
        done({ runtimePid: null, error: 'the sidecar sent an unreadable report' });
      }
    });
  });
  child.removeAllListeners('exit');
  child.stdout?.destroy();
  child.unref();
  // A turn that never started is over as far as anyone waiting on this folder is concerned.
  if (report.error !== null) writeFileSync(doneMarker(dir, spec.turn), JSON.stringify({ error: report.error }) + '\n');
  return { sidecarPid, ...report, ...(ready.off ? { sandboxOff: true } : {}) };
}

/**
 * Asks a running turn to stop. The sidecar (a process group of its own) takes SIGTERM as "stop": it sends the
 * runtime's process group SIGTERM, then SIGKILL after a grace period, and reports the turn's end. The runtime's
 * group is signalled too, so a turn whose sidecar is gone still stops.
 */
export function stopTurn(proc: { sidecarPid: number | null; runtimePid: number | null }): void {
  for (const pid of [proc.sidecarPid, proc.runtimePid === null ? null : -proc.runtimePid]) {
    if (pid === null || pid === 0 || pid === -1) continue;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // Already gone.
    }
  }
}
