// Starts a relay: storage (PGlite or PostgreSQL), the operator token, the HTTP app and the sync socket on one port.
import { createAdaptorServer } from '@hono/node-server';
import type { Server } from 'node:http';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { NexusError } from '../protocol/errors.js';
import { DEFAULT_LIMITS, LimitsSchema, SYNC_PROTOCOL, type Limits } from '../protocol/sync.js';
import { createHttpApp } from './http.js';
import { Hub } from './hub.js';
import { createLogger, type Logger } from '../infra/index.js';
import { RelayMetrics } from './metrics.js';
import { packageVersion } from './paths.js';
import { openPgliteStore, openPostgresStore, type StreamStore } from './storage/index.js';
import { hashToken, newToken, tokenMatches } from './tokens.js';
import { certificatePin, isLoopbackHost, plainTextWarning, type TlsMaterial } from './tls.js';
import type { HistoryGate } from './connection.js';
import { attachSyncServer, DEFAULT_HELLO_TIMEOUT_MS, DEFAULT_MAX_PENDING_PER_ADDRESS } from './ws.js';

/** Options of {@link startRelay}. Exactly one of `dataDir` and `databaseUrl`. */
export type RelayOptions = {
  /** Interface to listen on (default 127.0.0.1). */
  host?: string;
  /** Port (default 0: a free one). */
  port?: number;
  /** PGlite data folder (one relay process at a time). */
  dataDir?: string;
  /** PostgreSQL URL; several relays may share one database. */
  databaseUrl?: string;
  /** PostgreSQL schema to keep the relay's tables in (created when missing). */
  databaseSchema?: string;
  /** The operator token. Without it, the stored one is used, or one is made and stored on first start. */
  operatorToken?: string;
  /** Limits to override; the rest are {@link DEFAULT_LIMITS}. */
  limits?: Partial<Limits>;
  /** Default: JSON lines on stderr, component `relay`, threshold from NEXUS_LOG_LEVEL (else info). */
  log?: Logger;
  /** PostgreSQL safety-net poll, in ms (default 500). */
  pollMs?: number;
  /** When set, /metrics requires `Authorization: Bearer <metricsToken>` (at least 16 characters). */
  metricsToken?: string;
  /** Serve HTTPS and `wss://` with this certificate and key (PEM); {@link Relay.reloadTls} swaps them live. */
  tls?: TlsMaterial;
  /** A connection that has not sent `hello` within this many ms is closed as HELLO_TIMEOUT (default 5 s). */
  helloTimeoutMs?: number;
  /** Connections from one address that have not been admitted yet (no hello, or hello not answered) at most (default 64). */
  maxPendingPerAddress?: number;
  /**
   * Awaited before each read a `fetch` asks for (history for a joining node), never before the live feed:
   * tests and benches hold a node's background history here.
   */
  historyGate?: HistoryGate;
  /** Called before a PGlite store is made in `dataDir` (a first start; it takes a while): the port is already held. */
  onCreatingStore?: (dataDir: string) => void;
};

/** A running relay. */
export type Relay = {
  /** The base URL, `http://127.0.0.1:PORT` (`https://` with TLS); the sync socket is `ws(s)://.../v1/sync`. */
  url: string;
  /** With TLS: the certificate's pin (`sha256:...`), for `nxs sync bind --relay-fingerprint`. */
  fingerprint?: string;
  /** Set when the relay listens beyond loopback without TLS: what it warned at start and shows in /healthz. */
  warnings: string[];
  /**
   * Serves a new certificate and key to connections made from now on; open connections keep theirs.
   * Returns the new pin. TypeError on a relay started without TLS.
   */
  reloadTls(tls: TlsMaterial): string;
  port: number;
  /** Set only when this start made the operator token: shown once, stored hashed. */
  operatorToken?: string;
  storage: StreamStore['kind'];
  limits: Limits;
  /** Closes connections, the server and the store. */
  close(): Promise<void>;
};

function resolveLimits(over: Partial<Limits> | undefined): Limits {
  const limits = LimitsSchema.parse({ ...DEFAULT_LIMITS, ...over });
  if (limits.max_op_bytes + 1024 > limits.max_frame_bytes) {
    throw new TypeError('startRelay: max_frame_bytes must exceed max_op_bytes by at least 1024');
  }
  return limits;
}

async function openStore(opts: RelayOptions, log: Logger): Promise<StreamStore> {
  if ((opts.dataDir === undefined) === (opts.databaseUrl === undefined)) {
    throw new TypeError('startRelay: give exactly one of dataDir and databaseUrl');
  }
  if (opts.databaseUrl !== undefined) {
    return openPostgresStore({
      url: opts.databaseUrl,
      log,
      ...(opts.databaseSchema === undefined ? {} : { schema: opts.databaseSchema }),
      ...(opts.pollMs === undefined ? {} : { pollMs: opts.pollMs }),
    });
  }
  return openPgliteStore({ dataDir: opts.dataDir!, log });
}

