// A node stays reachable while it is busy: every local RPC call has a connection of its own (none is
// reused after the node's server closed it idle), and a long catch-up lets the event loop turn between
// pages. A real node, a real relay, real stores and sockets.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it, inject } from 'vitest';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { createStore, openStore, type Db, type Store } from '../node-agent/adapters/store/index.js';
import { startNode } from '../node-agent/host/node/index.js';
import { callNode } from '../node-agent/host/rpc/client.js';
import { SyncClient } from '../node-agent/host/sync/index.js';
import { silentLog, startRelay, type Relay } from '../server/index.js';
import { Forger, rawPeer } from './helpers/forge.js';
import { silentLogger } from '../infra/index.js';
import { until } from './helpers/until.js';

const HOME = inject('nexusHome');
const OPERATOR = 'node-liveness-operator-token-0123456789';
let base: string;
let relay: Relay | undefined;
const stores: Store[] = [];

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'nexus-node-liveness-'));
  relay = await startRelay({ port: 0, dataDir: join(base, 'relay'), operatorToken: OPERATOR, log: silentLog });
});
afterAll(async () => {
  for (const s of stores) await s.close().catch(() => undefined);
  await relay?.close();
  rmSync(base, { recursive: true, force: true });
});

it('opens a connection per RPC call and closes it once answered, so no call goes out on a connection the node closed', async () => {
  const node = await startNode({ home: join(base, 'home'), ui: false, log: silentLogger });
  const sockets: Socket[] = [];
  const onSocket = (m: unknown) => void sockets.push((m as { socket: Socket }).socket);
  subscribe('net.client.socket', onSocket);
  try {
    for (let i = 0; i < 3; i++) expect((await callNode(node.socket, 'node.info', null, {})).pid).toBe(process.pid);
    expect(sockets).toHaveLength(3);
    await until('every call connection closed', async () => (sockets.every((s) => s.destroyed) ? true : undefined));
  } finally {
    unsubscribe('net.client.socket', onSocket);
    await node.close();
  }
});

it('lets the event loop turn between the pages of a catch-up', async () => {
  const res = await fetch(`${relay!.url}/v1/streams`, { method: 'POST', headers: { authorization: `Bearer ${OPERATOR}` }, body: JSON.stringify({ name: 'backlog' }) });
  const { token } = (await res.json()) as { token: string };
  const writer = new Forger();
  const peer = await rawPeer(relay!.url, 'backlog', token);
  const THREADS = 1_500; // 3,000 ops: six pages of 500
  try {
    const pushes: Array<Promise<unknown>> = [];
    for (let i = 0; i < THREADS; i += 250) pushes.push(peer.push(Array.from({ length: 250 }, (_, j) => writer.thread(`backlog ${i + j}`).texts).flat()));
    await Promise.all(pushes);
  } finally {
    peer.close();
  }

  await createStore(join(base, 'reader'), HOME);
  const store = await openStore(join(base, 'reader'));
  stores.push(store);
  let queue: Promise<unknown> = Promise.resolve();
  const run = <T,>(fn: (db: Db) => Promise<T>): Promise<T> => {
    const next = queue.then(() => fn(store.db));
    queue = next.catch(() => undefined);
    return next;
  };
  // Counts event-loop turns: a callback in each turn's check phase, queued again for the next.
  let turns = 0;
  let ticking = true;
  const tick = () => {
    turns++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const seen: number[] = [];
  const client = new SyncClient({
    binding: { relay: relay!.url, stream: 'backlog', token, bound_at: new Date().toISOString() },
    origin: 'reader',
    projections: PROJECTIONS,
    run,
    log: silentLogger,
    onIngested: () => void seen.push(turns),
  });
  try {
    await client.start();
    await until('the catch-up stored', async () => ((await client.status()).cursor >= THREADS * 2 ? true : undefined));
  } finally {
    ticking = false;
    await client.stop();
  }
  expect(seen.length).toBeGreaterThan(1);
  for (let i = 1; i < seen.length; i++) expect(seen[i], `turns before page ${i + 1}`).toBeGreaterThan(seen[i - 1]!);
});
