// The node's local RPC API (hono over a Unix socket): one route per command of protocol/commands.ts,
// derived from the list. The body is `{workspace, input, request?}`; the answer is `{ok, result | error}`.
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { COMMANDS, isCommandName, parseInput, RequestKeySchema, type CommandInput, type CommandName, type CommandOutput, type RunOptions } from '../../../protocol/commands.js';
import { ERROR_TABLE, internalError, isNexusError, NexusError } from '../../../protocol/errors.js';
import { runHandedOver, type CliHost } from './cli.js';
import { CLI_PATH, MAX_CLI_BODY } from './cli-wire.js';


/** What the RPC server needs from the node that hosts it: one entry point for every command. */
export type RpcBackend = {
  /** Runs `name`, with input already checked; `workspace` is null for node commands. `opts.request`: its idempotency key. */
  run: <K extends CommandName>(name: K, workspace: string | null, input: CommandInput<K>, opts?: RunOptions) => Promise<CommandOutput<K>>;
};

/** `request`: the caller's idempotency key, the same on a retry (see RequestKeySchema). */
const Envelope = z.object({ workspace: z.string().min(1).max(64).nullable(), input: z.unknown(), request: RequestKeySchema.optional() });

/** Request bodies are small; anything larger than a message plus its envelope is refused unread. */
export const MAX_RPC_BODY = 512 * 1024;

/** `cli`: what a node lends the nxc verbs clients hand over to it (CLI_PATH); without it the route is absent. */
export function rpcApp(backend: RpcBackend, cli?: CliHost): Hono {
  const app = new Hono();

  app.onError((err, c) => {
    const e = internalError(err);
    return c.json({ ok: false, error: e.toJSON() }, ERROR_TABLE[e.code].http as 400);
  });

  app.post('/v1/commands/:name', async (c) => {
    const name = c.req.param('name');
    if (!isCommandName(name)) throw new NexusError('BAD_REQUEST', `no command ${JSON.stringify(name)}`);
    const envelope = Envelope.safeParse(await jsonBody(c, MAX_RPC_BODY));
    if (!envelope.success) throw new NexusError('BAD_REQUEST', 'the request body is not {workspace, input, request?}');
    const { workspace } = envelope.data;
    if ((COMMANDS[name].scope === 'workspace') !== (workspace !== null)) {
      throw new NexusError('BAD_REQUEST', `${name} is a ${COMMANDS[name].scope} command`);
    }
    const { request } = envelope.data;
    const result = await backend.run(name, workspace, parseInput(name, envelope.data.input), request === undefined ? {} : { request });
    return c.json({ ok: true, result });
  });

  if (cli) {
    app.post(CLI_PATH, async (c) => c.json(await runHandedOver(await jsonBody(c, MAX_CLI_BODY), cli)));
  }
  return app;
}

/** The request body as JSON: MESSAGE_TOO_LARGE past `max` characters, BAD_REQUEST when it does not parse. */
async function jsonBody(c: Context, max: number): Promise<unknown> {
  const raw = await c.req.text();
  if (raw.length > max) throw new NexusError('MESSAGE_TOO_LARGE', 'the request body is too large');
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw new NexusError('BAD_REQUEST', 'the request body is not JSON');
  }
}
