// The relay's HTTP side (hono): health, readiness, metrics, info, and stream creation for the operator.
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { ERROR_TABLE, type ErrorCode } from '../protocol/errors.js';
import { CreateStreamRequestSchema, SYNC_PATH, SYNC_PROTOCOL, type Limits } from '../protocol/sync.js';
import type { Logger } from '../infra/index.js';
import type { RelayMetrics } from './metrics.js';
import type { StreamStore } from './storage/index.js';
import { hashToken, newToken, tokenMatches } from './tokens.js';

/** What the HTTP app needs. */
export type HttpDeps = {
  store: StreamStore;
  metrics: RelayMetrics;
  limits: Limits;
  log: Logger;
  /** Whether a bearer token is the operator's. */
  isOperator: (token: string) => boolean;
  /** The package version, in /v1/info. */
  version: string;
  /** When set, /metrics answers only `Authorization: Bearer <token>` with the token hashing to this. */
  metricsTokenHash?: string;
};

/** How long `/readyz` waits for storage. */
const READY_TIMEOUT_MS = 2_000;

function fail(c: Context, code: ErrorCode, message: string, headers?: Record<string, string>) {
  const status = ERROR_TABLE[code].http as 400 | 401 | 409 | 500 | 503;
  return c.json({ ok: false, error: { code, message } }, status, headers);
}

function bearer(header: string | undefined): string | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m ? m[1]! : null;
}

/** The hono app of a relay. */
export function createHttpApp(deps: HttpDeps): Hono {
  const app = new Hono();

  app.get('/healthz', (c) => c.json({ ok: true }));

  app.get('/readyz', async (c) => {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        deps.store.ping(),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('storage did not answer in time')), READY_TIMEOUT_MS))),
      ]);
      return c.json({ ok: true, storage: deps.store.kind });
    } catch (err) {
      return c.json({ ok: false, error: { code: 'STORE_FAILED', message: `storage is not answering: ${(err as Error).message}` } }, 503);
    } finally {
      clearTimeout(timer);
    }
  });

  app.get('/metrics', async (c) => {
    if (deps.metricsTokenHash !== undefined) {
      const token = bearer(c.req.header('authorization'));
      if (token === null || !tokenMatches(token, deps.metricsTokenHash)) {
        return fail(c, 'UNAUTHORIZED', '/metrics needs the metrics token (Authorization: Bearer ...)', { 'www-authenticate': 'Bearer' });
      }
    }
    const heads = await deps.store.heads();
    return c.text(deps.metrics.render(heads), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
  });

  app.get('/v1/info', (c) => c.json({ protocol: SYNC_PROTOCOL, sync_path: SYNC_PATH, limits: deps.limits, version: deps.version }));

  app.post(
    '/v1/streams',
    async (c, next) => {
      const token = bearer(c.req.header('authorization'));
      if (token === null || !deps.isOperator(token)) {
        return fail(c, 'UNAUTHORIZED', 'creating a stream needs the operator token (Authorization: Bearer ...)', { 'www-authenticate': 'Bearer' });
      }
      await next();
    },
    bodyLimit({ maxSize: 4096, onError: (c) => fail(c, 'BAD_REQUEST', 'the body is larger than 4096 bytes') }),
    async (c) => {
      let body: unknown;
      try {
        body = JSON.parse(await c.req.text());
      } catch {
        return fail(c, 'BAD_REQUEST', 'the body must be JSON: {"name": "..."}');
      }
      const parsed = CreateStreamRequestSchema.safeParse(body);
      if (!parsed.success) return fail(c, 'BAD_REQUEST', 'the stream name must match ^[a-z0-9][a-z0-9_-]{0,63}$');
      const token = newToken();
      if (!(await deps.store.createStream(parsed.data.name, hashToken(token)))) {
        return fail(c, 'STREAM_EXISTS', `a stream named ${parsed.data.name} exists`);
      }
      deps.log.info('stream created', { stream: parsed.data.name });
      return c.json({ name: parsed.data.name, token });
    },
  );

  app.notFound((c) => c.json({ ok: false, error: { code: 'BAD_REQUEST', message: `no route ${c.req.method} ${c.req.path}` } }, 404));
  app.onError((err, c) => {
    deps.log.error('http handler failed', { method: c.req.method, path: c.req.path, error: err });
    return fail(c, 'INTERNAL', 'the relay failed; try again');
  });
  return app;
}
