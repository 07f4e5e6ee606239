// A tiny TCP fault proxy for tests: forwards bytes both ways to a target, and can cut or stall every connection on demand.
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export type FaultProxy = {
  /** `http://127.0.0.1:PORT`: give this to a client instead of the target's URL. */
  url: string;
  port: number;
  /** Connections accepted so far (each cut one that the client redials counts again). */
  accepted(): number;
  /** Connections open right now. */
  open(): number;
  /** Destroys every current connection, both halves, at once (new ones are still accepted); returns how many. */
  cut(): number;
  /** Stops moving bytes in both directions (they queue up) and holds new connections until resume. */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
};

type Pair = { client: Socket; upstream: Socket };

/** Starts a proxy on 127.0.0.1 (a free port) that forwards every connection to `target` (host:port). */
export async function startFaultProxy(target: { host?: string; port: number }): Promise<FaultProxy> {
  const pairs = new Set<Pair>();
  let paused = false;
  let accepted = 0;

  const wire = (pair: Pair) => {
    const { client, upstream } = pair;
    const forward = (from: Socket, to: Socket) => {
      from.on('data', (chunk: Buffer) => {
        if (!to.write(chunk)) from.pause();
      });
      to.on('drain', () => {
        if (!paused) from.resume();
      });
      from.on('end', () => to.end());
    };
    forward(client, upstream);
    forward(upstream, client);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    if (paused) {
      client.pause();
      upstream.pause();
    }
  };

  const server: Server = createServer((client) => {
    accepted += 1;
    client.setNoDelay(true);
    const upstream = createConnection({ host: target.host ?? '127.0.0.1', port: target.port });
    upstream.setNoDelay(true);
    const pair = { client, upstream };
    pairs.add(pair);
    wire(pair);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  const cut = (): number => {
    const open = [...pairs];
    for (const pair of open) {
      pairs.delete(pair);
      pair.client.destroy();
      pair.upstream.destroy();
    }
    return open.length;
  };

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    accepted: () => accepted,
    open: () => pairs.size,
    cut,
    pause() {
      paused = true;
      for (const { client, upstream } of pairs) {
        client.pause();
        upstream.pause();
      }
    },
    resume() {
      paused = false;
      for (const { client, upstream } of pairs) {
        client.resume();
        upstream.resume();
      }
    },
    async close() {
      cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
