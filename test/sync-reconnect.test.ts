// The sync client's reconnect policy across a binding's relay URLs: a connection that closes (or is
// refused) moves to the next URL at once, the backoff grows only after every URL failed in turn, and a
// relay that goes silent without closing is pinged and dropped. One real relay (PGlite) seen through two
// fault proxies, so each proxy is an instance the test can kill or partition; a real SyncClient on a
// real store. Order and counts are asserted, never timings: the client says each attempt and its delay
// in a debug line.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import type { Db } from '../node-agent/adapters/store/index.js';
import { reconnectDelay, SyncClient, type Liveness } from '../node-agent/host/sync/client.js';
import { createLogger, startRelay, silentLog, type Relay } from '../server/index.js';
import { startFaultProxy, type FaultProxy } from './helpers/fault-proxy.js';
import { createStream, relayFolders } from './helpers/relay.js';
import { useFreshStores } from './helpers/stores.js';
import { until } from './helpers/until.js';

const OPERATOR = 'sync-reconnect-operator-token-0123456789';
const freshStore = useFreshStores('sync-reconnect');
const clients: SyncClient[] = [];
const proxies: FaultProxy[] = [];
let relay: Relay;
let folders: Awaited<ReturnType<typeof relayFolders>> | undefined;
let token: string;

beforeAll(async () => {
  folders = await relayFolders();
  relay = await startRelay({ dataDir: folders.fresh(), operatorToken: OPERATOR, log: silentLog });
  token = await createStream(relay.url, 'team', OPERATOR);
});
afterAll(async () => {
  for (const c of clients) await c.stop().catch(() => undefined);
  for (const p of proxies) await p.close().catch(() => undefined);
  await relay?.close();
  folders?.cleanup();
});

type Attempt = { relay: string; delay_ms: number };

/** Two "instances" (proxies in front of the relay) and a client bound to both, its debug lines kept. */
async function bound(liveness?: Liveness) {
  const port = Number(new URL(relay.url).port);
  const a = await startFaultProxy({ port });
  const b = await startFaultProxy({ port });
  proxies.push(a, b);
  const store = await freshStore();
  let queue: Promise<unknown> = Promise.resolve();
  const run = <T,>(fn: (db: Db) => Promise<T>): Promise<T> => {
    const next = queue.then(() => fn(store.db));
    queue = next.catch(() => undefined);
    return next;
  };
  const lines: Array<{ msg: string; relay?: string; delay_ms?: number }> = [];
  const client = new SyncClient({
    binding: { relay: a.url, relays: [a.url, b.url], stream: 'team', token, bound_at: new Date().toISOString() },
    origin: `node-${clients.length}`,
    projections: PROJECTIONS,
    run,
    log: createLogger({ component: 'sync', level: 'debug', sink: (line) => lines.push(JSON.parse(line) as { msg: string }) }),
    ...(liveness ? { liveness } : {}),
  });
  clients.push(client);
  await client.start();
  const attempts = (): Attempt[] => lines.filter((l) => l.msg.startsWith('connecting to ')).map((l) => ({ relay: l.relay!, delay_ms: l.delay_ms! }));
  const on = (url: string, timeoutMs?: number) =>
    until(
      `connected through ${url}`,
      async () => {
        const s = await client.status();
        return s.connected && s.relay === url ? true : undefined;
      },
      timeoutMs,
    );
  return { a, b, client, lines, attempts, on };
}

describe('reconnecting across relay URLs', () => {
  it('no delay before the first try of another URL; the backoff grows only after a full pass over every URL failed', () => {
    const half = () => 0.5;
    expect([1, 2, 3, 4, 5, 6].map((n) => reconnectDelay(n, 2, half))).toEqual([0, 150, 0, 300, 0, 600]);
    expect([1, 2, 3, 4, 5, 6].map((n) => reconnectDelay(n, 3, half))).toEqual([0, 0, 150, 0, 0, 300]);
    expect([1, 2, 3].map((n) => reconnectDelay(n, 1, half))).toEqual([150, 300, 600]);
  });

  it('after the instance in use is killed, the first attempt goes to the other URL with no delay; then every failed pass backs off once', async () => {
    const { a, b, attempts, on } = await bound();
    await on(a.url);
    expect(attempts()).toEqual([]);

    // The instance dies: its connections are cut and its port refuses.
    await a.close();
    await on(b.url);
    expect(attempts()[0]).toEqual({ relay: b.url, delay_ms: 0 });
    expect(attempts()).toHaveLength(1);
    expect(a.accepted()).toBe(1);

    // Both gone: the client alternates, trying the other URL at once and backing off after each full pass.
    await b.close();
    await until('four attempts after the second kill', async () => (attempts().length >= 5 ? true : undefined));
    const after = attempts().slice(1, 5);
    expect(after.map((x) => x.relay)).toEqual([a.url, b.url, a.url, b.url]);
    expect(after[0]!.delay_ms).toBe(0);
    expect(after[1]!.delay_ms).toBeGreaterThan(0);
    expect(after[2]!.delay_ms).toBe(0);
    expect(after[3]!.delay_ms).toBeGreaterThan(0);
  });

  it('a relay that goes silent without closing is pinged, dropped when it does not answer, and the next URL taken at once', async () => {
    const { a, b, lines, attempts, on } = await bound({ quietMs: 200, answerMs: 500 });
    await on(a.url);
    // A partition: no byte moves either way and nothing closes.
    a.pause();
    // Well under the 45 s a client waited on the relay's own pings alone.
    await on(b.url, 20_000);
    expect(lines.some((l) => l.msg === `${a.url}: no answer to a ping within 500 ms`)).toBe(true);
    expect(attempts()[0]).toEqual({ relay: b.url, delay_ms: 0 });
  });
});
