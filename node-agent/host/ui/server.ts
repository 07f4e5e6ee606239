// Where the dashboard listens: loopback by default, on the port it had last time when that is free;
// beyond loopback only when `nxs ui --host` asks, and never with a secret short enough to guess.
import { createAdaptorServer } from '@hono/node-server';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { UiInfo } from '../../../protocol/commands.js';
import { NexusError } from '../../../protocol/errors.js';
import { writeFileAtomic } from '../../../infra/index.js';
import type { Logger } from '../../../infra/index.js';
import { uiApp } from './app.js';
import { StatusCache, ViewCache, type UiBackend } from './data.js';
import { LiveHub } from './live.js';
import { dashboardHostName, strongSecret, uiSecret } from './secret.js';

export type UiOptions = {
  /** NEXUS_HOME/node: the secret and the remembered port live here. */
  nodeDir: string;
  backend: UiBackend;
  host?: string;
  port?: number;
  log?: Logger;
  /** How often open pages' sync state is compared (default 1 s). */
  syncEveryMs?: number;
};

export type UiServer = {
  info(): UiInfo;
  /** Listens at host:port from now on (null keeps the current one); the old listener closes after the new one is up. */
  rebind(host: string | null, port: number | null): Promise<UiInfo>;
  close(): Promise<void>;
};

const LOOPBACK = '127.0.0.1';
const SavedSchema = z.object({ port: z.number().int().min(1).max(65535) });

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function savedPort(file: string): number | null {
  try {
    return SavedSchema.parse(JSON.parse(readFileSync(file, 'utf8'))).port;
  } catch {
    return null;
  }
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new NexusError('ADDRESS_IN_USE', `the dashboard cannot listen on ${host}:${port}: another process holds it; choose another with --port (0: any free one)`, { os_code: err.code }, { cause: err })
          : new NexusError('USAGE', `the dashboard cannot listen on ${host}:${port}: ${err.message}`, undefined, { cause: err }),
      );
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** The host as a browser should be pointed at it. */
function shownHost(host: string): string {
  const h = host === '0.0.0.0' || host === '::' ? hostname() : host;
  return h.includes(':') ? `[${h}]` : h;
}

export async function startUi(opts: UiOptions): Promise<UiServer> {
  const secret = uiSecret(opts.nodeDir);
  const portFile = join(opts.nodeDir, 'ui.json');
  const hub = new LiveHub(opts.backend, opts.syncEveryMs === undefined ? {} : { syncEveryMs: opts.syncEveryMs });
  let current = { server: null as Server | null, host: LOOPBACK, port: 0 };
  const cache = { views: new ViewCache(), status: new StatusCache(opts.backend) };
  const name = dashboardHostName(secret);
  const app = uiApp({ backend: opts.backend, hub, cache, secret, port: () => current.port, hostName: () => (isLoopback(current.host) ? name : null) });

  async function bind(host: string, port: number | null): Promise<void> {
    if (!isLoopback(host) && !strongSecret(secret)) {
      throw new NexusError('USAGE', 'the dashboard secret is too short to listen beyond loopback; remove ui-secret from the node folder to make a new one');
    }
    const server = createAdaptorServer({ fetch: app.fetch }) as Server;
    let bound: number;
    const remembered = port === null ? savedPort(portFile) : null;
    try {
      bound = await listen(server, host, port ?? remembered ?? 0);
    } catch (err) {
      // The remembered port is only a wish: when something else holds it, any free one does.
      if (port !== null || remembered === null) throw err;
      bound = await listen(server, host, 0);
    }
    const old = current.server;
    current = { server, host, port: bound };
    if (old) await stop(old);
    if (isLoopback(host)) writeFileAtomic(portFile, JSON.stringify({ port: bound }) + '\n');
    opts.log?.info(`dashboard listening on ${host}:${bound}${isLoopback(host) ? '' : ' (beyond loopback: the secret is required on every request)'}`, { host, port: bound });
  }

  function stop(server: Server): Promise<void> {
    server.closeAllConnections();
    return new Promise((r) => server.close(() => r()));
  }

  const info = (): UiInfo => ({
    // On loopback the page is opened on its own name, where its cookie stays (see secret.ts).
    url: `http://${isLoopback(current.host) ? name : shownHost(current.host)}:${current.port}/?k=${secret}`,
    host: current.host,
    port: current.port,
    loopback: isLoopback(current.host),
  });

  await bind(opts.host ?? LOOPBACK, opts.port ?? null);
  return {
    info,
    rebind: async (host, port) => {
      const nextHost = host ?? current.host;
      if (nextHost !== current.host || (port !== null && port !== current.port)) await bind(nextHost, port);
      return info();
    },
    close: async () => {
      hub.close();
      cache.status.close();
      if (current.server) await stop(current.server);
      current.server = null;
    },
  };
}
