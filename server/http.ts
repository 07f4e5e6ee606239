// The relay's HTTP side (hono): health, readiness, metrics, info, and the operator's stream routes.
import { Hono } from 'hono';
import { SYNC_FEATURES, SYNC_PATH, SYNC_PROTOCOL, type Limits } from '../protocol/sync.js';
import { addAdminRoutes, bearer, fail, type AdminDeps } from './admin.js';
import { tokenMatches } from './tokens.js';

/** What the HTTP app needs. */
export type HttpDeps = AdminDeps & {
  limits: Limits;
  /** The package version, in /v1/info. */
  version: string;
  /** When set, /metrics answers only `Authorization: Bearer <token>` with the token hashing to this. */
  metricsTokenHash?: string;
  /** What the relay warned about at start (plain text beyond loopback); shown in /healthz. */
  warnings?: readonly string[];
};

/** How long `/readyz` waits for storage. */
const READY_TIMEOUT_MS = 2_000;

/** The hono app of a relay. */
export function createHttpApp(deps: HttpDeps): Hono {
  const app = new Hono();

  // Healthy either way; a warning here is for whoever watches the health check, not a failure.
  app.get('/healthz', (c) => c.json(deps.warnings?.length ? { ok: true, warnings: deps.warnings } : { ok: true }));

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

  app.get('/v1/info', (c) => c.json({ protocol: SYNC_PROTOCOL, sync_path: SYNC_PATH, limits: deps.limits, version: deps.version, features: [...SYNC_FEATURES] }));

  addAdminRoutes(app, deps);

  app.notFound((c) => c.json({ ok: false, error: { code: 'BAD_REQUEST', message: `no route ${c.req.method} ${c.req.path}` } }, 404));
  app.onError((err, c) => {
    deps.log.error('http handler failed', { method: c.req.method, path: c.req.path, error: err });
    return fail(c, 'INTERNAL', 'the relay failed; try again');
  });
  return app;
}
