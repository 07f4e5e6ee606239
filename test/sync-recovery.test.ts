// The sync client recovering from what goes wrong on the other side: a relay restored from a backup
// (BAD_CURSOR, or acknowledged ops gone), and a page that cannot be stored; and pages that queue up
// while one is stored, which go into one transaction. A real SyncClient on a real store, against a real
// relay (PostgreSQL for the backup case, as an operator would restore one).
import { eq } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { tables, type Db, type Store } from '../node-agent/adapters/store/index.js';
import { SyncClient } from '../node-agent/host/sync/client.js';
import { positionKey, readPosition, writePosition } from '../node-agent/host/sync/state.js';
import { appendOps, type Projection } from '../node-agent/kernel/index.js';
import { newThreadId } from '../protocol/ids.js';
import { createLogger, silentLog, startRelay, type Relay } from '../server/index.js';
import { Forger, rawPeer } from './helpers/forge.js';
import { createStream as createRelayStream, relayFolders } from './helpers/relay.js';
import { useFreshStores } from './helpers/stores.js';
import { until } from './helpers/until.js';

const OPERATOR = 'sync-recovery-operator-token-0123456789';
const freshStore = useFreshStores('sync-recovery');
const clients: SyncClient[] = [];

afterAll(async () => {
  for (const c of clients) await c.stop().catch(() => undefined);
});

function createStream(relay: Relay, name: string): Promise<string> {
  return createRelayStream(relay.url, name, OPERATOR);
}

/** A node's side of sync without the daemon: one workspace's store, its own ops, the real client, a log kept here. */
class Node {
  readonly log: string[] = [];
  readonly who = new Forger();
  client: SyncClient | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  constructor(
    readonly store: Store,
    readonly origin: string,
    readonly projections: readonly Projection[] = PROJECTIONS,
  ) {}

  run = <T,>(fn: (db: Db) => Promise<T>): Promise<T> => {
    const next = this.queue.then(() => fn(this.store.db));
    this.queue = next.catch(() => undefined);
    return next;
  };

  async start(relay: string, stream: string, token: string): Promise<void> {
    this.client = new SyncClient({
      binding: { relay, stream, token, bound_at: new Date().toISOString() },
      origin: this.origin,
      projections: this.projections,
      run: this.run,
      log: createLogger({ component: 'sync', sink: (line) => this.log.push(line) }),
    });
    clients.push(this.client);
    await this.client.start();
  }

  async stop(): Promise<void> {
    await this.client?.stop();
    this.client = null;
  }

  /** Writes `n` ops of its own (threads to a person), as a command would. */
  async write(n: number): Promise<string[]> {
    const author = { workspace: this.who.workspace, origin: this.origin, now: () => new Date(), signer: this.who.signer, projections: this.projections };
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const t = newThreadId();
      const ops = await this.run((db) =>
        db.transaction((tx) =>
          appendOps(tx, author, [
            { operation: t, thread: t, session: null, kind: 'thread.opened', body: { parent: null, subject: `op ${i}`, opener: { handle: 'alice', session: null }, target: { kind: 'person', handle: 'bob' } } },
          ]),
        ),
      );
      ids.push(...ops.map((o) => o.id));
    }
    this.client?.kick();
    return ids;
  }

  status() {
    return this.client!.status();
  }

  async ids(): Promise<Set<string>> {
    return new Set((await this.run((db) => db.select({ id: tables.ops.id }).from(tables.ops))).map((r) => r.id));
  }
}

const PG_URL = process.env['TEST_DATABASE_URL'];
const pgSkip = await (async () => {
  if (!PG_URL) return 'TEST_DATABASE_URL is not set';
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 });
  return c.connect().then(
    () => (void c.end(), null),
    (e: Error) => `PostgreSQL did not answer (${e.message})`,
  );
})();
if (pgSkip) console.log(`sync-recovery: the restored-from-backup case is skipped: ${pgSkip}`);

