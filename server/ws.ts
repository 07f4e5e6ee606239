// The sync socket: a ws WebSocketServer on the relay's HTTP server at /v1/sync, one SyncConnection per socket.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { SYNC_PATH } from '../protocol/sync.js';
import { SyncConnection, type ConnectionDeps } from './connection.js';

/** The running sync endpoint. */
export type SyncServer = {
  /** Closes every connection (1001) and stops taking new ones. */
  close(): Promise<void>;
};

/** How long closing connections get to finish their close handshake before they are cut. */
const CLOSE_GRACE_MS = 1_000;
/** A node says hello as soon as its socket opens; a socket silent this long is closed. */
export const DEFAULT_HELLO_TIMEOUT_MS = 5_000;
/**
 * Sockets from one address not admitted yet. Generous, because a proxy in front of the relay makes
 * every node one address; each such socket lives at most the hello timeout.
 */
export const DEFAULT_MAX_PENDING_PER_ADDRESS = 64;

/** What the sync endpoint needs beyond a connection's deps. */
export type SyncServerDeps = ConnectionDeps & { maxPendingPerAddress: number };

/**
 * Serves the sync protocol on `server`'s upgrades to {@link SYNC_PATH}. ws's own payload cap is
 * twice `max_frame_bytes`: frames between the two get a coded FRAME_TOO_LARGE from the
 * connection, larger ones are cut by ws (close 1009) before they are buffered.
 */
export function attachSyncServer(server: Server, deps: SyncServerDeps): SyncServer {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 2 * deps.limits.max_frame_bytes, perMessageDeflate: false });
  const connections = new Set<SyncConnection>();
  let nextId = 1;
  let closing = false;
  /** Sockets per address that have not been admitted (or refused) yet. */
  const pending = new Map<string, number>();

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    const path = new URL(req.url ?? '/', 'http://relay').pathname;
    if (closing || path !== SYNC_PATH) {
      socket.end(`HTTP/1.1 ${closing ? '503 Service Unavailable' : '404 Not Found'}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    // Refused before a WebSocket is made for it: a flood of silent sockets from one address costs a line each.
    const address = req.socket.remoteAddress ?? '';
    const held = pending.get(address) ?? 0;
    if (held >= deps.maxPendingPerAddress) {
      deps.metrics.rejected('TOO_MANY_PENDING');
      deps.log.warn('sync connection refused', { code: 'TOO_MANY_PENDING', remote: address, pending: held });
      const body = JSON.stringify({ ok: false, error: { code: 'TOO_MANY_PENDING', message: `${held} connections from this address have not said hello yet` } });
      socket.end(`HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      return;
    }
    pending.set(address, held + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const n = (pending.get(address) ?? 1) - 1;
      if (n <= 0) pending.delete(address);
      else pending.set(address, n);
    };
    socket.once('close', release);
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = new SyncConnection(ws, nextId++, deps, req.socket.remoteAddress, release);
      connections.add(conn);
      ws.on('close', () => connections.delete(conn));
    });
  };
  server.on('upgrade', onUpgrade);

  return {
    async close() {
      closing = true;
      server.off('upgrade', onUpgrade);
      for (const conn of connections) conn.stop();
      const deadline = Date.now() + CLOSE_GRACE_MS;
      while (wss.clients.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
