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
  /**
   * Lets `bytes` more bytes through towards the clients, then pauses (the rest of that chunk held
   * back): a client sees exactly so much of a long answer, however fast either side runs.
   */
  pauseAfter(bytes: number): void;
  resume(): void;
  close(): Promise<void>;
};

type Pair = { client: Socket; upstream: Socket };

/** Starts a proxy on 127.0.0.1 (a free port) that forwards every connection to `target` (host:port). */
export async function startFaultProxy(target: { host?: string; port: number }): Promise<FaultProxy> {
  const pairs = new Set<Pair>();
  let paused = false;
  let accepted = 0;
  /** Bytes still let through towards clients before pausing; null: no budget. */
  let budget: number | null = null;
  /** Chunks held back past a budget, sent on at resume. */
  const held: Array<{ to: Socket; chunk: Buffer }> = [];

  const pauseAll = () => {
    paused = true;
    for (const { client, upstream } of pairs) {
      client.pause();
      upstream.pause();
    }
  };

  const wire = (pair: Pair) => {
    const { client, upstream } = pair;
    const forward = (from: Socket, to: Socket, towardsClient: boolean) => {
      from.on('data', (chunk: Buffer) => {
        if (towardsClient && budget !== null) {
          if (paused) return void held.push({ to, chunk });
          if (chunk.length >= budget) {
            const rest = chunk.subarray(budget);
            to.write(chunk.subarray(0, budget));
            budget = null;
            if (rest.length > 0) held.push({ to, chunk: rest });
            pauseAll();
            return;
          }
          budget -= chunk.length;
        }
        if (!to.write(chunk)) from.pause();
      });
      to.on('drain', () => {
        if (!paused) from.resume();
      });
      from.on('end', () => to.end());
    };
    forward(client, upstream, false);
    forward(upstream, client, true);
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
    pause: pauseAll,
    pauseAfter(bytes) {
      budget = bytes;
    },
    resume() {
      paused = false;
      budget = null;
      for (const { to, chunk } of held.splice(0)) if (!to.destroyed) to.write(chunk);
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
