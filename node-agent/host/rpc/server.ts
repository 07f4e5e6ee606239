// The node's local RPC API (hono): the same engine calls a direct command makes, one request each.
import { Hono } from 'hono';
import { z } from 'zod';
import { ERROR_TABLE, isNexusError, NexusError } from '../../../protocol/errors.js';
import type { Host } from '../index.js';

/** What the RPC server needs from the node that hosts it. */
export type RpcBackend = {
  /** Runs `fn` against the workspace's host, one command at a time per workspace. */
  withHost: <T>(workspace: string, fn: (host: Host) => Promise<T>) => Promise<T>;
  info: () => unknown;
  register: (root: string) => Promise<unknown>;
  unregister: (workspace: string) => Promise<unknown>;
  shutdown: () => void;
  syncStatus: (workspace: string) => Promise<unknown>;
  /** Re-reads the workspace's binding and restarts its sync client. */
  syncReload: (workspace: string) => Promise<unknown>;
};

const Caller = z.object({ actor: z.string(), session: z.string().nullable(), hop: z.number().int().min(0).nullable() });
const SendBody = z.object({ to: z.string(), subject: z.string().nullable(), text: z.string(), caller: Caller });
const ReplyBody = z.object({ thread: z.string(), escalate: z.boolean(), text: z.string(), caller: Caller });
const FinishBody = z.object({
  session: z.string(),
  turn: z.number().int().min(1),
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  timedOut: z.boolean(),
});
const RegisterBody = z.object({ root: z.string() });

/** Request bodies are small; anything larger than a message plus its envelope is refused unread. */
const MAX_BODY = 512 * 1024;

export function rpcApp(backend: RpcBackend): Hono {
  const app = new Hono();

  app.onError((err, c) => {
    const e = isNexusError(err) ? err : new NexusError('INTERNAL', err instanceof Error ? err.message : String(err));
    return c.json({ ok: false, error: e.toJSON() }, ERROR_TABLE[e.code].http as 400);
  });

  async function body<T>(c: { req: { text: () => Promise<string> } }, schema: z.ZodType<T>): Promise<T> {
    const raw = await c.req.text();
    if (raw.length > MAX_BODY) throw new NexusError('MESSAGE_TOO_LARGE', 'the request body is too large');
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      throw new NexusError('USAGE', 'the request body is not JSON');
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw new NexusError('USAGE', `bad request: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    return parsed.data;
  }

  const ok = <T>(c: { json: (v: unknown) => Response }, result: T) => c.json({ ok: true, result });

  app.get('/v1/node', (c) => ok(c, backend.info()));
  app.post('/v1/workspaces', async (c) => ok(c, await backend.register((await body(c, RegisterBody)).root)));
  app.delete('/v1/workspaces/:id', async (c) => ok(c, await backend.unregister(c.req.param('id'))));
  app.post('/v1/shutdown', (c) => {
    setTimeout(() => backend.shutdown(), 10);
    return ok(c, { stopping: true });
  });

  app.post('/v1/w/:id/send', async (c) => {
    const input = await body(c, SendBody);
    return ok(c, await backend.withHost(c.req.param('id'), (h) => h.engine.send(input)));
  });
  app.post('/v1/w/:id/reply', async (c) => {
    const input = await body(c, ReplyBody);
    return ok(c, await backend.withHost(c.req.param('id'), (h) => h.engine.reply(input)));
  });
  app.post('/v1/w/:id/turns/finish', async (c) => {
    const input = await body(c, FinishBody);
    return ok(c, await backend.withHost(c.req.param('id'), (h) => h.engine.finishTurn(input)));
  });
  app.get('/v1/w/:id/status', async (c) => {
    const all = c.req.query('all') === '1';
    return ok(c, await backend.withHost(c.req.param('id'), (h) => h.status({ all })));
  });
  app.get('/v1/w/:id/threads/:thread', async (c) => {
    return ok(c, await backend.withHost(c.req.param('id'), (h) => h.thread(c.req.param('thread'))));
  });
  app.post('/v1/w/:id/tick', async (c) => {
    return ok(c, await backend.withHost(c.req.param('id'), (h) => h.tick()));
  });
  app.get('/v1/w/:id/keys', async (c) => ok(c, await backend.withHost(c.req.param('id'), (h) => h.keys.show())));
  app.post('/v1/w/:id/keys/rotate', async (c) => ok(c, await backend.withHost(c.req.param('id'), (h) => h.keys.rotate())));
  app.get('/v1/w/:id/sync', async (c) => ok(c, await backend.syncStatus(c.req.param('id'))));
  app.post('/v1/w/:id/sync/reload', async (c) => ok(c, await backend.syncReload(c.req.param('id'))));
  return app;
}
