// The sidecar: runs one session turn's runtime process, and reports the turn's end to the engine.
import { spawn } from 'node:child_process';
import { fchmodSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { NexusError } from '../../protocol/errors.js';
import { routed } from '../host/remote.js';
import { packageRoot } from '../paths.js';
import { baseEnvironment, doneMarker, PID_NAMESPACE_VARIABLE, pidNamespace, SessionSpecSchema } from '../adapters/sessions/index.js';
import { findWorkspace } from '../adapters/workspace/index.js';
import { loadPersona } from '../adapters/personas/index.js';
import { SESSION_SOCKET_VARIABLE, turnSandbox, type TurnSandbox } from '../adapters/sandbox/index.js';
import { isNexusError } from '../../protocol/errors.js';
import { RUNTIME_PROGRAM } from '../../protocol/persona.js';
import { serveSession } from './session-socket.js';

/** After a stop request, how long the runtime gets before it is killed outright. */
const KILL_GRACE_MS = 5_000;

function report(line: object): void {
  try {
    process.stdout.write(JSON.stringify(line) + '\n');
  } catch {
    // The launcher may already have gone; the turn goes on without it.
  }
}

/** How long a sidecar keeps trying to report its turn's end before leaving it to the node's ticker. */
const SETTLE_GIVE_UP_MS = 5 * 60_000;

/**
 * Reports the turn's end, retrying any failure with backoff and jitter: a store held by a slow
 * command, a node restarting, a transient store error. Each failure is logged (this process's stderr
 * is the turn's sidecar log). If it never gets through, it exits and the node's ticker (or the next
 * command) settles the turn, since this pid is then gone.
 */
async function settle(specDir: string, end: { session: string; turn: number; exitCode: number | null; signal: string | null; timedOut: boolean }, workspaceDir: string) {
  const ws = findWorkspace(workspaceDir, { NXC_WORKSPACE_DIR: workspaceDir });
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      const { result, via } = await routed(ws, (run) => run('turns.finish', end), process.env);
      writeFileSync(doneMarker(specDir, end.turn), JSON.stringify({ ...end, ...result, via, at: new Date().toISOString() }) + '\n');
      return;
    } catch (err) {
      const code = err instanceof NexusError ? err.code : 'INTERNAL';
      process.stderr.write(`${new Date().toISOString()} sidecar: reporting the end of turn ${end.turn} failed (attempt ${attempt}, ${code}): ${err instanceof Error ? err.message : String(err)}\n`);
      if (Date.now() - started > SETTLE_GIVE_UP_MS) throw err;
      const backoff = Math.min(30_000, 250 * 2 ** Math.min(attempt, 7));
      await new Promise((r) => setTimeout(r, backoff / 2 + Math.random() * (backoff / 2)));
    }
  }
}

async function main(): Promise<void> {
  const specFile = process.argv[2];
  if (!specFile) throw new TypeError('usage: sidecar <spec.json>');
  const spec = SessionSpecSchema.parse(JSON.parse(readFileSync(specFile, 'utf8')));
  const dir = dirname(specFile);
  const prompt = readFileSync(spec.prompt_file, 'utf8');
  const transcript = openSync(spec.transcript_file, 'a', 0o600);
  // The transcript holds raw tool inputs and results; its mode is the only boundary around it, even
  // for a file that was already there.
  fchmodSync(transcript, 0o600);
  const [command, ...args] = spec.declaration.command;
  const base = spec.base_env ?? baseEnvironment(process.env);
  // Sessions reach `nxc` through PATH, so the installed package's bin comes first. Their commands learn
  // which PID namespace the sessions' pids belong to, so one run inside a sandbox's own namespace takes nobody for dead.
  const ns = pidNamespace();
  let env: Record<string, string> = { ...base, ...spec.env, PATH: [join(packageRoot(), 'bin'), base['PATH'] ?? ''].join(delimiter), ...(ns === null ? {} : { [PID_NAMESPACE_VARIABLE]: ns }) };
  // The turn's credential: a socket only its sandbox holds, answering every nxc verb as this session.
  const session = await serveSession({ workspaceDir: spec.workspace_dir, env: spec.env, base, nexusHome: process.env['NEXUS_HOME'] || undefined });
  // What the sandbox honours of the persona (network, write paths) is read from the declaration the engine planned with;
  // what it may write at all follows the engine's own reading (tools, permissions) in the spec.
  const persona = await loadPersona(spec.workspace_dir, spec.role).catch(() => null);
  const declared = persona !== null && persona.hash === spec.declaration.hash ? persona : null;
  const ownRuntime = command === RUNTIME_PROGRAM && args.length === 0 && declared !== null && 'kind' in declared.runtime;
  let box: TurnSandbox;
  try {
    box = turnSandbox({
      workspaceDir: spec.workspace_dir,
      sessionDir: dir,
      persona: {
        tools: spec.declaration.tools ?? undefined,
        permissions: spec.declaration.permissions as 'default',
        runtime: declared?.runtime ?? { command: spec.declaration.command },
        ...(declared?.network === undefined ? {} : { network: declared.network }),
        ...(declared?.sandbox === undefined ? {} : { sandbox: declared.sandbox }),
      },
      env: base,
      socket: session.path,
    });
  } catch (err) {
    await session.close();
    report({ error: isNexusError(err) ? `${err.code}: ${err.message}` : `the sandbox could not be decided: ${String(err)}` });
    return;
  }
  let argv = [command!, ...args];
  if (box.on && ownRuntime) {
    // The package's runtime stays outside (it holds the provider key and posts the answer) and puts what it runs inside.
    env[SESSION_SOCKET_VARIABLE] = session.path;
  } else if (box.on) {
    try {
      // A host list's filtering proxy: this process runs it for the turn, outside the sandbox.
      await box.start();
    } catch (err) {
      await box.close();
      await session.close();
      report({ error: `the network proxy for the turn could not be started: ${err instanceof Error ? err.message : String(err)}` });
      return;
    }
    argv = box.wrap(argv, spec.workspace_dir);
    env = box.env(env);
  }
  const child = spawn(argv[0]!, argv.slice(1), { cwd: spec.workspace_dir, env, stdio: ['pipe', transcript, transcript], detached: true });
  let timedOut = false;
  let stopping = false;
  const stop = () => {
    if (stopping || child.pid === undefined) return;
    stopping = true;
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
    setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, KILL_GRACE_MS).unref();
  };
  const started = await new Promise<boolean>((resolve) => {
    child.once('spawn', () => resolve(true));
    child.once('error', (err) => {
      report({ error: `the runtime ${JSON.stringify(command)} could not be started: ${err.message}` });
      resolve(false);
    });
  });
  if (!started) {
    if (box.on) await box.close();
    await session.close();
    return;
  }
  report({ runtime_pid: child.pid });
  child.stdin?.on('error', () => undefined);
  child.stdin?.end(prompt);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  if (spec.declaration.timeout_ms !== null) {
    setTimeout(() => {
      timedOut = true;
      stop();
    }, spec.declaration.timeout_ms).unref();
  }
  const [exitCode, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (code, sig) => resolve([code, sig])),
  );
  if (box.on) await box.close();
  await session.close();
  await settle(dir, { session: spec.session, turn: spec.turn, exitCode, signal, timedOut }, spec.workspace_dir);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`sidecar: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
