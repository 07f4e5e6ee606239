// The CLI's edge: argument parsing, stdin, output and the mapping of errors to exit codes.
import { guardOutput, outputGone, writeOutput } from '../../infra/index.js';
import { internalError, isNexusError, NexusError } from '../../protocol/errors.js';
import { A2A_CLIENT_PREFIX, isA2aClientHandle } from '../../protocol/a2a.js';
import { defaultPerson, Handle, SessionId } from '../../protocol/ids.js';
import type { CallerClaim } from '../../protocol/commands.js';
import { routed, type DirectOptions, type Router } from '../host/remote.js';
import { parseHopClaim } from '../capabilities/threads/depth.js';
import { paintFor } from './colour.js';
import { readLimited, STDIN_TOO_LARGE } from './stdin.js';
import { terminalSafeJson, visible } from './visible.js';

export { STDIN_LIMIT_BYTES } from './stdin.js';

export type Io = {
  argv: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  readStdin: () => Promise<string>;
  stdinIsTty: boolean;
  /** stderr is a terminal: progress lines are rewritten in place, waits are announced. */
  stderrIsTty?: boolean;
  /** stdout is a terminal: output may be coloured (unless NO_COLOR is set). */
  stdoutIsTty?: boolean;
  /** How commands reach a workspace: through its node or its store (the default), or a host in this process (tests). */
  route?: Router;
  /**
   * The idempotency keys of the commands this verb runs, in order, when they were made before it started:
   * a verb first sent to the node (node-agent/cli/entry.ts) that has to run here after all keeps them, so a
   * command the node applied before it stopped answering is not applied twice.
   */
  requestKeys?: readonly string[];
  /** The node was asked already and did not answer: the verb goes straight to the store (see DirectOptions). */
  nodeUnreachable?: boolean;
};

/** The real process's Io. A reader that goes away (`nxc status | head`) ends nothing loudly: see infra/pipes.ts. */
export function processIo(argv = process.argv.slice(2)): Io {
  guardOutput();
  return {
    argv,
    env: process.env,
    cwd: process.cwd(),
    stdout: (s) => writeOutput('stdout', s),
    stderr: (s) => writeOutput('stderr', s),
    readStdin: () => readAll(process.stdin),
    stdinIsTty: Boolean(process.stdin.isTTY),
    stderrIsTty: Boolean(process.stderr.isTTY),
    stdoutIsTty: Boolean(process.stdout.isTTY),
  };
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const text = await readLimited(stream);
  if (text === null) throw new NexusError('MESSAGE_TOO_LARGE', STDIN_TOO_LARGE);
  return text;
}

/** `readStdin` for stdin already read elsewhere: its text, or null when it held more than the limit (MESSAGE_TOO_LARGE). */
export function givenStdin(text: string | null): () => Promise<string> {
  return async () => {
    if (text === null) throw new NexusError('MESSAGE_TOO_LARGE', STDIN_TOO_LARGE);
    return text;
  };
}

/** The message text: the TEXT argument, or stdin when it is `-` or absent (so a heredoc works). */
export async function messageText(io: Io, positional: string | undefined): Promise<string> {
  if (positional !== undefined && positional !== '-') return positional;
  if (positional === undefined && io.stdinIsTty) {
    throw new NexusError('USAGE', 'no message text: give TEXT, or `-` and the text on stdin');
  }
  return io.readStdin();
}

/** Who is calling, as the environment says. Malformed identity is refused, never guessed around. */
export function callerFromEnv(env: NodeJS.ProcessEnv): CallerClaim {
  const session = env['NXC_SESSION'] ? env['NXC_SESSION'] : null;
  if (session !== null && !SessionId.safeParse(session).success) {
    throw new NexusError('BAD_ENVIRONMENT', `NXC_SESSION=${JSON.stringify(session)} is not a session id`);
  }
  let actor = env['NXC_ACTOR'];
  if (actor !== undefined && actor !== '') {
    // `name@short` is how other workspaces name a person; here a person gives the bare name.
    if (!Handle.safeParse(actor).success || actor.includes('@')) {
      throw new NexusError('BAD_ENVIRONMENT', `NXC_ACTOR=${JSON.stringify(actor)} is not a handle (lowercase letters, digits, . _ -)`);
    }
    // Handles of A2A clients are the bridge's to give: a person claiming one would make their words untrusted, or pass as a client.
    if (isA2aClientHandle(actor)) throw new NexusError('BAD_ENVIRONMENT', `NXC_ACTOR=${JSON.stringify(actor)}: handles beginning ${A2A_CLIENT_PREFIX} name A2A clients`);
  } else {
    // Unset: the login name, when it makes a handle.
    actor = defaultPerson(env);
  }
  return { actor, session, hop: parseHopClaim(env['NXC_HOP']) };
}

/**
 * An outcome that is not a failure but gets its own exit code (`nxc wait`: escalated, timed out). The
 * command has already said what happened; nothing more is printed.
 */
export class Outcome extends Error {
  constructor(readonly exit: number) {
    super(`exit ${exit}`);
    this.name = 'Outcome';
  }
}

/** Runs a command body and turns any failure into its exit code and message (JSON when asked). */
export async function runCommand(io: Io, json: boolean, body: () => Promise<void | number>): Promise<number> {
  try {
    return (await body()) ?? 0;
  } catch (err) {
    if (err instanceof Outcome) return err.exit;
    const e = internalError(err);
    if (!isNexusError(err) && io.env['NEXUS_DEBUG']) io.stderr(`${(err as Error).stack ?? String(err)}\n`);
    // A quiet error has already been reported by the command's own output (e.g. `nxs personas list`
    // lists what is invalid); printing it again would put a second JSON document on stdout.
    if ((err as { quiet?: boolean } | null | undefined)?.quiet === true) return e.exitCode;
    if (json) io.stdout(terminalSafeJson(JSON.stringify({ ok: false, error: e.toJSON() })) + '\n');
    else io.stderr(`${paintFor(io.stderrIsTty, io.env).red(`error ${e.code}`)}: ${visible(e.message)}\n`);
    return e.exitCode;
  }
}

export function printJson(io: Io, value: unknown): void {
  io.stdout(terminalSafeJson(JSON.stringify(value, null, 2)) + '\n');
}

/**
 * The router a command uses: the one the Io names, or the node-or-store default. A person at a
 * terminal is told, after a second, what a command waits for when another process holds the store.
 */
export function routerOf(io: Io): Router {
  if (io.route) return io.route;
  const opts: DirectOptions = {};
  if (io.stderrIsTty) opts.onWait = (line: string) => io.stderr(`${line}\n`);
  if (io.requestKeys) opts.keys = io.requestKeys;
  if (io.nodeUnreachable) opts.nodeUnreachable = true;
  return (workspace, fn, env) => routed(workspace, fn, env, opts);
}

/**
 * Resolves at the first SIGINT or SIGTERM, or once the reader of our output has gone (`| head`), so a
 * watcher ends cleanly; `dispose` removes the listeners.
 */
export function untilStopped(): { stopped: Promise<void>; dispose: () => void } {
  let resolve!: () => void;
  const stopped = new Promise<void>((r) => (resolve = r));
  const on = () => resolve();
  // `on`, not `once`: signal-exit (loaded with the store's lock) re-raises a signal when only its own
  // listeners are left, which a `once` listener is not, by the time the listeners run.
  process.on('SIGINT', on);
  process.on('SIGTERM', on);
  void outputGone().then(on);
  return { stopped, dispose: () => (process.off('SIGINT', on), process.off('SIGTERM', on)) };
}
