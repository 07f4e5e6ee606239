// Requests applied once: every command a CLI verb runs carries an idempotency key, and a command that
// writes (send, reply, withdraw, keys.rotate) is applied once per key. So a command retried directly after
// the node it asked stopped mid-request finds the first attempt's write instead of writing again.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAdaptorServer } from '@hono/node-server';
import { and, count, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { acquireLock } from '../../infra/index.js';
import { NODE_PURPOSE, openStore, tables, type Store } from '../../node-agent/adapters/store/index.js';
import { findWorkspace, type Workspace } from '../../node-agent/adapters/workspace/index.js';
import { hostFor, realDeps } from '../../node-agent/host/index.js';
import { addToRegistry, nodePaths } from '../../node-agent/host/node/index.js';
import { nodeLockPath, writeInfo } from '../../node-agent/host/node/files.js';
import { routed } from '../../node-agent/host/remote.js';
import { callNode } from '../../node-agent/host/rpc/client.js';
import { rpcApp, type RpcBackend } from '../../node-agent/host/rpc/server.js';
import { CLI_HANDOVER } from '../../node-agent/cli/handover.js';
import { packageVersion } from '../../node-agent/paths.js';
import { newRequestKey, type SendInput } from '../../protocol/commands.js';
import { NexusError } from '../../protocol/errors.js';
import { makeWorkspace, runCli, type TestWorkspace } from '../helpers/workspace.js';

const SEND: SendInput = { to: '@bob', subject: 'once', text: 'only once, please', caller: { actor: 'alice', session: null, hop: null } };

async function threadsOpened(store: Store): Promise<number> {
  const [row] = await store.db.select({ n: count() }).from(tables.ops).where(eq(tables.ops.kind, 'thread.opened'));
  return Number(row!.n);
}

describe('a keyed request on a host', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace({ git: false });
  });
  afterAll(() => ws.cleanup());

  it('is applied once per key: the same key gets the first receipt and writes nothing more; a new key writes again', async () => {
    const key = newRequestKey();
    const first = await ws.inproc!.serve((h) => h.run('send', SEND, { request: key }));
    const again = await ws.inproc!.serve((h) => h.run('send', SEND, { request: key }));
    expect(again).toEqual(first);
    expect(await ws.withStore(threadsOpened)).toBe(1);
    await ws.inproc!.serve((h) => h.run('send', SEND, { request: newRequestKey() }));
    expect(await ws.withStore(threadsOpened)).toBe(2);
  });

  it('gives a refusal again for a key whose command was refused, and refuses a key used for another command', async () => {
    const key = newRequestKey();
    const refused = { thread: 't-01AAAAAAAAAAAAAAAAAAAAAAAA', escalate: false, text: 'x', caller: SEND.caller };
    await expect(ws.inproc!.serve((h) => h.run('reply', refused, { request: key }))).rejects.toMatchObject({ code: 'UNKNOWN_THREAD' });
    const sent = newRequestKey();
    await ws.inproc!.serve((h) => h.run('send', SEND, { request: sent }));
    const reply = { thread: 't-01AAAAAAAAAAAAAAAAAAAAAAAA', escalate: false, text: 'x', caller: SEND.caller };
    await expect(ws.inproc!.serve((h) => h.run('reply', reply, { request: sent }))).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });
});

