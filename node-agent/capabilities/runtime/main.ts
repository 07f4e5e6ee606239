// The process a session turn starts for runtime: builtin, claude-code or codex (`nxs-runtime [--resume] [spec.json]`, prompt on stdin).
import path from 'node:path';
import { loadPersona } from '../../adapters/personas/index.js';
import { workspacePaths } from '../../paths.js';
import { readSpecFile, type SessionSpec } from '../../adapters/sessions/index.js';
import { runA2aTurn } from './a2a.js';
import { SESSION_SOCKET_VARIABLE, turnSandbox } from '../../adapters/sandbox/index.js';
import { runAdapterTurn } from './adapters/turn.js';
import { nxcReply } from './answer.js';
import { runSessionTurn } from './session.js';
import { serveTools } from './tools/index.js';

/** The spec named on the command line, else the turn's own copy in the session folder the environment names. */
function specPath(args: string[], env: NodeJS.ProcessEnv): string {
  if (args[0]) return path.resolve(args[0]);
  const root = env['NXC_WORKSPACE_DIR'];
  const session = env['NXC_SESSION'];
  const turn = env['NXC_TURN'];
  if (!root || !session || !turn) throw new TypeError('usage: nxs-runtime [spec.json] (or NXC_WORKSPACE_DIR, NXC_SESSION and NXC_TURN from a session turn)');
  return path.join(workspacePaths(root).sessions, session, `turn-${turn}.spec.json`);
}

function readStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    let s = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d: string) => (s += d));
    process.stdin.on('end', () => resolve(s));
    process.stdin.on('error', reject);
  });
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  // The turn's sandboxed tool host (tools/host.ts): this same program, started inside the sandbox.
  if (args[0] === '--tool-host') {
    await serveTools(path.resolve(args[1] ?? '.'), Number(args[2] ?? 100_000));
    return 0;
  }
  // --resume continues the turn's journal (a runtime restarted after a crash) with the limits and usage it saved.
  const resume = args[0] === '--resume';
  const file = specPath(resume ? args.slice(1) : args, process.env);
  const spec: SessionSpec = readSpecFile(file);
  const prompt = await readStdin();
  const sessionDir = path.dirname(file);
  const answer = nxcReply(spec.thread, process.env);
  // SIGTERM is how the sidecar stops a turn (its timeout, or a stop): the run ends at its next boundary and still reports.
  const cancel = new AbortController();
  const onSignal = () => cancel.abort();
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const persona = await loadPersona(spec.workspace_dir, spec.role).catch(() => null);
  if (persona === null || persona.hash !== spec.declaration.hash) {
    const reply = await answer(`[runtime] ${spec.handle} could not start: its declaration ${spec.declaration.file} changed or vanished after the turn was planned.`, { escalate: true });
    return reply.posted ? 0 : 1;
  }
  const turn = { session: spec.session, turn: spec.turn, thread: spec.thread, role: spec.role, workspace_dir: spec.workspace_dir, written_at: spec.written_at, sessionDir };
  // The supervisor hands the turn's socket over; without one (the workspace declared `sandbox: off`) nothing is wrapped.
  const socket = process.env[SESSION_SOCKET_VARIABLE] || null;
  const sandbox = turnSandbox({ workspaceDir: spec.workspace_dir, sessionDir, persona: { ...persona, tools: spec.declaration.tools ?? undefined }, env: process.env, socket });
  const input = { turn, persona, prompt, env: process.env, answer, signal: cancel.signal, resume, sandbox };
  const runtime = persona.runtime;
  // A host list's filtering proxy runs here, outside the sandbox, for as long as the turn (an A2A turn puts nothing inside).
  const proxied = sandbox.on && !('kind' in runtime && runtime.kind === 'a2a');
  if (proxied) await sandbox.start();
  let outcome;
  try {
    outcome =
      'kind' in runtime && runtime.kind === 'a2a'
        ? await runA2aTurn({ ...input, a2a: runtime.a2a })
        : 'kind' in runtime && runtime.kind !== 'builtin'
          ? await runAdapterTurn({ ...input, kind: runtime.kind })
          : await runSessionTurn(input);
  } finally {
    if (proxied) await sandbox.close();
  }
  const line = { status: outcome.result.status, reason: outcome.result.reason, usage: outcome.result.usage, answer: outcome.answer, state: outcome.files.state };
  process.stdout.write(JSON.stringify(line) + '\n');
  // A refused answer while a round this session commissioned is open is the engine's "waiting": not a failure.
  return outcome.answer.posted || outcome.answer.code === 'SUB_ROUND_OPEN' ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`nxs-runtime: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