describe.skipIf(pgSkip !== null)('a relay restored from a backup (PostgreSQL)', () => {
  const schema = `sync_recovery_${process.pid}_${Date.now().toString(36)}`;
  let admin: pg.Client;
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: PG_URL! });
    await admin.connect();
  });
  afterAll(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });

  const relayOpts = () => ({ port: 0, databaseUrl: PG_URL!, databaseSchema: schema, operatorToken: OPERATOR, log: silentLog });

  it('follows resume_from after BAD_CURSOR and pushes its own ops the relay lost; a fresh node then gets them all', async () => {
    let relay = await startRelay(relayOpts());
    const token = await createStream(relay, 'team');
    const a = new Node(await freshStore(), 'node-a');
    await a.start(relay.url, 'team', token);
    const before = await a.write(3);
    await until('the first ops acknowledged and echoed', async () => {
      const s = await a.status();
      return s.outbox === 0 && s.cursor === 3 ? s : undefined;
    });

    // The operator's backup, then more acknowledged work, then the restore of that backup.
    await admin.query(`CREATE TABLE "${schema}".backup_ops AS SELECT * FROM "${schema}".stream_ops`);
    await admin.query(`CREATE TABLE "${schema}".backup_streams AS SELECT * FROM "${schema}".streams`);
    const after = await a.write(3);
    await until('the later ops acknowledged', async () => {
      const s = await a.status();
      return s.outbox === 0 && s.cursor === 6 ? s : undefined;
    });
    await a.stop();
    await relay.close();
    await admin.query(`DELETE FROM "${schema}".stream_ops`);
    await admin.query(`INSERT INTO "${schema}".stream_ops SELECT * FROM "${schema}".backup_ops`);
    await admin.query(`UPDATE "${schema}".streams s SET head = b.head FROM "${schema}".backup_streams b WHERE s.name = b.name`);
    // Back at the same address: the node's position is kept per relay URL and stream.
    const port = relay.port;
    relay = await startRelay({ ...relayOpts(), port });
    try {
      await a.start(relay.url, 'team', token);
      const s = await until('A to recover', async () => {
        const s = await a.status();
        return s.connected && s.outbox === 0 && s.cursor === 6 ? s : undefined;
      });
      expect(s.refused).toBe(false);
      expect(a.log.some((l) => l.includes('BAD_CURSOR')), a.log.join('\n')).toBe(true);
      // New work still goes out.
      const more = await a.write(1);
      const fresh = new Node(await freshStore(), 'node-c');
      await fresh.start(relay.url, 'team', token);
      await until('a fresh node to hold every op of A', async () => {
        const held = await fresh.ids();
        return [...before, ...after, ...more].every((id) => held.has(id)) ? true : undefined;
      });
      const relayIds = (await admin.query<{ op_id: string }>(`SELECT op_id FROM "${schema}".stream_ops`)).rows.map((r) => r.op_id);
      expect(new Set(relayIds).size).toBe(relayIds.length);
      expect(relayIds).toHaveLength(7);
      await fresh.stop();
    } finally {
      await a.stop();
      await relay.close();
    }
  });

  it('pushes its own ops again when the relay’s head is below a seq it acknowledged, though its cursor is not past the head', async () => {
    const relay = await startRelay(relayOpts());
    try {
      const token = await createStream(relay, 'lost');
      const b = new Node(await freshStore(), 'node-b');
      const mine = await b.write(2);
      // As if a relay had acknowledged both at seqs up to 40 and then lost them, before this node read any.
      const key = positionKey(relay.url, 'lost');
      const localSeqs = await b.run((db) => db.select({ s: tables.ops.localSeq }).from(tables.ops).where(eq(tables.ops.origin, 'node-b')));
      await b.run((db) => writePosition(db, key, { cursor: 0, acked: Math.max(...localSeqs.map((r) => Number(r.s))), rejected: {}, acked_seq: 40 }));
      await b.start(relay.url, 'lost', token);
      await until('B to push its ops again', async () => {
        const s = await b.status();
        return s.outbox === 0 && s.cursor === 2 ? s : undefined;
      });
      const held = (await admin.query<{ op_id: string }>(`SELECT op_id FROM "${schema}".stream_ops WHERE stream = 'lost'`)).rows.map((r) => r.op_id);
      expect(held.sort()).toEqual([...mine].sort());
      expect((await b.run((db) => readPosition(db, key))).acked_seq).toBe(2);
      await b.stop();
    } finally {
      await relay.close();
    }
  });
});