describe('a command retried directly after its node stopped mid-request', () => {
  let ws: TestWorkspace;
  let workspace: Workspace;
  let home: string;
  let release: (() => void) | null = null;
  let server: Server | null = null;
  /** The routes the dying node was asked on, in order. */
  const asked: string[] = [];
  beforeAll(async () => {
    ws = await makeWorkspace({ git: false, real: true });
    workspace = findWorkspace(ws.root);
    home = mkdtempSync(join(tmpdir(), 'nexus-requests-home-'));
    symlinkSync(join(inject('nexusHome'), 'cache'), join(home, 'cache'));
    const paths = nodePaths(home);
    mkdirSync(paths.dir, { recursive: true });
    addToRegistry(paths, workspace.id, workspace.paths.root);
    // This process stands in for the node: it holds the node lock and answers on the node's socket.
    release = await acquireLock(nodeLockPath(paths), { waitMs: 1_000, purpose: NODE_PURPOSE, home, busy: () => new Error('node lock busy') });
    writeInfo(paths, { pid: process.pid, started_at: new Date().toISOString(), socket: paths.socket, home });
  });
  afterAll(async () => {
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    release?.();
    rmSync(home, { recursive: true, force: true });
    await ws.cleanup();
  });

  /**
   * A node that applies the command it is asked for (the real host on the real store, the real RPC route),
   * then stops before answering: it closes the store and drops the connection. `lose` runs on the store
   * before it closes, for a node that stopped even before it kept its answer.
   */
  async function dyingNode(lose?: (store: Store) => Promise<void>): Promise<void> {
    const store = await openStore(workspace.paths.store);
    const host = hostFor(realDeps(workspace, store.db));
    const socket = nodePaths(home).socket;
    rmSync(socket, { force: true });
    const run: RpcBackend['run'] = async (name, _ws, input, opts) => {
      const out = await host.run(name as 'send', input as SendInput, opts);
      await lose?.(store);
      await store.close();
      server!.closeAllConnections();
      return out as never;
    };
    // It takes handed-over nxc verbs too (cli/handover.ts), and dies the same way in their command.
    const app = rpcApp({ run }, { home, version: packageVersion(), serves: () => true, run }, [CLI_HANDOVER]);
    asked.length = 0;
    const fetch: typeof app.fetch = (req, ...rest) => {
      asked.push(new URL(req.url).pathname);
      return app.fetch(req, ...rest);
    };
    server = createAdaptorServer({ fetch }) as Server;
    await new Promise<void>((resolve) => server!.listen(socket, () => resolve()));
  }

  async function stopNode(): Promise<void> {
    await new Promise<void>((r) => server!.close(() => r()));
    server = null;
  }

  const env = () => ({ ...process.env, NEXUS_HOME: home });

  it('finds the first write and answers with its receipt: one thread, not two', async () => {
    await dyingNode();
    const r = await routed(workspace, (run) => run('send', SEND), env());
    await stopNode();
    expect(r.via).toBe('direct');
    const store = await openStore(workspace.paths.store);
    try {
      expect(await threadsOpened(store)).toBe(1);
      const [opened] = await store.db.select({ thread: tables.ops.thread }).from(tables.ops).where(eq(tables.ops.kind, 'thread.opened'));
      expect(r.result.thread).toBe(opened!.thread);
    } finally {
      await store.close();
    }
  });

  it('when the first attempt never kept its answer: ALREADY_APPLIED naming the thread, and nothing written again', async () => {
    let thread: string | null = null;
    await dyingNode(async (store) => {
      const [row] = await store.db.select().from(tables.requests).where(and(eq(tables.requests.command, 'send'), sql`${tables.requests.result} is not null`)).orderBy(sql`${tables.requests.at} desc`).limit(1);
      thread = row!.thread;
      await store.db.update(tables.requests).set({ result: null }).where(eq(tables.requests.key, row!.key));
    });
    const err = await routed(workspace, (run) => run('send', { ...SEND, subject: 'twice?' }), env()).then(
      () => null,
      (e: unknown) => e,
    );
    await stopNode();
    expect(err).toBeInstanceOf(NexusError);
    expect(err).toMatchObject({ code: 'ALREADY_APPLIED', details: { thread } });
    expect((err as NexusError).exitCode).toBe(1);
    const store = await openStore(workspace.paths.store);
    try {
      expect(await threadsOpened(store)).toBe(2);
    } finally {
      await store.close();
    }
  });

  it('a verb bin/nxc handed to the node runs in the client after the node died in it, with the same keys: one thread, not two', async () => {
    const before = await (async () => {
      const store = await openStore(workspace.paths.store);
      try {
        return await threadsOpened(store);
      } finally {
        await store.close();
      }
    })();
    await dyingNode();
    const r = await runCli('nxc', ['send', '@bob', '--subject', 'handed over once', '--json', 'only once'], workspace.paths.root, { env: { NEXUS_HOME: home, NXC_ACTOR: 'alice' } });
    await stopNode();
    expect(r.code, r.stdout + r.stderr).toBe(0);
    // Handed over, then never asked again: the retry went straight to the store.
    expect(asked).toEqual(['/v1/cli']);
    // Run directly after the node stopped answering: registered, so the warning says no node answers.
    expect(r.json.warnings).toEqual([expect.objectContaining({ class: 'service_not_running' })]);
    const store = await openStore(workspace.paths.store);
    try {
      expect(await threadsOpened(store)).toBe(before + 1);
      const [opened] = await store.db.select({ thread: tables.ops.thread }).from(tables.ops).where(eq(tables.ops.kind, 'thread.opened')).orderBy(sql`${tables.ops.localSeq} desc`).limit(1);
      expect(r.json.thread).toBe(opened!.thread);
    } finally {
      await store.close();
    }
  });
});

describe('a keyed request through a real node', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace({ git: false });
    await ws.startNode();
  });
  afterAll(() => ws.cleanup());

  it('carries its key over the socket: the same key twice is one send; a malformed key is BAD_REQUEST', async () => {
    const socket = nodePaths(ws.home!).socket;
    const key = newRequestKey();
    const first = await callNode(socket, 'send', ws.id, SEND, { request: key });
    const again = await callNode(socket, 'send', ws.id, SEND, { request: key });
    expect(again.thread).toBe(first.thread);
    const all = await ws.status(true);
    expect(all.operations).toHaveLength(1);
    await expect(callNode(socket, 'send', ws.id, SEND, { request: 'not-a-key' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });
});
