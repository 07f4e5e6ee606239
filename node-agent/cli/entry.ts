// nxc's first module. When a node runs for this NEXUS_HOME, the verb is handed to it whole (argv, cwd,
// environment, which streams are terminals) and runs there, where the code and the workspace's store are
// already loaded; this process only carries stdin and the output across the socket. Otherwise, or when the
// node declines (a verb it does not take, a workspace it does not serve, another version), the whole CLI
// loads and runs here as it always did. What this module imports is Node's own and nothing else (in its
// bundle, the verbs a node runs are a constant: see handover-verbs.ts): every command pays for it before it
// knows which way it goes.
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { packageVersion } from '../../infra/package.js';
import { guardOutput, writeOutput } from '../../infra/pipes.js';
import { postJson } from '../host/rpc/post.js';
import { nexusHome } from '../paths.js';
import { CLI_PATH, REQUEST_KEYS, type CliAnswer, type CliRequest } from './handover-wire.js';
import { HANDOVER_PATHS } from './handover-verbs.js';
import { SESSION_SOCKET_PATH } from '../adapters/sandbox/socket-path.js';
import { readLimited } from './stdin.js';

export { HANDOVER_PATHS };

/** The first words of the verbs a node may run: a client asks the node only when argv starts with one. */
const NODE_VERBS: ReadonlySet<string> = new Set(HANDOVER_PATHS.map((path) => path.split(' ')[0]!));

/** How long a verb may take in the node before this process gives up on it and runs it here (as callNode waits). */
const NODE_TIMEOUT_MS = 120_000;

export async function run(argv = process.argv.slice(2)): Promise<void> {
  // Inside a session's sandbox the supervisor's socket is the only way out, and the session is who it says.
  if (existsSync(SESSION_SOCKET_PATH)) return inSession(argv);
  const env = process.env;
  const home = nexusHome(env);
  // node/node.sock under the home, as nodePaths lays it out (host/node/files.ts, which loads zod).
  const socket = join(home, 'node', 'node.sock');
  const keys = requestKeys(REQUEST_KEYS);
  let stdin: { text: string | null } | undefined;
  let unreachable = false;
  if (NODE_VERBS.has(argv[0] ?? '') && existsSync(socket)) {
    const base: CliRequest = {
      version: packageVersion(),
      home,
      argv,
      cwd: process.cwd(),
      env: { ...env },
      tty: { stdin: Boolean(process.stdin.isTTY), stdout: Boolean(process.stdout.isTTY), stderr: Boolean(process.stderr.isTTY) },
      keys,
    };
    for (;;) {
      const answer = await post(socket, stdin === undefined ? base : { ...base, stdin: stdin.text });
      if (answer === UNREACHABLE) {
        unreachable = true;
        break;
      }
      if (answer === null || !answer.ok || 'local' in answer) break;
      if ('stdin' in answer) {
        if (stdin !== undefined) break; // asked twice: something is off, run it here
        // Stdin that cannot be read: the verb runs here and reports it as it always did.
        const text = await readLimited(process.stdin).then((t) => ({ text: t }), () => undefined);
        if (text === undefined) break;
        stdin = text;
        continue;
      }
      if (!Array.isArray(answer.output)) break; // not an answer this module understands: run it here
      guardOutput();
      for (const [fd, text] of answer.output) writeOutput(fd === 1 ? 'stdout' : 'stderr', text);
      process.exitCode = answer.exit;
      return;
    }
  }
  // Here after all: the keys go with the verb, and stdin already read for the node is not read again. A node
  // that did not answer is not asked again (as when the RPC client finds it unreachable): the verb goes direct.
  const { runHere } = await import('./nxc.js');
  process.exitCode = await runHere({ argv, keys, ...(stdin === undefined ? {} : { stdin }), nodeUnreachable: unreachable });
}

