// The local RPC client: nxc and nxs talk to a running node over its Unix socket. No PGlite on this path.
// Every answer is checked against the command's output schema before a caller sees it.
import { request, type RequestOptions } from 'node:http';
import { parseOutput, type CommandInput, type CommandName, type CommandOutput, type RunOptions } from '../../../protocol/commands.js';
import { ERROR_CODES, NexusError, type ErrorCode } from '../../../protocol/errors.js';


type RpcReply = { ok: true; result: unknown } | { ok: false; error: { code: string; message: string; details?: Record<string, unknown> } };

/** A node that could not be reached (no socket, connection refused, no answer in time): the caller may fall back. */
export class NodeUnreachable extends Error {
  override readonly name = 'NodeUnreachable';
}

function post(socket: string, path: string, body: unknown, timeoutMs: number): Promise<RpcReply> {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(JSON.stringify(body));
    // A connection of its own (agent: false), closed after the answer. Node 20's global agent keeps
    // connections alive, and the node's server closes an idle one after 5 s: a node busy longer than
    // that closes it just as the next request goes out on it, which then fails with ECONNRESET.
    // `servername: ''` (a TLS name, meaningless on a Unix socket; the agent reads it though the type
    // leaves it out) spares the agent working one out from the host, which compiled Node's IPv6
    // pattern in every command: ~2.5 ms of its start.
    const options: RequestOptions & { servername: string } = {
      socketPath: socket,
      path,
      method: 'POST',
      agent: false,
      servername: '',
      headers: { 'content-type': 'application/json', 'content-length': payload.length, connection: 'close' },
      timeout: timeoutMs,
    };
    const req = request(
      options,
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as RpcReply);
          } catch (err) {
            reject(new NexusError('INTERNAL', `the node answered ${path} with something that is not JSON (HTTP ${res.statusCode})`, undefined, { cause: err }));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('the node did not answer in time')));
    req.on('error', (err) => reject(new NodeUnreachable(`node unreachable: ${err.message}`, { cause: err })));
    req.end(payload);
  });
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
  const body = opts.request === undefined ? { workspace, input } : { workspace, input, request: opts.request };
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
