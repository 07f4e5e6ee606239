// The PGlite relay's append journal: pushes acknowledged once journaled, the database behind them in
// order, and what the database never took put back at the next open.
import { spawnSync } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { newOpId } from '../protocol/ids.js';
import { createLogger, openPgliteStore, silentLog, type OpToAppend, type StreamStore } from '../server/index.js';
import { IdFilter } from '../server/storage/id-filter.js';
import { relayFolders } from './helpers/relay.js';
import { waitFor } from './helpers/until.js';
import { Journal, readJournalFile, type JournalRecord } from '../server/storage/journal.js';

// Each a copy of the migrated relay template (test/helpers/relay.ts).
const folders = await relayFolders();
const stores: StreamStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => undefined);
});
afterAll(() => folders.cleanup());

const tempDir = folders.fresh;

async function open(dir: string, log = silentLog): Promise<StreamStore> {
  const store = await openPgliteStore({ dataDir: dir, log });
  stores.push(store);
  return store;
}

async function close(store: StreamStore): Promise<void> {
  stores.splice(stores.indexOf(store), 1);
  await store.close();
}

function op(n: number, text?: string): OpToAppend {
  const id = newOpId();
  return { id, workspace: 'ws-a', text: text ?? JSON.stringify({ id, workspace: 'ws-a', n }) };
}

/** A logger that keeps its lines. */
function keepingLog(): { log: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  return { log: createLogger({ component: 'relay', level: 'debug', sink: (l) => lines.push(l) }), lines };
}

/** Writes `records` into the journal folder of the relay data folder `dir`, as a relay that ended before the database took them. */
function journalOf(dir: string, records: JournalRecord[], tail?: Buffer): void {
  const journal = Journal.begin(join(dir, 'journal'));
  for (const r of records) journal.write(r);
  journal.close(false);
  if (tail) appendFileSync(Journal.files(join(dir, 'journal')).at(-1)!, tail);
}

