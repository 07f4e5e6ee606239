// A node catching up, in a process of its own, for `bench/sync.ts`: a fresh store made from the template,
// the real SyncClient, until every op of the backlog is stored. A node is its own process with its own
// heap; run inside the bench, the catch-up shared a heap with the bench's 100,000 op texts and with the
// PGlite instances of the runs before it. Prints one JSON line and exits:
// `{"rate": ops/s, "ms": ..., "cpuMs": process CPU, "stored": rows in ops, "cursor": ...}`.
//   BENCH_NODE_RELAY, BENCH_NODE_STREAM, BENCH_NODE_TOKEN   where to catch up from
//   BENCH_NODE_TOTAL                                       how many ops the stream holds
//   BENCH_NODE_STORE, BENCH_NODE_HOME                      the store folder to make, and the home holding the template
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { createStore, openStore, type Db } from '../node-agent/adapters/store/index.js';
import { SyncClient } from '../node-agent/host/sync/index.js';
import { createLogger } from '../infra/index.js';

function env(name: string): string {
  const v = process.env[name];
  if (v === undefined || v === '') throw new TypeError(`${name} is not set`);
  return v;
}

async function main(): Promise<void> {
  const total = Number(env('BENCH_NODE_TOTAL'));
  const dir = env('BENCH_NODE_STORE');
  await createStore(dir, env('BENCH_NODE_HOME'));
  // Opened as the node opens its stores: long-lived, so V8 may optimise PGlite's code (infra/wasm.ts).
  const store = await openStore(dir, { tiering: true });
  let queue: Promise<unknown> = Promise.resolve();
  const run = <T>(fn: (db: Db) => Promise<T>): Promise<T> => {
    const p = queue.then(() => fn(store.db));
    queue = p.catch(() => undefined);
    return p;
  };
  // The end is seen from the ops stored (onIngested runs after each commit), not by polling the client's
  // status: a status read queries the store, in the same queue as the pages it would measure.
  let stored = 0;
  let t1 = 0;
  let allStored: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (allStored = resolve));
  const client = new SyncClient({
    binding: { relay: env('BENCH_NODE_RELAY'), stream: env('BENCH_NODE_STREAM'), token: env('BENCH_NODE_TOKEN'), bound_at: new Date().toISOString() },
    origin: 'bench-reader',
    projections: PROJECTIONS,
    // The row times taking a whole backlog in order: a node new to a stream this long would join at its
    // head instead and take the history in the background (bench:scale's join rows time that).
    joinMinOps: Infinity,
    run,
    log: createLogger({ component: 'sync', sink: (line) => process.stderr.write(`sync-node: ${line}`) }),
    onIngested: (ops) => {
      stored += ops.length;
      if (stored >= total && t1 === 0) {
        t1 = performance.now();
        allStored();
      }
    },
  });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await client.start();
  try {
    for (;;) {
      const finished = await Promise.race([done.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 500))]);
      const s = await client.status();
      if (finished) break;
      // Ops refused on the way never count as stored: the cursor at the head ends the run all the same
      // (the parent compares the rows stored with the backlog).
      if (s.cursor >= total) {
        t1 = performance.now();
        break;
      }
      if (s.refused || (s.last_error && !s.connected && s.last_error.includes('failed'))) throw new Error(`SyncClient: ${s.last_error}`);
    }
  } finally {
    await client.stop();
  }
  const cpu = process.cpuUsage(cpu0);
  const status = await client.status();
  const rows = await store.pg.query<{ n: number }>('select count(*)::int as n from ops');
  await store.close();
  const ms = t1 - t0;
  process.stdout.write(`${JSON.stringify({ rate: (total / ms) * 1000, ms, cpuMs: (cpu.user + cpu.system) / 1000, stored: rows.rows[0]!.n, cursor: status.cursor })}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`sync-node: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
