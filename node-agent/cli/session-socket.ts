// The session credential: a socket only one turn's sandbox holds. Every nxc verb run inside arrives here and runs as that
// session, at its anchored depth, whatever the caller's environment says; so does every Nexus MCP tool called inside
// (a command and its input, `SessionCommand`), the caller always this session's, never one the request names.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, relative, isAbsolute } from 'node:path';
import { internalError, NexusError } from '../../protocol/errors.js';
import type { WorkspaceCommand } from '../../protocol/commands.js';
import { SESSION_COMMAND_PATH, type SessionCommandAnswer } from './session-call.js';
import { MAX_CLI_BODY, type CliAnswer } from './handover-wire.js';
import type { Io } from './io.js';

/**
 * Who the socket's holder is: the turn's spec, as the engine wrote it. `base` is the environment recorded for
 * the session (its spec's `base_env`): what a verb run for it carries, and what any turn it sets off starts with.
 */
export type SessionIdentity = { workspaceDir: string; env: Record<string, string>; base: Record<string, string>; nexusHome: string | undefined };

/** Thrown through a verb to stop it before it did anything (it reads stdin, which was not sent yet). */
class Handback extends Error {}

/**
 * The environment a verb runs with: the session's recorded one, then the spec's identity. Nothing of the
 * caller's crosses: inside the sandbox its HOME, TMPDIR and PATH are the sandbox's, and a turn this verb sets
 * off (a promotion, a wake) must start with the environment recorded for that session, never these. A caller
 * that dropped its variables (`env -i`) is still this session; one that set others is too.
 */
export function sessionEnv(id: SessionIdentity): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(id.base)) if (!k.startsWith('NXC_') && k !== 'NEXUS_HOME') env[k] = v;
  Object.assign(env, id.env, { NXC_WORKSPACE_DIR: id.workspaceDir });
  if (id.nexusHome !== undefined) env['NEXUS_HOME'] = id.nexusHome;
  return env;
}

async function runVerb(body: unknown, id: SessionIdentity): Promise<CliAnswer> {
  const req = (typeof body === 'object' && body !== null ? body : {}) as { argv?: unknown; cwd?: unknown; env?: unknown; tty?: unknown; keys?: unknown; stdin?: unknown };
  if (!Array.isArray(req.argv) || !req.argv.every((a) => typeof a === 'string')) return { ok: false, error: { code: 'BAD_REQUEST', message: 'the request is not an nxc verb' } };
  const argv = req.argv as string[];
  // Inside, the copy is at the same path as outside; anything else (the sandbox's own /tmp) means the copy's root.
  const cwd = typeof req.cwd === 'string' && isAbsolute(req.cwd) && !relative(id.workspaceDir, req.cwd).startsWith('..') ? req.cwd : id.workspaceDir;
  const env = sessionEnv(id);
  const keys = Array.isArray(req.keys) ? req.keys.filter((k): k is string => typeof k === 'string' && /^r-[0-9A-Z]{26}$/.test(k)) : [];
  const stdin = req.stdin === undefined ? undefined : typeof req.stdin === 'string' ? req.stdin : null;
  const tty = (typeof req.tty === 'object' && req.tty !== null ? req.tty : {}) as Record<string, unknown>;
  const [{ NXC }, { cliMain }, { givenStdin }] = await Promise.all([import('./nxc.js'), import('./spec.js'), import('./io.js')]);
  const output: Array<[1 | 2, string]> = [];
  let handback: CliAnswer | null = null;
  const io: Io = {
    argv,
    env,
    cwd,
    stdout: (s) => void output.push([1, s]),
    stderr: (s) => void output.push([2, s]),
    readStdin:
      stdin === undefined
        ? async () => {
            handback = { ok: true, stdin: 'needed' };
            throw new Handback();
          }
        : givenStdin(stdin),
    stdinIsTty: tty['stdin'] === true,
    stderrIsTty: false,
    stdoutIsTty: false,
    requestKeys: keys,
  };
  const exit = await cliMain(io, NXC).catch((err: unknown) => {
    if (err instanceof Handback) return 0;
    throw err;
  });
  return handback ?? { ok: true, exit, output };
}

/** The commands a session's socket runs for its MCP tools: those tools' own, nothing else. */
async function sessionCommands(): Promise<ReadonlySet<string>> {
  const { mcpTools } = await import('../../protocol/mcp.js');
  return new Set(mcpTools().map((t) => t.command));
}

async function runCommand(body: unknown, id: SessionIdentity): Promise<SessionCommandAnswer> {
  try {
    const req = (typeof body === 'object' && body !== null ? body : {}) as { command?: unknown; input?: unknown };
    if (typeof req.command !== 'string' || !(await sessionCommands()).has(req.command) || typeof req.input !== 'object' || req.input === null || Array.isArray(req.input)) {
      throw new NexusError('BAD_REQUEST', 'the request is not a command a session may run');
    }
    const env = sessionEnv(id);
    const [{ localExec }, { callerFromEnv, routerOf }, { findWorkspace }] = await Promise.all([import('../host/mcp/index.js'), import('./io.js'), import('../adapters/workspace/index.js')]);
    const io: Io = { argv: [], env, cwd: id.workspaceDir, stdout: () => {}, stderr: () => {}, readStdin: async () => '', stdinIsTty: false, stderrIsTty: false, stdoutIsTty: false };
    // The caller is this session's, from its recorded identity; `localExec` drops any the input names.
    const exec = localExec({ caller: () => callerFromEnv(env), workspace: () => findWorkspace(id.workspaceDir, env), router: routerOf(io), env });
    return { ok: true, ...(await exec(req.command as WorkspaceCommand, req.input as Record<string, unknown>)) };
  } catch (err) {
    return { ok: false, error: internalError(err).toJSON() };
  }
}

function readBody(req: IncomingMessage): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_CLI_BODY) {
        resolve(null);
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * Listens on a fresh socket in a private folder (mode 0700) and answers nxc verbs as the session. The caller binds
 * the socket into the turn's sandbox at SESSION_SOCKET_PATH; `close` stops listening and removes the folder.
 */
export async function serveSession(id: SessionIdentity): Promise<{ path: string; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'nxs-session-'));
  const path = join(dir, 's.sock');
  const server: Server = createServer((req, res) => {
    void (async () => {
      let answer: CliAnswer | SessionCommandAnswer;
      try {
        const text = await readBody(req);
        if (text === null) answer = { ok: false, error: { code: 'MESSAGE_TOO_LARGE', message: 'the request body is too large' } };
        else if (req.url === SESSION_COMMAND_PATH) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(await runCommand(JSON.parse(text), id)));
          return;
        } else answer = await runVerb(JSON.parse(text), id);
      } catch (err) {
        answer = { ok: false, error: { code: 'INTERNAL', message: err instanceof Error ? err.message : String(err) } };
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  return {
    path,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
        server.closeAllConnections();
      }),
  };
}