describe('the PGlite relay journal', () => {
  it('answers an append to a known stream before a read sent to the database ahead of it, and the next read sees the op', async () => {
    const store = await open(tempDir());
    await store.createStream('s', 'h');
    // The first append of a stream goes the careful way and teaches the relay its head.
    await store.append('s', Array.from({ length: 2_000 }, (_, i) => op(i)));
    const order: string[] = [];
    const read = store.read('s', 0, 2_000).then(() => order.push('read'));
    const fresh = op(2_001);
    const appended = store.append('s', [fresh]).then((out) => (order.push('append'), out));
    const [, out] = await Promise.all([read, appended]);
    expect(order).toEqual(['append', 'read']);
    expect(out.results).toEqual([{ op: fresh.id, seq: 2_001, duplicate: false }]);
    expect(out.rows).toEqual([{ seq: 2_001, op: fresh.text }]);
    expect(await store.read('s', 2_000, 10)).toEqual([{ seq: 2_001, op: fresh.text }]);
    expect((await store.getStream('s'))?.head).toBe(2_001);
  });

  it('holds an ack once 1 MB of journaled op text waits for the database, until the database takes some', async () => {
    const store = await open(tempDir());
    await store.createStream('s', 'h');
    await store.append('s', Array.from({ length: 2_000 }, (_, i) => op(i)));
    const order: string[] = [];
    const read = store.read('s', 0, 2_000).then(() => order.push('read'));
    // Pushes of ten ops of 26 kB: the fourth takes the waiting text past 1 MB.
    const pushes = Array.from({ length: 5 }, (_, p) =>
      store.append('s', Array.from({ length: 10 }, (_, i) => op(p * 10 + i, JSON.stringify({ p, i, pad: 'x'.repeat(26_215) })))).then(() => order.push(`push ${p + 1}`)),
    );
    await Promise.all([read, ...pushes]);
    expect(order).toEqual(['push 1', 'push 2', 'push 3', 'read', 'push 4', 'push 5']);
    expect((await store.getStream('s'))?.head).toBe(2_050);
  });

  it('begins a new file past 16 MB, removes the old one once the database holds it, and is empty after a clean close', async () => {
    const dir = tempDir();
    const store = await open(dir);
    await store.createStream('s', 'h');
    await store.append('s', [op(0)]);
    const pad = 'x'.repeat(104_858);
    for (let p = 0; p < 18; p++) await store.append('s', Array.from({ length: 10 }, (_, i) => op(p * 10 + i, JSON.stringify({ p, i, pad }))));
    await store.ping();
    const folder = join(dir, 'journal');
    await waitFor('the first journal file removed', () => Journal.files(folder).length === 1);
    expect(Journal.files(folder).map((f) => f.slice(-12))).toEqual(['00000002.log']);
    expect((await store.getStream('s'))?.head).toBe(181);
    await close(store);
    expect(Journal.files(folder)).toEqual([]);
  });

  it('reports an op sent again as a duplicate at its first seq, before and after the database took it and after a reopen', async () => {
    const dir = tempDir();
    let store = await open(dir);
    await store.createStream('s', 'h');
    await store.append('s', [op(0)]);
    const a = op(1);
    const first = store.append('s', [a]);
    // Sent again before the first answer came back.
    const again = store.append('s', [a, op(2)]);
    expect((await first).results).toEqual([{ op: a.id, seq: 2, duplicate: false }]);
    const second = await again;
    expect(second.results[0]).toEqual({ op: a.id, seq: 2, duplicate: true });
    expect(second.results[1]).toMatchObject({ seq: 3, duplicate: false });
    // Repeated inside one push.
    const b = op(3);
    expect((await store.append('s', [b, b])).results).toEqual([
      { op: b.id, seq: 4, duplicate: false },
      { op: b.id, seq: 4, duplicate: true },
    ]);
    await close(store);
    store = await open(dir);
    expect((await store.append('s', [a])).results).toEqual([{ op: a.id, seq: 2, duplicate: true }]);
    const c = op(4);
    expect((await store.append('s', [c])).results).toEqual([{ op: c.id, seq: 5, duplicate: false }]);
    expect((await store.read('s', 0, 100)).map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
  });

  it('puts back, at their seqs, acknowledged ops the database never took, once, and keeps counting after them', async () => {
    const dir = tempDir();
    let store = await open(dir);
    await store.createStream('s', 'h');
    await store.append('s', [op(0), op(1)]);
    await close(store);
    const lost = [op(2), op(3), op(4)];
    journalOf(dir, [{ kind: 'append', stream: 's', first: 3, ops: lost.map((o) => ({ id: o.id, workspace: 'ws-a', text: o.text })) }]);
    const { log, lines } = keepingLog();
    store = await open(dir, log);
    expect(lines.some((l) => l.includes('put back') && l.includes('"ops":3'))).toBe(true);
    const rows = await store.read('s', 2, 100);
    expect(rows).toEqual(lost.map((o, i) => ({ seq: 3 + i, op: o.text })));
    expect(Journal.files(join(dir, 'journal')).every((f) => readJournalFile(f).records.length === 0)).toBe(true);
    await close(store);
    store = await open(dir);
    expect((await store.getStream('s'))?.head).toBe(5);
    expect((await store.append('s', [op(5)])).results[0]!.seq).toBe(6);
  });

  it('does not put the ops of a deleted stream into a later stream of the same name, and a delete writes that mark', async () => {
    const dir = tempDir();
    let store = await open(dir);
    await store.createStream('gone', 'h');
    await store.append('gone', [op(0)]);
    expect(await store.deleteStream('gone')).toBe(1);
    const marks = Journal.files(join(dir, 'journal')).flatMap((f) => readJournalFile(f).records);
    expect(marks).toContainEqual({ kind: 'drop', stream: 'gone' });
    await store.createStream('s', 'h');
    await close(store);
    const old = op(1);
    const now = op(2);
    journalOf(dir, [
      { kind: 'append', stream: 's', first: 1, ops: [{ id: old.id, workspace: 'ws-a', text: old.text }] },
      { kind: 'drop', stream: 's' },
      { kind: 'append', stream: 's', first: 1, ops: [{ id: now.id, workspace: 'ws-a', text: now.text }] },
      { kind: 'append', stream: 'never-made', first: 1, ops: [{ id: old.id, workspace: 'ws-a', text: old.text }] },
    ]);
    store = await open(dir);
    expect(await store.read('s', 0, 10)).toEqual([{ seq: 1, op: now.text }]);
    expect(await store.getStream('never-made')).toBeNull();
  });

  it('drops a record cut short at the end of the journal and keeps the ones before it', async () => {
    const dir = tempDir();
    let store = await open(dir);
    await store.createStream('s', 'h');
    await close(store);
    const kept = op(0);
    journalOf(dir, [{ kind: 'append', stream: 's', first: 1, ops: [{ id: kept.id, workspace: 'ws-a', text: kept.text }] }], Buffer.from([200, 0, 0, 0, 1, 2]));
    const { log, lines } = keepingLog();
    store = await open(dir, log);
    expect(await store.read('s', 0, 10)).toEqual([{ seq: 1, op: kept.text }]);
    expect(lines.some((l) => l.includes('cut short'))).toBe(true);
  });

  it('refuses to open with STORE_FAILED when the journal does not follow the database, and keeps the journal', async () => {
    const dir = tempDir();
    const store = await open(dir);
    await store.createStream('s', 'h');
    await close(store);
    const o = op(0);
    journalOf(dir, [{ kind: 'append', stream: 's', first: 4, ops: [{ id: o.id, workspace: 'ws-a', text: o.text }] }]);
    await expect(openPgliteStore({ dataDir: dir, log: silentLog })).rejects.toMatchObject({ code: 'STORE_FAILED', message: expect.stringContaining('ends at 0') });
    expect(Journal.files(join(dir, 'journal')).flatMap((f) => readJournalFile(f).records)).toHaveLength(1);
  });

  it('breaks when the database refuses an op it acknowledged: later appends and ping fail with STORE_FAILED, and the journal keeps the op', async () => {
    const dir = tempDir();
    const store = await open(dir);
    await store.createStream('s', 'h');
    await store.append('s', [op(0)]);
    // PostgreSQL's text cannot hold a NUL character: the statement fails after the ack.
    const bad = op(1, '{"bad":"\u0000"}');
    expect((await store.append('s', [bad])).results[0]).toMatchObject({ seq: 2, duplicate: false });
    await expect(store.ping()).rejects.toMatchObject({ code: 'STORE_FAILED' });
    await expect(store.append('s', [op(2)])).rejects.toMatchObject({ code: 'STORE_FAILED' });
    await close(store);
    const records = Journal.files(join(dir, 'journal')).flatMap((f) => readJournalFile(f).records);
    expect(records).toContainEqual({ kind: 'append', stream: 's', first: 2, ops: [{ id: bad.id, workspace: 'ws-a', text: bad.text }] });
  });
});

describe('the relay id filter', () => {
  it('never misses an id it was given, across its growth, and says "maybe" for few it was not', () => {
    const filter = new IdFilter();
    const given = Array.from({ length: 20_000 }, () => newOpId());
    for (const id of given) filter.add(id);
    expect(given.every((id) => filter.has(id))).toBe(true);
    const others = Array.from({ length: 20_000 }, () => newOpId());
    const maybe = others.filter((id) => filter.has(id)).length;
    // About one in 100,000 per layer; three layers here.
    expect(maybe).toBeLessThan(10);
    expect(filter.bytes).toBeLessThan(256 * 1024);
  });
});

// The journal file's bytes are what the next open reads: kept readable by this process only.
it('keeps the journal private to the relay user', async () => {
  const dir = tempDir();
  const store = await open(dir);
  await store.createStream('s', 'h');
  await store.append('s', [op(0)]);
  await store.append('s', [op(1)]);
  const file = Journal.files(join(dir, 'journal')).at(-1)!;
  expect(readFileSync(file).length).toBeGreaterThan(0);
  expect(spawnSync('stat', ['-c', '%a', file, join(dir, 'journal')], { encoding: 'utf8' }).stdout.split('\n').slice(0, 2)).toEqual(['600', '700']);
});
