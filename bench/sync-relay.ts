// A relay in a process of its own for `bench/sync.ts`, so it never shares an event loop with the
// clients measuring it (NATS runs in its own process too). Started by the bench; prints one JSON
// line `{"url": ...}` once listening, and closes when its stdin ends or it gets SIGTERM. A line `gc` on
// stdin runs a full garbage collection (when started with --expose-gc) on every thread, so memory can be
// read settled.
//   BENCH_RELAY_DATA       PGlite data folder, or
//   BENCH_RELAY_DB_URL     PostgreSQL URL (+ BENCH_RELAY_DB_SCHEMA, a schema of its own)
//   BENCH_RELAY_OPERATOR   the operator token to use
//   BENCH_RELAY_MAX_PENDING connections per address not yet past hello (simulated nodes share one address)
import { BroadcastChannel } from 'node:worker_threads';
import { createLogger, startRelay } from '../server/index.js';
import { COLLECT_GARBAGE_CHANNEL } from '../server/storage/pglite-thread.js';

async function main(): Promise<void> {
  const dataDir = process.env['BENCH_RELAY_DATA'];
  const databaseUrl = process.env['BENCH_RELAY_DB_URL'];
  const schema = process.env['BENCH_RELAY_DB_SCHEMA'];
  const operatorToken = process.env['BENCH_RELAY_OPERATOR'];
  const maxPending = Number(process.env['BENCH_RELAY_MAX_PENDING'] ?? '');
  const relay = await startRelay({
    ...(dataDir !== undefined ? { dataDir } : { databaseUrl: databaseUrl!, ...(schema === undefined ? {} : { databaseSchema: schema }) }),
    ...(operatorToken === undefined ? {} : { operatorToken }),
    ...(maxPending > 0 ? { maxPendingPerAddress: maxPending } : {}),
    // Warnings and errors only: a line per connection would be noise in the bench's output.
    log: createLogger({ component: 'relay', level: 'warn' }),
  });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await relay.close().catch((err: unknown) => process.stderr.write(`sync-relay: close failed: ${String(err)}\n`));
    process.exit(0);
  };
  process.stdin.on('end', () => void stop());
  process.stdin.on('error', () => void stop());
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk: string) => {
    if (!chunk.split('\n').includes('gc')) return;
    (globalThis as { gc?: () => void }).gc?.();
    // The relay's PGlite thread collects its own heap when asked on this channel.
    const collect = new BroadcastChannel(COLLECT_GARBAGE_CHANNEL);
    collect.postMessage('gc');
    collect.close();
  });
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
  process.stdout.write(JSON.stringify({ url: relay.url, storage: relay.storage }) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`sync-relay: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
