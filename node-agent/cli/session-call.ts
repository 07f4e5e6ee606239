// A command run through the session socket (cli/session-socket.ts): how the Nexus MCP tools act inside a session's
// sandbox, where the session's socket is the only way out and the session is who it says, whatever this process claims.
import { ERROR_CODES, NexusError, type ErrorCode } from '../../protocol/errors.js';
import type { WorkspaceCommand } from '../../protocol/commands.js';
import { postJson } from '../host/rpc/post.js';

/** A command for the session to run (the MCP tools' way in): its input as the tool parsed it, without a caller. */
export type SessionCommand = { command: string; input: Record<string, unknown> };
/** Its answer: the result with nxc's receipt warnings and the way it went, or the refusal. */
export type SessionCommandAnswer = { ok: true; result: Record<string, unknown>; via: 'node' | 'direct' } | { ok: false; error: { code: string; message: string; details?: Record<string, unknown> } };

/** The path a session command is posted to (nxc verbs go to CLI_PATH). */
export const SESSION_COMMAND_PATH = '/v1/command';

/**
 * Runs `command` through the session socket at `socket` (inside the sandbox, SESSION_SOCKET_PATH) and answers as a
 * local run would: its result, or its refusal thrown as the NexusError it was.
 */
export async function postSessionCommand(socket: string, command: WorkspaceCommand, input: Record<string, unknown>, timeoutMs = 120_000): Promise<{ result: Record<string, unknown>; via: 'node' | 'direct' }> {
  let answer: SessionCommandAnswer;
  try {
    answer = JSON.parse((await postJson(socket, SESSION_COMMAND_PATH, { command, input } satisfies SessionCommand, timeoutMs)).text) as SessionCommandAnswer;
  } catch (err) {
    throw new NexusError('INTERNAL', `this session's supervisor does not answer: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof answer !== 'object' || answer === null) throw new NexusError('INTERNAL', "this session's supervisor gave an answer that is not one");
  if (answer.ok) return { result: answer.result, via: answer.via };
  const code = (ERROR_CODES as string[]).includes(answer.error.code) ? (answer.error.code as ErrorCode) : 'INTERNAL';
  throw new NexusError(code, answer.error.message, answer.error.details);
}

