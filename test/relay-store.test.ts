// The relay's StreamStore suite, run against PGlite and PostgreSQL alike.
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itLong } from './helpers/lanes.js';
import { newOpId } from '../protocol/ids.js';
import { openPgliteStore, openPostgresStore, packagedRelayTemplateDir, silentLog, type OpToAppend, type StreamStore } from '../server/index.js';
import { allocatedBytes, modes, notPrivate } from './helpers/file-modes.js';

const PG_URL = process.env['TEST_DATABASE_URL'];

/** Why the PostgreSQL case cannot run here, or null when it can. */
async function postgresUnavailable(): Promise<string | null> {
  if (!PG_URL) return 'TEST_DATABASE_URL is not set';
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (err) {
    return `PostgreSQL at TEST_DATABASE_URL did not answer (${(err as Error).message})`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const pgSkip = await postgresUnavailable();
const pgSchema = `relay_store_${process.pid}_${Date.now().toString(36)}`;
if (pgSkip) console.log(`relay-store: the PostgreSQL case is skipped: ${pgSkip}`);

/** A back-end: two stores on the same data (two pools for PostgreSQL; PGlite is one process, so one store twice). */
type Backend = { name: string; skip: string | null; open(): Promise<{ a: StreamStore; b: StreamStore; done(): Promise<void> }> };

const backends: Backend[] = [
  {
    name: 'PGlite',
    skip: null,
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'nexus-relay-store-'));
      const a = await openPgliteStore({ dataDir: dir, log: silentLog });
      return { a, b: a, done: async () => (await a.close(), rmSync(dir, { recursive: true, force: true })) };
    },
  },
  {
    name: 'PostgreSQL',
    skip: pgSkip,
    async open() {
      const schema = pgSchema;
      // Polls far apart: what these stores hear of each other comes by NOTIFY.
      const a = await openPostgresStore({ url: PG_URL!, schema, log: silentLog, pollMs: 60_000 });
      const b = await openPostgresStore({ url: PG_URL!, schema, log: silentLog, pollMs: 60_000 });
      return {
        a,
        b,
        async done() {
          await a.close();
          await b.close();
          const client = new pg.Client({ connectionString: PG_URL! });
          await client.connect();
          await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          await client.end();
        },
      };
    },
  },
];

let streamCount = 0;
function streamName(): string {
  return `s${process.pid}-${++streamCount}`;
}

function op(id: string = newOpId(), extra = ''): OpToAppend {
  return { id, text: `{"id":"${id}", "kind":"message.posted" ,"body":{"text":"hi ${extra}"}}` };
}

