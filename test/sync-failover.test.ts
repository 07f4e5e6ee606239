// A node bound to several relay instances sharing one PostgreSQL database: when the instance it uses is
// killed mid-push, it moves to the next URL and every op reaches every member once. Real relays as child
// processes, real PostgreSQL, real SyncClients on real stores.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { createStore, openStore, tables, type Db, type Store } from '../node-agent/adapters/store/index.js';
import { parseRelayUrls } from '../node-agent/host/sync/binding.js';
import { SyncClient } from '../node-agent/host/sync/client.js';
import { appendOps } from '../node-agent/kernel/index.js';
import { newThreadId } from '../protocol/ids.js';
import { silentLog } from '../server/index.js';
import { Forger } from './helpers/forge.js';
import { RelayProcess } from './helpers/relay.js';
import { until } from './helpers/until.js';

const HOME = inject('nexusHome');
const PG_URL = process.env['TEST_DATABASE_URL'];
const pgSkip = await (async () => {
  if (!PG_URL) return 'TEST_DATABASE_URL is not set';
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 });
  return c.connect().then(
    () => (void c.end(), null),
    (e: Error) => `PostgreSQL did not answer (${e.message})`,
  );
})();
if (pgSkip) console.log(`sync-failover: skipped: ${pgSkip}`);

describe('binding several relay URLs', () => {
  it('takes repeated URLs and comma lists, in order, without repeats', () => {
    expect(parseRelayUrls(['http://a:1,http://b:2/', 'http://c:3', 'http://a:1'])).toEqual(['http://a:1', 'http://b:2', 'http://c:3']);
  });
});

describe.skipIf(pgSkip !== null)('failing over between relay instances (PostgreSQL)', () => {
  const database = `nexus_failover_${process.pid}_${Date.now().toString(36)}`;
  let admin: pg.Client;
  let base: string;
  const relays: RelayProcess[] = [];
  const stores: Store[] = [];
  const clients: SyncClient[] = [];

  beforeAll(async () => {
    base = mkdtempSync(join(tmpdir(), 'nexus-sync-failover-'));
    admin = new pg.Client({ connectionString: PG_URL! });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${database}"`);
  });
  afterAll(async () => {
    for (const c of clients) await c.stop().catch(() => undefined);
    for (const s of stores) await s.close().catch(() => undefined);
    for (const r of relays) await r.stop('SIGKILL').catch(() => undefined);
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await admin.end();
    rmSync(base, { recursive: true, force: true });
  });

  /** A node's side of sync: its store, the real client bound to `urls`, a command queue. */
  async function node(name: string, urls: string[], token: string) {
    const dir = join(base, name);
    await createStore(dir, HOME);
    const store = await openStore(dir);
    stores.push(store);
    let queue: Promise<unknown> = Promise.resolve();
    const run = <T,>(fn: (db: Db) => Promise<T>): Promise<T> => {
      const next = queue.then(() => fn(store.db));
      queue = next.catch(() => undefined);
      return next;
    };
    const client = new SyncClient({
      binding: { relay: urls[0]!, relays: urls, stream: 'team', token, bound_at: new Date().toISOString() },
      origin: name,
      projections: PROJECTIONS,
      run,
      log: silentLog,
    });
    clients.push(client);
    await client.start();
    const who = new Forger();
    return {
      client,
      /** Writes `n` ops of its own, as a command would, and kicks the push. */
      write: async (n: number): Promise<string[]> => {
        const author = { workspace: who.workspace, origin: name, now: () => new Date(), signer: who.signer, projections: PROJECTIONS };
        const items = Array.from({ length: n }, (_, i) => {
          const t = newThreadId();
          return { operation: t, thread: t, session: null, kind: 'thread.opened' as const, body: { parent: null, subject: `op ${i}`, opener: { handle: 'alice', session: null }, target: { kind: 'person' as const, handle: 'bob' } } };
        });
        const ops = await run((db) => db.transaction((tx) => appendOps(tx, author, items)));
        client.kick();
        return ops.map((o) => o.id);
      },
      ids: async () => new Set((await run((db) => db.select({ id: tables.ops.id }).from(tables.ops))).map((r) => r.id)),
    };
  }

  it('moves to the next instance when the one in use is killed mid-push: every op arrives once', async () => {
    const url = new URL(PG_URL!);
    url.pathname = `/${database}`;
    const first = new RelayProcess(join(base, 'unused-a'), url.toString());
    const second = new RelayProcess(join(base, 'unused-b'), url.toString());
    relays.push(first, second);
    await first.start();
    await second.start();
    const token = await first.createStream('team');
    const urls = [first.url, second.url];
    const pusher = await node('node-push', urls, token);
    const watcher = await node('node-watch', urls, token);
    await until('both nodes connected to the first instance', async () => {
      const [p, w] = [await pusher.client.status(), await watcher.client.status()];
      return p.connected && w.connected && p.relay === first.url && w.relay === first.url ? true : undefined;
    });

    const written: string[] = [];
    for (let round = 0; round < 20; round++) {
      written.push(...(await pusher.write(10)));
      // Mid-run, with pushes in flight and pages on their way: the instance dies without a goodbye.
      if (round === 9) await first.stop('SIGKILL');
      await new Promise((r) => setTimeout(r, 20));
    }

    await until('the watcher holds every op the pusher wrote, and the pusher has every ack', async () => {
      const have = await watcher.ids();
      return written.every((id) => have.has(id)) && (await pusher.client.status()).outbox === 0 ? true : undefined;
    });
    const [p, w] = [await pusher.client.status(), await watcher.client.status()];
    expect(p.relay).toBe(second.url);
    expect(w.relay).toBe(second.url);
    expect(p.outbox).toBe(0);
    // Once on the stream, once in each store: the watcher took each seq in exactly once across both instances.
    const db = new pg.Client({ connectionString: url.toString() });
    await db.connect();
    try {
      const r = await db.query<{ n: string; distinct_ids: string }>(`SELECT count(*) AS n, count(DISTINCT op_id) AS distinct_ids FROM stream_ops WHERE stream = 'team'`);
      expect(Number(r.rows[0]!.n)).toBe(written.length);
      expect(Number(r.rows[0]!.distinct_ids)).toBe(written.length);
    } finally {
      await db.end();
    }
    expect(w.received).toBe(written.length);
    expect(w.cursor).toBe(written.length);
    expect(await pusher.ids()).toEqual(new Set(written));
  });
});
