// The PGlite relay's journal against a real kill: a relay process killed with journaled appends not yet in
// its database loses none of them at its next open.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createLogger, openPgliteStore, type StreamStore } from '../../server/index.js';
import { relayFolders } from '../helpers/relay.js';

// Each a copy of the migrated relay template (test/helpers/relay.ts).
const folders = await relayFolders();
const stores: StreamStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => undefined);
});
afterAll(() => folders.cleanup());

const tempDir = folders.fresh;

/** A logger that keeps its lines. */
function keepingLog(): { log: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  return { log: createLogger({ component: 'relay', level: 'debug', sink: (l) => lines.push(l) }), lines };
}

async function open(dir: string, log: ReturnType<typeof createLogger>): Promise<StreamStore> {
  const store = await openPgliteStore({ dataDir: dir, log });
  stores.push(store);
  return store;
}

describe('the PGlite relay journal, killed', () => {
  it('loses no acknowledged op when the relay process is killed with appends on their way to the database', async () => {
    const dir = tempDir();
    const data = join(dir, 'relay');
    const server = pathToFileURL(join(import.meta.dirname, '..', '..', 'dist', 'server', 'index.js')).href;
    // A relay process of its own: 40 pushes of 50 ops at once; on the last ack it prints what was acknowledged and is killed.
    const script = `
      import { writeSync } from 'node:fs';
      import { randomUUID } from 'node:crypto';
      const { openPgliteStore, silentLog } = await import(${JSON.stringify(server)});
      const store = await openPgliteStore({ dataDir: ${JSON.stringify(data)}, log: silentLog });
      await store.createStream('s', 'h');
      await store.append('s', [{ id: randomUUID(), text: '{"n":-1}', workspace: 'ws-a' }]);
      const acked = [];
      const pushes = Array.from({ length: 40 }, (_, p) => store.append('s', Array.from({ length: 50 }, (_, i) => ({ id: randomUUID(), text: JSON.stringify({ n: p * 50 + i }), workspace: 'ws-a' }))).then((out) => {
        for (const r of out.results) acked.push([r.op, r.seq]);
      }));
      await pushes.at(-1);
      writeSync(1, JSON.stringify(acked));
      process.kill(process.pid, 'SIGKILL');
    `;
    // A file, not --eval: the relay's database thread would inherit --input-type and refuse to start.
    const file = join(dir, 'relay.mjs');
    writeFileSync(file, script);
    const child = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 60_000 });
    expect(child.signal, child.stderr).toBe('SIGKILL');
    const acked = JSON.parse(child.stdout) as Array<[string, number]>;
    expect(acked).toHaveLength(2_000);
    const { log, lines } = keepingLog();
    const store = await open(data, log);
    console.log(`relay-journal: ${lines.find((l) => l.includes('put back')) ?? 'nothing was left to put back'}`);
    const rows = await store.read('s', 0, 5_000);
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 2_001 }, (_, i) => i + 1));
    const bySeq = new Map(rows.map((r) => [r.seq, (JSON.parse(r.op) as { n: number }).n]));
    for (const [, seq] of acked) expect(bySeq.get(seq)).toBe(seq - 2);
    // Each acknowledged id is stored once, at the seq its ack named.
    for (const [id, seq] of acked) expect((await store.append('s', [{ id, text: '{}', workspace: 'ws-a' }])).results[0]).toEqual({ op: id, seq, duplicate: true });
  });
});
