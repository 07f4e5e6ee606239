// The local RPC client: nxc and nxs talk to a running node over its Unix socket. No PGlite on this path.
// Every answer is checked against the command's output schema before a caller sees it.
import { parseOutput, type CommandInput, type CommandName, type CommandOutput, type RunOptions } from '../../../protocol/commands.js';
import { ERROR_CODES, NexusError, type ErrorCode } from '../../../protocol/errors.js';
import { postJson } from './post.js';


type RpcReply = { ok: true; result: unknown } | { ok: false; error: { code: string; message: string; details?: Record<string, unknown> } };

/** A node that could not be reached (no socket, connection refused, no answer in time): the caller may fall back. */
export class NodeUnreachable extends Error {
  override readonly name = 'NodeUnreachable';
}

async function post(socket: string, path: string, body: unknown, timeoutMs: number): Promise<RpcReply> {
  let answer: { status: number; text: string };
  try {
    answer = await postJson(socket, path, body, timeoutMs);
  } catch (err) {
    throw new NodeUnreachable(`node unreachable: ${(err as Error).message}`, { cause: err });
  }
  try {
    return JSON.parse(answer.text) as RpcReply;
  } catch (err) {
    throw new NexusError('INTERNAL', `the node answered ${path} with something that is not JSON (HTTP ${answer.status})`, undefined, { cause: err });
  }
}

/**
 * Runs `name` on the node; a refusal comes back as the NexusError the node raised. `opts.request` is the
 * request's idempotency key: send the same one when running the same command again.
 */
export async function callNode<K extends CommandName>(
  socket: string,
  name: K,
  workspace: string | null,
  input: CommandInput<K>,
  opts: RunOptions & { timeoutMs?: number } = {},
): Promise<CommandOutput<K>> {
  const body = { workspace, input, ...(opts.request === undefined ? {} : { request: opts.request }), ...(opts.env === undefined ? {} : { env: opts.env }) };
  const reply = await post(socket, `/v1/commands/${name}`, body, opts.timeoutMs ?? 120_000);
  if (!reply.ok) {
    const code = (ERROR_CODES as string[]).includes(reply.error.code) ? (reply.error.code as ErrorCode) : 'INTERNAL';
    throw new NexusError(code, reply.error.message, reply.error.details);
  }
  return parseOutput(name, reply.result);
}

export function isUnreachable(err: unknown): boolean {
  return err instanceof NodeUnreachable;
}
