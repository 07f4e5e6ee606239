// The operator's HTTP routes: create, list and delete streams, and replace a stream's token.
import type { Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { ERROR_TABLE, type ErrorCode } from '../protocol/errors.js';
import { CreateStreamRequestSchema, StreamName } from '../protocol/sync.js';
import type { Logger } from '../infra/index.js';
import type { Hub } from './hub.js';
import type { RelayMetrics } from './metrics.js';
import type { StreamStore } from './storage/index.js';
import { hashToken, newToken } from './tokens.js';

/** What the operator's routes need. */
export type AdminDeps = {
  store: StreamStore;
  hub: Hub;
  metrics: RelayMetrics;
  log: Logger;
  /** Whether a bearer token is the operator's. */
  isOperator: (token: string) => boolean;
};

const NAME_RULE = 'a stream name must match ^[a-z0-9][a-z0-9_-]{0,63}$';

/** A coded JSON error with the code's HTTP status. */
export function fail(c: Context, code: ErrorCode, message: string, headers?: Record<string, string>) {
  const status = ERROR_TABLE[code].http as 400 | 401 | 404 | 409 | 500 | 503;
  return c.json({ ok: false, error: { code, message } }, status, headers);
}

/** The token of an `Authorization: Bearer <token>` header, or null. */
export function bearer(header: string | undefined): string | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m ? m[1]! : null;
}

/** Adds the operator's routes under /v1/streams. Every one needs the operator token. */
export function addAdminRoutes(app: Hono, deps: AdminDeps): void {
  app.use('/v1/streams', operatorOnly(deps));
  app.use('/v1/streams/*', operatorOnly(deps));

  app.post('/v1/streams', bodyLimit({ maxSize: 4096, onError: (c) => fail(c, 'BAD_REQUEST', 'the body is larger than 4096 bytes') }), async (c) => {
    let body: unknown;
    try {
      body = JSON.parse(await c.req.text());
    } catch {
      return fail(c, 'BAD_REQUEST', 'the body must be JSON: {"name": "..."}');
    }
    const parsed = CreateStreamRequestSchema.safeParse(body);
    if (!parsed.success) return fail(c, 'BAD_REQUEST', NAME_RULE);
    const token = newToken();
    if (!(await deps.store.createStream(parsed.data.name, hashToken(token)))) {
      return fail(c, 'STREAM_EXISTS', `a stream named ${parsed.data.name} exists`);
    }
    deps.log.info('stream created', { stream: parsed.data.name });
    return c.json({ name: parsed.data.name, token });
  });

  app.get('/v1/streams', async (c) => {
    const streams = (await deps.store.listStreams()).map((s) => ({
      name: s.name,
      head: s.head,
      created_at: s.createdAt,
      connections: deps.hub.feed(s.name)?.consumers.size ?? 0,
    }));
    return c.json({ streams });
  });

  app.delete('/v1/streams/:name', async (c) => {
    const name = StreamName.safeParse(c.req.param('name'));
    if (!name.success) return fail(c, 'BAD_REQUEST', NAME_RULE);
    const ops = await deps.store.deleteStream(name.data);
    if (ops === null) return fail(c, 'UNKNOWN_STREAM', `no stream named ${name.data}`);
    deps.metrics.forgetStream(name.data);
    deps.log.warn('stream deleted', { stream: name.data, ops });
    return c.json({ name: name.data, deleted_ops: ops });
  });

  app.post('/v1/streams/:name/rotate-token', async (c) => {
    const name = StreamName.safeParse(c.req.param('name'));
    if (!name.success) return fail(c, 'BAD_REQUEST', NAME_RULE);
    const token = newToken();
    if (!(await deps.store.setTokenHash(name.data, hashToken(token)))) return fail(c, 'UNKNOWN_STREAM', `no stream named ${name.data}`);
    deps.log.warn('stream token replaced', { stream: name.data });
    return c.json({ name: name.data, token });
  });
}

function operatorOnly(deps: AdminDeps) {
  return async (c: Context, next: () => Promise<void>) => {
    const token = bearer(c.req.header('authorization'));
    if (token === null || !deps.isOperator(token)) {
      deps.log.warn('admin request refused', { code: 'UNAUTHORIZED', method: c.req.method, path: c.req.path });
      return fail(c, 'UNAUTHORIZED', 'stream administration needs the operator token (Authorization: Bearer ...)', { 'www-authenticate': 'Bearer' });
    }
    await next();
  };
}
