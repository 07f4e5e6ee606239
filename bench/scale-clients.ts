// Real sync clients for `bench/scale.ts`'s failover rows, in a process of their own so that the bench's
// simulated nodes (1,000 sockets on one event loop) never delay them: each is the node's own SyncClient on
// a real PGlite store, bound to both relay instances' URLs. Started by the bench with one JSON argument
// `{ urls, nodes: [{ stream, token }], dir }`; prints `{"ready": true}` once every client is connected
// through the first URL and caught up. Stdin lines: `mark` (the bench is about to kill an instance: the event-loop delay
// is measured from here), `report` (prints `{"first": [...], "movedAt": [...], "loop": {...}}`: for each
// client, the wall time in ms of the first ops page it received after it moved to the second URL, or
// null, and of its attempt at that URL; and this process's event-loop delay since `mark`). It stops its clients and exits when stdin ends.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { checkOps } from '../crypto/index.js';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { createStore, openStore, type Db, type Store } from '../node-agent/adapters/store/index.js';
import { SyncClient } from '../node-agent/host/sync/client.js';
import { createLogger } from '../infra/index.js';

type Config = { urls: string[]; nodes: Array<{ stream: string; token: string }>; dir: string };

const wall = () => performance.timeOrigin + performance.now();
const say = (v: unknown) => process.stdout.write(`${JSON.stringify(v)}\n`);

async function main(): Promise<void> {
  const cfg = JSON.parse(process.argv[2] ?? '{}') as Config;
  const home = join(cfg.dir, 'home');
  mkdirSync(home, { recursive: true });
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const stores: Store[] = [];
  const clients: SyncClient[] = [];
  /** Per client: moved to the second URL (the instance that survives), and its first page after that. */
  const moved: boolean[] = cfg.nodes.map(() => false);
  const first: Array<number | null> = cfg.nodes.map(() => null);
  /** When each moved (its attempt at the second URL). */
  const movedAt: Array<number | null> = cfg.nodes.map(() => null);
  for (const [i, n] of cfg.nodes.entries()) {
    const dir = join(cfg.dir, `node-${i}`);
    await createStore(dir, home);
    const store = await openStore(dir);
    stores.push(store);
    let queue: Promise<unknown> = Promise.resolve();
    const run = <T>(fn: (db: Db) => Promise<T>): Promise<T> => {
      const next = queue.then(() => fn(store.db));
      queue = next.catch(() => undefined);
      return next;
    };
    // The client says each connection attempt in a debug line: the one to the second URL is the move.
    const log = createLogger({
      component: 'sync',
      level: 'debug',
      sink: (line) => {
        if (!line.includes('"connecting to ')) return;
        const l = JSON.parse(line) as { relay?: string };
        if (l.relay === cfg.urls[1] && !moved[i]) {
          moved[i] = true;
          movedAt[i] = wall();
        }
      },
    });
    const client = new SyncClient({
      binding: { relay: cfg.urls[0]!, relays: cfg.urls, stream: n.stream, token: n.token, bound_at: new Date().toISOString() },
      origin: `scale-real-${i}`,
      projections: PROJECTIONS,
      run,
      log,
      check: (raws) => {
        if (moved[i] && first[i] === null) first[i] = wall();
        return checkOps(raws);
      },
    });
    clients.push(client);
    await client.start();
  }
  for (;;) {
    const all = await Promise.all(clients.map((c) => c.status()));
    if (all.every((s) => s.connected && s.relay === cfg.urls[0] && s.caught_up && s.lag === 0)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  say({ ready: true });

  process.stdin.setEncoding('utf8');
  let buf = '';
  process.stdin.on('data', (chunk: string) => {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const cmd = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (cmd === 'mark') loop.reset();
      else if (cmd === 'report') say({ first, movedAt, loop: { max: loop.max / 1e6, p99: loop.percentile(99) / 1e6, mean: loop.mean / 1e6 } });
    }
  });
  process.stdin.on('end', () => {
    void (async () => {
      for (const c of clients) await c.stop().catch(() => undefined);
      for (const s of stores) await s.close().catch(() => undefined);
      process.exit(0);
    })();
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`scale-clients: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
