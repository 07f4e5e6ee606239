// The sidecar: runs one session turn's runtime process, and reports the turn's end to the engine.
import { spawn } from 'node:child_process';
import { fchmodSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { NexusError } from '../../protocol/errors.js';
import { routed } from '../host/remote.js';
import { packageRoot } from '../paths.js';
import { baseEnvironment, doneMarker, SessionSpecSchema } from '../adapters/sessions/index.js';
import { findWorkspace } from '../adapters/workspace/index.js';

/** After a stop request, how long the runtime gets before it is killed outright. */
const KILL_GRACE_MS = 5_000;

function report(line: object): void {
  try {
    process.stdout.write(JSON.stringify(line) + '\n');
  } catch {
    // The launcher may already have gone; the turn goes on without it.
  }
}

async function settle(specDir: string, end: { session: string; turn: number; exitCode: number | null; signal: string | null; timedOut: boolean }, workspaceDir: string) {
  const ws = findWorkspace(workspaceDir, { NXC_WORKSPACE_DIR: workspaceDir });
  for (let attempt = 1; ; attempt++) {
    try {
      const { result, via } = await routed(ws, (run) => run('turns.finish', end), process.env);
      writeFileSync(doneMarker(specDir, end.turn), JSON.stringify({ ...end, ...result, via, at: new Date().toISOString() }) + '\n');
      return;
    } catch (err) {
      if (!(err instanceof NexusError && err.code === 'STORE_BUSY') || attempt >= 10) throw err;
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
  const base = baseEnvironment(process.env);
  // Sessions reach `nxc` through PATH, so the installed package's bin comes first.
  const env = { ...base, ...spec.env, PATH: [join(packageRoot(), 'bin'), base['PATH'] ?? ''].join(delimiter) };
  const child = spawn(command!, args, { cwd: spec.workspace_dir, env, stdio: ['pipe', transcript, transcript], detached: true });
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
  if (!started) return;
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
  await settle(dir, { session: spec.session, turn: spec.turn, exitCode, signal, timedOut }, spec.workspace_dir);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`sidecar: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