describe.each(backends)('the $name stream store', (backend) => {
  let a: StreamStore;
  let b: StreamStore;
  let done: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    if (backend.skip) return;
    ({ a, b, done } = await backend.open());
  });
  afterAll(async () => done());

  const test = backend.skip ? it.skip : it;

  test('creates a stream once, with head 0', async () => {
    const name = streamName();
    expect(await a.createStream(name, 'h1')).toBe(true);
    expect(await b.createStream(name, 'h2')).toBe(false);
    expect(await a.getStream(name)).toEqual({ name, tokenHash: 'h1', head: 0 });
    expect(await a.getStream(`${name}-nope`)).toBeNull();
  });

  test('append assigns gapless seqs from 1 and stores each op text unchanged', async () => {
    const name = streamName();
    await a.createStream(name, 'h');
    const first = [op(), op(), op()];
    const r1 = await a.append(name, first);
    expect(r1.results.map((r) => [r.seq, r.duplicate])).toEqual([[1, false], [2, false], [3, false]]);
    expect(r1.head).toBe(3);
    // The rows it stored come back as stored, so they can be sent on without reading them again.
    expect(r1.rows).toEqual(first.map((o, i) => ({ seq: i + 1, op: o.text })));
    const r2 = await b.append(name, [op(), op()]);
    expect(r2.results.map((r) => r.seq)).toEqual([4, 5]);
    expect((await a.getStream(name))!.head).toBe(5);
    const stored = await a.read(name, 0, 10);
    expect(stored.map((s) => s.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(stored.slice(0, 3).map((s) => s.op)).toEqual(first.map((o) => o.text));
  });

  test('reads history filtered by author workspace: only some (a few, or many), all but some, within a byte budget', async () => {
    const name = streamName();
    await a.createStream(name, 'h');
    const ws = (i: number) => `w${String(i).padStart(25, '0')}`;
    // 60 ops by 3 workspaces in turn; the workspace given, or read from the text, or none at all.
    const ops: OpToAppend[] = [];
    for (let i = 0; i < 60; i++) {
      const id = newOpId();
      const text = JSON.stringify({ id, workspace: ws(i % 3), body: { n: i } });
      ops.push(i % 2 === 0 ? { id, text, workspace: ws(i % 3) } : { id, text });
    }
    ops.push(op());
    await a.append(name, ops);
    const seqsOf = (rows: Array<{ seq: number }>) => rows.map((r) => r.seq);
    const by = (w: number) => ops.flatMap((_, i) => (i < 60 && i % 3 === w ? [i + 1] : []));
    expect(seqsOf(await b.readHistory(name, 0, 61, { only: [ws(1)] }, 100, 1e6))).toEqual(by(1));
    expect(seqsOf(await b.readHistory(name, 0, 61, { only: [ws(2), ws(0)] }, 5, 1e6))).toEqual([1, 3, 4, 6, 7]);
    expect(seqsOf(await b.readHistory(name, 10, 30, { only: [ws(0)] }, 100, 1e6))).toEqual(by(0).filter((s) => s > 10 && s <= 30));
    // Past a few workspaces the read takes another path, with the same answer.
    const many = [ws(1), ...Array.from({ length: 20 }, (_, i) => ws(100 + i))];
    expect(seqsOf(await b.readHistory(name, 0, 61, { only: many }, 100, 1e6))).toEqual(by(1));
    // All but some: the op that names no workspace is nobody's to leave out.
    expect(seqsOf(await b.readHistory(name, 0, 61, { exclude: [ws(0), ws(1)] }, 100, 1e6))).toEqual([...by(2), 61]);
    expect(seqsOf(await b.readHistory(name, 0, 61, {}, 100, 1e6))).toHaveLength(61);
    // A byte budget stops the page early, never before its first op.
    const one = Buffer.byteLength(ops[0]!.text);
    expect(await b.readHistory(name, 0, 61, {}, 100, 3 * one + 2)).toHaveLength(3);
    expect(await b.readHistory(name, 0, 61, {}, 100, 1)).toHaveLength(1);
  });

  test('stores texts with quotes, backslashes, dollars and non-ASCII byte for byte', async () => {
    const name = streamName();
    await a.createStream(name, 'h');
    const tricky = [`it's ''quoted'' \\' E'\\x41' $$ $1 $tag$ ; DROP TABLE streams; --`, 'é 😀 \\u0041 \\n', "'".repeat(50)];
    const ops = tricky.map((t) => {
      const id = newOpId();
      return { id, text: JSON.stringify({ id, body: { text: t } }) };
    });
    await a.append(name, ops);
    expect((await b.read(name, 0, 10)).map((r) => r.op)).toEqual(ops.map((o) => o.text));
    expect((await a.listStreams()).length).toBeGreaterThan(0);
  });

  test('a duplicate id keeps its first seq, across batches and within one', async () => {
    const name = streamName();
    await a.createStream(name, 'h');
    const [x, y] = [op(), op()];
    await a.append(name, [x, y]);
    const again = await b.append(name, [op(y.id, 'changed'), op(), op(x.id)]);
    expect(again.results.map((r) => [r.seq, r.duplicate])).toEqual([[2, true], [3, false], [1, true]]);
    const z = op();
    const within = await a.append(name, [z, op(z.id, 'twice'), op()]);
    expect(within.rows.map((r) => r.seq)).toEqual([4, 5]);
    expect(within.results.map((r) => [r.op, r.seq, r.duplicate])).toEqual([
      [z.id, 4, false],
      [z.id, 4, true],
      [within.results[2]!.op, 5, false],
    ]);
    const stored = await a.read(name, 0, 100);
    expect(stored.map((s) => s.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(stored[1]!.op).toBe(y.text);
    expect(stored[3]!.op).toBe(z.text);
    const onlyDuplicates = await a.append(name, [x]);
    expect(onlyDuplicates).toEqual({ results: [{ op: x.id, seq: 1, duplicate: true }], head: 5, rows: [] });
  });

  test('read pages in seq order, by count and by bytes', async () => {
    const name = streamName();
    await a.createStream(name, 'h');
    await a.append(name, Array.from({ length: 25 }, () => op()));
    const seqs: number[] = [];
    for (let after = 0; ; ) {
      const page = await b.read(name, after, 10);
      if (page.length === 0) break;
      expect(page.length).toBeLessThanOrEqual(10);
      seqs.push(...page.map((p) => p.seq));
      after = page.at(-1)!.seq;
    }
    expect(seqs).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    const size = Buffer.byteLength((await a.read(name, 0, 1))[0]!.op);
    expect((await a.read(name, 0, 10, size * 3)).map((p) => p.seq)).toEqual([1, 2, 3]);
    expect((await a.read(name, 4, 10, 1)).map((p) => p.seq)).toEqual([5]);
    expect(await a.read(name, 25, 10)).toEqual([]);
  });

  test('two concurrent appenders never leave a gap or give a seq twice', async () => {
    const name = streamName();
    await a.createStream(name, 'h');
    const shared = Array.from({ length: 40 }, () => newOpId());
    const batches = (store: StreamStore, offset: number) =>
      Array.from({ length: 15 }, (_, i) => store.append(name, [op(), op(shared[(i * 3 + offset) % 40]), op(), op(shared[(i * 7 + offset) % 40]), op()]));
    const results = (await Promise.all([...batches(a, 0), ...batches(b, 5)])).flatMap((r) => r.results);
    const stored = await a.read(name, 0, 1000);
    expect(stored.map((s) => s.seq)).toEqual(Array.from({ length: stored.length }, (_, i) => i + 1));
    const ids = stored.map((s) => (JSON.parse(s.op) as { id: string }).id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(results.map((r) => r.op)).size).toBe(ids.length);
    const seqOf = new Map(ids.map((id, i) => [id, i + 1]));
    for (const r of results) expect(r.seq).toBe(seqOf.get(r.op));
    expect((await b.getStream(name))!.head).toBe(ids.length);
  });

  test('a subscriber hears of commits, from either store', async () => {
    const name = streamName();
    await a.createStream(name, 'h');
    const heard: number[] = [];
    const off = a.subscribe(name, (head) => heard.push(head));
    await b.append(name, [op(), op()]);
    await expect.poll(() => heard.at(-1), { timeout: 5_000 }).toBe(2);
    off();
  });

  // A transaction that NOTIFYs holds a database-wide lock from before its commit is flushed until it
  // ends, so appends carrying their own NOTIFY would commit one at a time across every stream. The
  // notice goes after the commit, on the connection that listens (from the pool it would wait behind
  // every append queued for a connection).
  (backend.name === 'PostgreSQL' ? test : it.skip)('PostgreSQL: an append commits without a NOTIFY in its transaction; the notice follows on the LISTEN connection', async () => {
    const name = streamName();
    await a.createStream(name, 'h');
    const heard: number[] = [];
    const off = b.subscribe(name, (head) => heard.push(head));
    // Every statement text a store sends, with the connection it went on (the real driver runs each one).
    const sent: Array<{ client: pg.Client; text: string }> = [];
    const original = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      sent.push({ client: this, text: typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string } | undefined)?.text ?? '') });
      return Reflect.apply(original, this, args) as never;
    } as typeof original;
    let c: StreamStore | undefined;
    try {
      c = await openPostgresStore({ url: PG_URL!, schema: pgSchema, log: silentLog, pollMs: 60_000 });
      await c.append(name, [op(), op()]);
      await expect.poll(() => heard.at(-1), { timeout: 5_000 }).toBe(2);
    } finally {
      pg.Client.prototype.query = original;
      off();
      await c?.close();
    }
    const listening = sent.find((s) => s.text.startsWith('LISTEN '))?.client;
    expect(listening).toBeDefined();
    const append = sent.findIndex((s) => s.text.includes('INSERT INTO stream_ops'));
    expect(append).toBeGreaterThanOrEqual(0);
    expect(sent[append]!.text).not.toContain('pg_notify');
    const notify = sent.findIndex((s) => s.text.includes('pg_notify') && s.text.includes(`${name}:2`));
    expect(notify).toBeGreaterThan(append);
    expect(sent[notify]!.client).toBe(listening);
  });

  // PGlite serves one process, so nobody commits behind its back: nothing for a poll to catch there.
  (backend.name === 'PostgreSQL' ? test : it.skip)('PostgreSQL: the poll catches a commit whose NOTIFY never came', async () => {
    const name = streamName();
    await a.createStream(name, 'h');
    const polling = await openPostgresStore({ url: PG_URL!, schema: pgSchema, log: silentLog, pollMs: 100 });
    try {
      const heard: number[] = [];
      polling.subscribe(name, (head) => heard.push(head));
      const client = new pg.Client({ connectionString: PG_URL! });
      await client.connect();
      await client.query(`UPDATE "${pgSchema}".streams SET head = 1 WHERE name = $1`, [name]);
      await client.query(`INSERT INTO "${pgSchema}".stream_ops (stream, seq, op_id, op) VALUES ($1, 1, $2, '{}')`, [name, newOpId()]);
      await client.end();
      await expect.poll(() => heard.at(-1), { timeout: 5_000 }).toBe(1);
    } finally {
      await polling.close();
    }
  });

  test('lists streams, replaces a token and deletes a stream with all its ops, and either store hears of it', async () => {
    const [keep, drop] = [streamName(), streamName()];
    await a.createStream(keep, 'h-keep');
    await a.createStream(drop, 'h-drop');
    await a.append(drop, [op(), op(), op()]);
    const changed: string[] = [];
    const off = b.onStreamChanged((s) => changed.push(s));
    const listed = (await b.listStreams()).filter((s) => s.name === keep || s.name === drop);
    expect(new Map(listed.map((s) => [s.name, s.head]))).toEqual(new Map([[keep, 0], [drop, 3]]));
    expect(Number.isNaN(Date.parse(listed[0]!.createdAt))).toBe(false);

    expect(await a.setTokenHash(keep, 'h-new')).toBe(true);
    expect((await b.getStream(keep))?.tokenHash).toBe('h-new');
    expect(await a.setTokenHash(`${keep}-nope`, 'x')).toBe(false);

    expect(await a.deleteStream(drop)).toBe(3);
    expect(await b.getStream(drop)).toBeNull();
    expect(await b.read(drop, 0, 10)).toEqual([]);
    expect(await a.deleteStream(drop)).toBeNull();
    await expect(a.append(drop, [op()])).rejects.toMatchObject({ code: 'UNKNOWN_STREAM' });
    await expect.poll(() => [...new Set(changed)].sort(), { timeout: 5_000 }).toEqual([keep, drop].sort());
    off();
    // A stream made again under a deleted name starts from seq 1.
    expect(await a.createStream(drop, 'h-again')).toBe(true);
    expect((await a.append(drop, [op()])).results[0]!.seq).toBe(1);
  });

  test('stores the operator token hash only once', async () => {
    const first = await a.operatorTokenHash();
    const won = await a.initOperatorTokenHash('aa');
    const lost = await b.initOperatorTokenHash('bb');
    expect(lost).toBe(false);
    expect(await b.operatorTokenHash()).toBe(first ?? (won ? 'aa' : null));
    await expect(a.ping()).resolves.toBeUndefined();
    expect((await a.heads()).length).toBeGreaterThan(0);
  });
});