/** The operator token hash in force, and the token itself when this start made it. */
async function operatorToken(store: StreamStore, given: string | undefined): Promise<{ hash: string; made?: string }> {
  if (given !== undefined) {
    if (given.length < 16) throw new NexusError('BAD_REQUEST', 'the operator token must be at least 16 characters');
    return { hash: hashToken(given) };
  }
  const stored = await store.operatorTokenHash();
  if (stored !== null) return { hash: stored };
  const made = newToken();
  if (await store.initOperatorTokenHash(hashToken(made))) return { hash: hashToken(made), made };
  // Another instance made one at the same moment: theirs stands.
  return { hash: (await store.operatorTokenHash())! };
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    // The OS's reason stays visible: a taken port is not a usage error, and callers branch on it.
    const onError = (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new NexusError('ADDRESS_IN_USE', `${host}:${port} is in use by another process`, { os_code: err.code }, { cause: err })
          : new NexusError('LISTEN_FAILED', `cannot listen on ${host}:${port}: ${err.message}`, { os_code: err.code ?? null }, { cause: err }),
      );
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Starts a relay and resolves once it accepts connections. */
export async function startRelay(opts: RelayOptions): Promise<Relay> {
  const log = opts.log ?? createLogger({ component: 'relay' });
  const version = packageVersion();
  const limits = resolveLimits(opts.limits);
  if (opts.metricsToken !== undefined && opts.metricsToken.length < 16) throw new NexusError('BAD_REQUEST', 'the metrics token must be at least 16 characters');
  const host = opts.host ?? '127.0.0.1';
  // The port is taken before the store is opened (made, on a first start): a busy port is said at once and
  // leaves no store behind. Until the store is open, HTTP requests are answered 503.
  const tls = opts.tls;
  let handle: (req: Request) => Response | Promise<Response> = () =>
    new Response(JSON.stringify({ error: { code: 'INTERNAL', message: 'the relay is starting' } }), { status: 503, headers: { 'content-type': 'application/json' } });
  // Not serve(): listening ourselves lets a busy port surface as an error.
  const server = createAdaptorServer({
    fetch: (req: Request) => handle(req),
    overrideGlobalObjects: false,
    ...(tls === undefined ? {} : { createServer: createHttpsServer, serverOptions: { cert: tls.cert, key: tls.key } }),
  }) as Server;
  const port = await listen(server, host, opts.port ?? 0);
  const closeServer = () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  if (opts.dataDir !== undefined && !existsSync(join(opts.dataDir, 'pgdata'))) opts.onCreatingStore?.(opts.dataDir);
  let store: StreamStore;
  try {
    store = await openStore(opts, log);
  } catch (err) {
    await closeServer();
    throw err;
  }
  try {
    const operator = await operatorToken(store, opts.operatorToken);
    const metrics = new RelayMetrics(version);
    const page = limits.page_size;
    const group = { maxOps: 4 * limits.max_ops_per_push, maxBytes: 4 * limits.max_frame_bytes };
    const hub = new Hub(store, { pageSize: page, cacheOps: 4 * page, cacheBytes: 4 * limits.max_frame_bytes, group }, log);
    const warnings = opts.tls === undefined && !isLoopbackHost(host) ? [plainTextWarning(host)] : [];
    const app = createHttpApp({ store, hub, metrics, limits, log, isOperator: (t) => tokenMatches(t, operator.hash),
      version,
      warnings,
      ...(opts.metricsToken === undefined ? {} : { metricsTokenHash: hashToken(opts.metricsToken) }),
    });
    handle = (req) => app.fetch(req);
    const sync = attachSyncServer(server, {
      store, hub, limits, metrics, log,
      helloTimeoutMs: opts.helloTimeoutMs ?? DEFAULT_HELLO_TIMEOUT_MS,
      ...(opts.historyGate === undefined ? {} : { historyGate: opts.historyGate }),
      maxPendingPerAddress: opts.maxPendingPerAddress ?? DEFAULT_MAX_PENDING_PER_ADDRESS,
    });
    const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
    const url = `${tls === undefined ? 'http' : 'https'}://${shown}:${port}`;
    let fingerprint = tls === undefined ? undefined : certificatePin(tls.cert);
    let closing: Promise<void> | undefined;
    log.info('relay listening', { url, storage: store.kind, version, protocol: SYNC_PROTOCOL, tls: tls !== undefined, ...(fingerprint === undefined ? {} : { fingerprint }) });
    for (const w of warnings) log.warn(w, { host });
    return {
      url,
      port,
      warnings,
      get fingerprint() {
        return fingerprint;
      },
      reloadTls(next: TlsMaterial): string {
        if (tls === undefined) throw new TypeError('reloadTls: this relay was started without TLS');
        const pin = certificatePin(next.cert);
        // Node keeps the context each open connection was made with; only new handshakes see this one.
        (server as unknown as HttpsServer).setSecureContext({ cert: next.cert, key: next.key });
        fingerprint = pin;
        log.info('tls certificate reloaded', { fingerprint: pin });
        return pin;
      },
      ...(operator.made === undefined ? {} : { operatorToken: operator.made }),
      storage: store.kind,
      limits,
      close: () =>
        (closing ??= (async () => {
          await sync.close();
          await closeServer();
          hub.close();
          await store.close();
          log.info('relay stopped');
        })()),
    };
  } catch (err) {
    await closeServer().catch(() => undefined);
    await store.close().catch(() => undefined);
    throw err;
  }
}
