// The memory reference for the PGlite relay: a process that only opens PGlite (its defaults, a fresh
// folder, as the relay's first start does) and answers one query. Started by `bench/sync.ts`; prints
// `{"ready":true}` once open, runs a full GC for each `gc` line on stdin, and closes when stdin ends.
//   BENCH_BARE_DATA   the data folder to create
import { PGlite } from '@electric-sql/pglite';

async function main(): Promise<void> {
  const pg = await PGlite.create({ dataDir: process.env['BENCH_BARE_DATA']! });
  await pg.query('SELECT 1');
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk: string) => {
    if (chunk.split('\n').includes('gc')) (globalThis as { gc?: () => void }).gc?.();
  });
  process.stdin.on('end', () => void pg.close().then(() => process.exit(0)));
  process.stdout.write(JSON.stringify({ ready: true }) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`sync-bare-pglite: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
