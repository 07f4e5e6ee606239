// A node stays reachable while it is busy: every local RPC call has a connection of its own (none is
// reused after the node's server closed it idle). A real node and real sockets.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startNode } from '../node-agent/host/node/index.js';
import { callNode } from '../node-agent/host/rpc/client.js';
import { until } from './helpers/until.js';

let base: string;

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'nexus-node-liveness-'));
});
afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

it('opens a connection per RPC call and closes it once answered, so no call goes out on a connection the node closed', async () => {
  const node = await startNode({ home: join(base, 'home'), ui: false, log: () => undefined });
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