/**
 * A verb inside a session's sandbox: sent to the turn's supervisor, which runs it as the session whatever this
 * process's environment claims. Never run here: nothing here could reach the store, and nothing here is trusted.
 */
async function inSession(argv: string[]): Promise<void> {
  const env: Record<string, string> = {};
  // Only what shapes the output; identity and homes are the supervisor's to say.
  for (const k of ['NO_COLOR', 'FORCE_COLOR', 'TERM', 'COLUMNS']) if (process.env[k] !== undefined) env[k] = process.env[k]!;
  const base: CliRequest = {
    version: packageVersion(),
    home: '',
    argv,
    cwd: process.cwd(),
    env,
    tty: { stdin: Boolean(process.stdin.isTTY), stdout: false, stderr: false },
    keys: requestKeys(REQUEST_KEYS),
  };
  let stdin: string | null | undefined;
  for (;;) {
    const answer = await post(SESSION_SOCKET_PATH, stdin === undefined ? base : { ...base, stdin });
    if (answer !== UNREACHABLE && answer !== null && answer.ok && 'stdin' in answer && stdin === undefined) {
      stdin = await readLimited(process.stdin).catch(() => null);
      continue;
    }
    if (answer !== UNREACHABLE && answer !== null && answer.ok && 'output' in answer) {
      guardOutput();
      for (const [fd, text] of answer.output) writeOutput(fd === 1 ? 'stdout' : 'stderr', text);
      process.exitCode = answer.exit;
      return;
    }
    const why = answer === UNREACHABLE ? 'does not answer' : answer !== null && !answer.ok ? `refused: ${answer.error.code}: ${answer.error.message}` : 'gave an answer nxc does not understand';
    process.stderr.write(`nxc: this session's supervisor ${why}\n`);
    process.exitCode = 1;
    return;
  }
}

/** A node that could not be reached, or stopped answering: no connection, reset, or no answer in time. */
const UNREACHABLE = Symbol('unreachable');

/** The node's answer; UNREACHABLE; or null for an answer that is not one (another node version's 404, say). */
async function post(socket: string, body: CliRequest): Promise<CliAnswer | typeof UNREACHABLE | null> {
  let text: string;
  try {
    ({ text } = await postJson(socket, CLI_PATH, body, NODE_TIMEOUT_MS));
  } catch {
    return UNREACHABLE;
  }
  try {
    const answer = JSON.parse(text) as CliAnswer | null;
    return typeof answer === 'object' && answer !== null ? answer : null;
  } catch {
    return null;
  }
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * `n` request keys as `newRequestKey` makes them (`r-` and a ULID: 48 bits of milliseconds, 80 random), with
 * the randomness read from /dev/urandom: loading node:crypto would cost this process several milliseconds.
 */
export function requestKeys(n: number): string[] {
  const random = Buffer.alloc(10 * n);
  try {
    const fd = openSync('/dev/urandom', 'r');
    try {
      readSync(fd, random, 0, random.length, null);
    } finally {
      closeSync(fd);
    }
  } catch {
    // No /dev/urandom here: Math.random's generator is seeded from the system's entropy per process.
    for (let i = 0; i < random.length; i++) random[i] = Math.floor(Math.random() * 256);
  }
  let time = Date.now();
  let stamp = '';
  for (let i = 0; i < 10; i++) {
    stamp = CROCKFORD[time % 32]! + stamp;
    time = Math.floor(time / 32);
  }
  const keys: string[] = [];
  for (let k = 0; k < n; k++) {
    // 80 bits as 16 characters of 5 bits each.
    let out = stamp;
    let bits = 0;
    let acc = 0;
    for (const byte of random.subarray(10 * k, 10 * k + 10)) {
      acc = (acc << 8) | byte;
      bits += 8;
      while (bits >= 5) {
        bits -= 5;
        out += CROCKFORD[(acc >> bits) & 31]!;
      }
      acc &= (1 << bits) - 1;
    }
    keys.push(`r-${out}`);
  }
  return keys;
}
