// The node's local RPC API (hono over a Unix socket): one route per command of protocol/commands.ts,
// derived from the list. The body is `{workspace, input, request?}`; the answer is `{ok, result | error}`.
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { COMMANDS, isCommandName, parseInput, RequestKeySchema, type CommandInput, type CommandName, type CommandOutput, type RunOptions } from '../../../protocol/commands.js';
import { ERROR_TABLE, internalError, isNexusError, NexusError } from '../../../protocol/errors.js';

/** What the RPC server needs from the node that hosts it: one entry point for every command. */
export type RpcBackend = {
  /** Runs `name`, with input already checked; `workspace` is null for node commands. `opts.request`: its idempotency key. */
  run: <K extends CommandName>(name: K, workspace: string | null, input: CommandInput<K>, opts?: RunOptions) => Promise<CommandOutput<K>>;
};

/** What a node lends a route added to its socket: its command path, and which home, version and workspaces it serves. */
export type NodeSide = RpcBackend & {
  /** This node's NEXUS_HOME (absolute) and package version. */
  home: string;
  version: string;
  serves(workspace: string): boolean;
};

/**
 * A route that whoever starts the node adds to its socket (nxc's hand-over, node-agent/cli/handover.ts):
 * its JSON body, read up to `maxBody` characters, goes to `handle` with the node's side; the answer is sent as JSON.
 */
export type NodeRoute = { path: string; maxBody: number; handle: (body: unknown, node: NodeSide) => Promise<unknown> };

/** `request`: the caller's idempotency key, the same on a retry (see RequestKeySchema). */
const Envelope = z.object({
  workspace: z.string().min(1).max(64).nullable(),
  input: z.unknown(),
  request: RequestKeySchema.optional(),
  /** The client's environment, with a command that may open an operation (recorded for its sessions). */
  env: z.record(z.string().max(4096), z.string().max(65_536)).optional(),
});

/** Request bodies are small; anything larger than a message plus its envelope is refused unread. */
export const MAX_RPC_BODY = 512 * 1024;

/** `routes`: added routes, each handed `side` (what the node lends them; without it they are absent). */
export function rpcApp(backend: RpcBackend, side?: NodeSide, routes: readonly NodeRoute[] = []): Hono {
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
    const { request, env } = envelope.data;
    const opts = { ...(request === undefined ? {} : { request }), ...(env === undefined ? {} : { env }) };
    const result = await backend.run(name, workspace, parseInput(name, envelope.data.input), opts);
    return c.json({ ok: true, result });
  });

  if (side) {
    for (const route of routes) app.post(route.path, async (c) => c.json(await route.handle(await jsonBody(c, route.maxBody), side)));
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