describe('the PGlite relay data folder', () => {
  /** The databases in a relay's data folder: initdb makes three (template0, template1, postgres); the packaged template keeps one. */
  const databases = (dir: string) => readdirSync(join(dir, 'pgdata', 'base')).length;

  itLong('is made by initdb, not copied, from a template others could have changed: private (folders 0700, files 0600), and stays so after ops were written', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'nexus-relay-perms-'));
    const template = join(parent, 'template');
    cpSync(packagedRelayTemplateDir(), template, { recursive: true });
    chmodSync(join(template, 'postgresql.conf'), 0o666);
    const dir = join(parent, 'relay', 'data');
    try {
      const store = await openPgliteStore({ dataDir: dir, log: silentLog, template });
      expect(databases(dir)).toBe(3);
      try {
        expect(modes(dir).size).toBeGreaterThan(100);
        expect(notPrivate(dir)).toEqual([]);
        await store.createStream('perms', 'h');
        await store.append('perms', Array.from({ length: 200 }, () => op()));
      } finally {
        await store.close();
      }
      expect(notPrivate(dir)).toEqual([]);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('is copied from the packaged template on first use, private, its WAL segment sparse, and serves at once', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'nexus-relay-template-')), 'data');
    try {
      const store = await openPgliteStore({ dataDir: dir, log: silentLog });
      try {
        expect(databases(dir)).toBe(1);
        expect(notPrivate(dir)).toEqual([]);
        // One 16 MB segment whose unwritten pages are holes: the whole folder takes less than that segment would.
        expect(allocatedBytes(dir)).toBeLessThan(12 * 2 ** 20);
        await store.createStream('copied', 'h');
        expect((await store.append('copied', [op(), op()])).results.map((r) => r.seq)).toEqual([1, 2]);
      } finally {
        await store.close();
      }
      expect(notPrivate(dir)).toEqual([]);
    } finally {
      rmSync(dirname(dir), { recursive: true, force: true });
    }
  });

  it('removes a copy a crashed relay left half made, and copies the template again', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'nexus-relay-template-')), 'data');
    mkdirSync(join(dir, 'pgdata.tmp-999999', 'base'), { recursive: true });
    writeFileSync(join(dir, 'pgdata.tmp-999999', 'PG_VERSION'), '17\n');
    try {
      const store = await openPgliteStore({ dataDir: dir, log: silentLog });
      await store.close();
      expect(readdirSync(dir).filter((name) => name.startsWith('pgdata.tmp-'))).toEqual([]);
      expect(databases(dir)).toBe(1);
    } finally {
      rmSync(dirname(dir), { recursive: true, force: true });
    }
  });

  it('tightens a folder left readable by others when it is opened', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nexus-relay-perms-'));
    try {
      await (await openPgliteStore({ dataDir: dir, log: silentLog })).close();
      for (const [path, m] of modes(dir)) chmodSync(path, m.startsWith('d') ? 0o755 : 0o644);
      chmodSync(dir, 0o777);
      expect(notPrivate(dir).length).toBe(modes(dir).size);
      const store = await openPgliteStore({ dataDir: dir, log: silentLog });
      try {
        expect(notPrivate(dir)).toEqual([]);
        await store.createStream('reopened', 'h');
        expect((await store.getStream('reopened'))?.head).toBe(0);
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the PGlite relay store with a bad NEXUS_STORE_CACHE', () => {
  it('is refused with USAGE before its folder is made or locked, and opens once the value is fixed', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'nexus-relay-cache-')), 'data');
    const saved = process.env['NEXUS_STORE_CACHE'];
    try {
      process.env['NEXUS_STORE_CACHE'] = '64';
      await expect(openPgliteStore({ dataDir: dir, log: silentLog })).rejects.toMatchObject({ code: 'USAGE', message: expect.stringContaining('NEXUS_STORE_CACHE must be a size') });
      expect(existsSync(dir)).toBe(false);
      process.env['NEXUS_STORE_CACHE'] = '2MB';
      const store = await openPgliteStore({ dataDir: dir, log: silentLog });
      await store.close();
    } finally {
      if (saved === undefined) delete process.env['NEXUS_STORE_CACHE'];
      else process.env['NEXUS_STORE_CACHE'] = saved;
      rmSync(dirname(dir), { recursive: true, force: true });
    }
  });
});

