// The relay's PGlite thread keeps its statements prepared: the single-op append, a live node's usual push,
// is parsed and planned once, not at every op, and still takes the careful path for a duplicate.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyTemplate } from '../infra/index.js';
import { newOpId } from '../protocol/ids.js';
import { relayMigrationsDir } from '../server/paths.js';
import { packagedRelayTemplateDir, type StreamStore } from '../server/storage/index.js';
import { PgliteThread } from '../server/storage/pglite-thread.js';
import { CommitEmitter, migrate, sqlStreamStore } from '../server/storage/sql.js';

const base = mkdtempSync(join(tmpdir(), 'nexus-relay-statements-'));
let db: PgliteThread;
let store: StreamStore;

type Prepared = { statement: string; runs: number };
const prepared = () => db.query<Prepared>('SELECT statement, (generic_plans + custom_plans)::int AS runs FROM pg_prepared_statements ORDER BY statement');

beforeAll(async () => {
  const dataDir = join(base, 'pgdata');
  // From the packaged template when it is built (a second), else made by initdb.
  const template = packagedRelayTemplateDir();
  if (existsSync(template)) copyTemplate(template, dataDir);
  db = await PgliteThread.open(dataDir, []);
  await migrate(db, relayMigrationsDir());
  store = sqlStreamStore(db, new CommitEmitter(), { kind: 'pglite', appendDepth: 2, close: () => db.close() });
});

afterAll(async () => {
  await store?.close();
  rmSync(base, { recursive: true, force: true });
});

const op = (workspace = 'w-one') => {
  const id = newOpId();
  return { id, text: JSON.stringify({ id, workspace, body: { text: "it's $1 -- é" } }) };
};

describe("the relay's database thread", () => {
  it('runs 200 single-op appends as one prepared statement, planned once and run 200 times', async () => {
    await store.createStream('one-by-one', 'h');
    const before = await prepared();
    const ops = Array.from({ length: 200 }, () => op());
    for (const [i, o] of ops.entries()) expect((await store.append('one-by-one', [o])).head).toBe(i + 1);
    const appends = (await prepared()).filter((p) => /INSERT INTO stream_ops/.test(p.statement) && !before.some((b) => b.statement === p.statement));
    expect(appends).toHaveLength(1);
    expect(appends[0]!.runs).toBe(200);
    // Stored byte for byte, the workspace read from the text, in order.
    expect((await store.read('one-by-one', 0, 500)).map((r) => r.op)).toEqual(ops.map((o) => o.text));
    expect(await store.readHistory('one-by-one', 0, 200, { only: ['w-one'] }, 500, 1e9)).toHaveLength(200);
  });

  it('answers a single op already stored by the careful path: its first seq, the head unmoved, and the next op after it', async () => {
    await store.createStream('again', 'h');
    const [x, y] = [op(), op()];
    await store.append('again', [x]);
    await store.append('again', [y]);
    expect(await store.append('again', [x])).toEqual({ results: [{ op: x.id, seq: 1, duplicate: true }], head: 2, rows: [] });
    const z = op('w-two');
    expect(await store.append('again', [z])).toEqual({ results: [{ op: z.id, seq: 3, duplicate: false }], head: 3, rows: [{ seq: 3, op: z.text }] });
    expect(await store.readHistory('again', 0, 3, { only: ['w-two'] }, 10, 1e9)).toEqual([{ seq: 3, op: z.text }]);
  });

  it('refuses a single op for a stream that does not exist with UNKNOWN_STREAM, storing nothing', async () => {
    await expect(store.append('nowhere', [op()])).rejects.toMatchObject({ code: 'UNKNOWN_STREAM' });
    expect(await db.query('SELECT 1 FROM stream_ops WHERE stream = $1', ['nowhere'])).toEqual([]);
  });
});