describe('sync errors are kept and logged', () => {
  let relay: Relay;
  let folders: Awaited<ReturnType<typeof relayFolders>> | undefined;
  beforeAll(async () => {
    folders = await relayFolders();
    relay = await startRelay({ dataDir: folders.fresh(), operatorToken: OPERATOR, log: silentLog });
  });
  afterAll(async () => {
    await relay?.close();
    folders?.cleanup();
  });

  it('a page that cannot be stored: last_error stays through every reconnect until a page is stored, and each failure is logged', async () => {
    const token = await createStream(relay, 'pages');
    const writer = new Node(await freshStore(), 'writer');
    await writer.start(relay.url, 'pages', token);
    await writer.write(2);
    await until('the writer to push', async () => ((await writer.status()).outbox === 0 ? true : undefined));

    // A reader whose store refuses every page for now (a projection that throws, as a full disk would).
    let broken = true;
    const failing: Projection = {
      name: 'failing',
      apply: async () => {
        if (broken) throw new Error('the disk is full');
      },
    };
    const reader = new Node(await freshStore(), 'reader', [...PROJECTIONS, failing]);
    await reader.start(relay.url, 'pages', token);
    await until('two failed pages', async () => (reader.log.filter((l) => l.includes('the disk is full')).length >= 2 ? true : undefined), 30_000);
    // Reconnected (welcomed) in between, and the error is still shown.
    const s = await reader.status();
    expect(s.cursor).toBe(0);
    expect(s.last_error).toContain('the disk is full');
    expect(s.last_error).toContain('seqs 1..2');
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 100));
      expect((await reader.status()).last_error).not.toBeNull();
    }
    broken = false;
    const ok = await until('the page stored', async () => {
      const s = await reader.status();
      return s.cursor === 2 && s.caught_up ? s : undefined;
    });
    expect(ok.last_error).toBeNull();
    await reader.stop();
    await writer.stop();
  });

  it('a refusal by the relay is logged and kept', async () => {
    const token = await createStream(relay, 'refused');
    const n = new Node(await freshStore(), 'wrong-token');
    await n.start(relay.url, 'refused', `${token}x`);
    const s = await until('the refusal', async () => {
      const s = await n.status();
      return s.refused ? s : undefined;
    });
    expect(s.last_error).toMatch(/^UNAUTHORIZED/);
    expect(n.log.some((l) => l.includes('UNAUTHORIZED'))).toBe(true);
    await n.stop();
  });
});

describe('pages that queue up while one is stored', () => {
  let relay: Relay;
  let folders: Awaited<ReturnType<typeof relayFolders>> | undefined;
  beforeAll(async () => {
    folders = await relayFolders();
    // Pages of 100 ops, so a few hundred ops make many pages.
    relay = await startRelay({ dataDir: folders.fresh(), operatorToken: OPERATOR, log: silentLog, limits: { page_size: 100 } });
  });
  afterAll(async () => {
    await relay?.close();
    folders?.cleanup();
  });

  it('go into the next transaction together, in stream order, with the cursor after the last of them', async () => {
    const token = await createStream(relay, 'queued');
    const m = new Forger();
    const texts: string[] = [];
    // 15 pages: however many the first transaction takes on a busy machine, several are left to queue.
    for (let i = 0; i < 750; i++) texts.push(...m.thread(`thread ${i}`).texts);
    const peer = await rawPeer(relay.url, 'queued', token);
    for (let i = 0; i < texts.length; i += 200) await peer.push(texts.slice(i, i + 200));
    peer.close();

    // The first page's transaction waits inside the store until the pages behind it are checked and waiting.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const sizes: number[] = [];
    const held: Projection = {
      name: 'held',
      apply: async (_tx, ops) => {
        sizes.push(ops.length);
        if (sizes.length === 1) await gate;
      },
    };
    const reader = new Node(await freshStore(), 'reader', [...PROJECTIONS, held]);
    await reader.start(relay.url, 'queued', token);
    // Read from the client itself: its status goes through the store's queue, which the gate holds.
    const waiting = () => (reader.client as unknown as { waiting: Array<{ results: unknown }> }).waiting;
    const pages = texts.length / 100;
    try {
      // Four checked pages behind the held transaction, or every page it left when that is fewer. The
      // client stops reading at 8 waiting pages, so more than that never queue.
      await until('pages queued behind the held one', async () => {
        if (sizes.length === 0) return undefined;
        const checked = waiting().filter((p) => p.results !== null).length;
        return checked >= Math.min(4, pages - sizes[0]! / 100) ? true : undefined;
      });
    } finally {
      open();
    }
    const done = await until('all stored', async () => {
      const s = await reader.status();
      return s.cursor === texts.length && s.caught_up ? s : undefined;
    });
    expect(done.last_error).toBeNull();
    // The first transaction took what had arrived when it began: one page, or a few on a busy machine.
    expect(sizes[0]! % 100).toBe(0);
    expect(sizes[0]).toBeLessThan(texts.length);
    // The pages that waited went in together (up to 2,000 ops a transaction), so fewer transactions than pages.
    expect(sizes.length).toBeLessThan(texts.length / 100);
    expect(Math.max(...sizes)).toBeGreaterThanOrEqual(300);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(texts.length);
    // Each op once, in the order of the stream.
    const rows = await reader.run((db) => db.select({ id: tables.ops.id }).from(tables.ops).orderBy(tables.ops.localSeq));
    expect(rows.map((r) => r.id)).toEqual(texts.map((t) => (JSON.parse(t) as { id: string }).id));
    expect((await reader.run((db) => readPosition(db, positionKey(relay.url, 'queued')))).cursor).toBe(texts.length);
    await reader.stop();
  });
});