describe('the PGlite relay data folder lock', () => {
  // One folder for both cases.
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'nexus-relay-lock-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a second opener with STORE_BUSY naming the holder, and frees the folder at close', async () => {
    const first = await openPgliteStore({ dataDir: dir, log: silentLog });
    try {
      const refused = await openPgliteStore({ dataDir: dir, log: silentLog, lockWaitMs: 0 }).catch((err: unknown) => err);
      expect(refused).toMatchObject({ code: 'STORE_BUSY' });
      expect((refused as Error).message).toContain(`pid ${process.pid} (a relay)`);
    } finally {
      await first.close();
    }
    expect(existsSync(join(dir, 'pgdata.lock'))).toBe(false);
  });

  it('takes the folder over at once from a relay that died holding it, however recent its lock', async () => {
    // A lock written a moment ago by a process that is gone (a pid that has exited).
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const lock = join(dir, 'pgdata.lock');
    mkdirSync(lock);
    writeFileSync(join(lock, 'owner.json'), JSON.stringify({ pid: Number(dead.stdout), start: null, host: hostname(), since: new Date().toISOString(), purpose: 'a relay' }));
    const store = await openPgliteStore({ dataDir: dir, log: silentLog });
    try {
      await store.createStream('taken-over', 'h');
      expect((await store.getStream('taken-over'))?.head).toBe(0);
    } finally {
      await store.close();
    }
    expect(existsSync(lock)).toBe(false);
  });
});
