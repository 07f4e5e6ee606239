// The node reports through the shared logger: JSON lines of the relay's shape, with the node's own
// lines, each sync client's and the dashboard's told apart by `component` and carrying their workspace.
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { createLogger } from '../../infra/index.js';
import { addToRegistry, nodePaths, startNode, type RunningNode } from '../../node-agent/host/node/index.js';
import { writeBinding } from '../../node-agent/host/sync/index.js';
import { findWorkspace } from '../../node-agent/adapters/workspace/index.js';
import { until } from '../helpers/until.js';
import { runMain } from '../helpers/host.js';
import { callNode } from '../../node-agent/host/rpc/client.js';
import { makeWorkspace } from '../helpers/workspace.js';
import { unusedPort } from '../helpers/ports.js';

type Line = { ts: string; level: string; component: string; msg: string; [k: string]: unknown };

describe('the node log', () => {
  let node: RunningNode | null = null;
  afterAll(async () => {
    await node?.close();
  });

  it('is JSON lines: the node names what it serves, the sync client of a workspace reports its failure with workspace and stream', async () => {
    const ws = await makeWorkspace({ real: true });
    const home = join(ws.root, '..', 'nexus-home');
    mkdirSync(home, { recursive: true });
    if (!existsSync(join(home, 'cache'))) symlinkSync(join(inject('nexusHome'), 'cache'), join(home, 'cache'));
    const workspace = findWorkspace(ws.root, {});
    writeBinding(workspace.paths, { relay: `http://127.0.0.1:${await unusedPort()}`, stream: 'logged', token: 'nxr_x', bound_at: new Date().toISOString() });
    addToRegistry(nodePaths(home), workspace.id, ws.root);

    const raw: string[] = [];
    node = await startNode({ home, ui: false, log: createLogger({ component: 'node', level: 'info', sink: (l) => raw.push(l) }) });
    const lines = () => raw.map((l) => JSON.parse(l) as Line);
    const sync = await until('a sync failure logged', async () => lines().find((l) => l.component === 'sync'), 30_000);

    for (const l of raw) expect(l.endsWith('\n')).toBe(true);
    const all = lines();
    for (const l of all) {
      expect(Number.isNaN(Date.parse(l.ts))).toBe(false);
      expect(['debug', 'info', 'warn', 'error']).toContain(l.level);
    }
    expect(all.find((l) => l.component === 'node' && l.msg.startsWith('serving '))).toMatchObject({ level: 'info', workspace: workspace.id });
    expect(all.find((l) => l.component === 'node' && l.msg.includes('listening on'))).toMatchObject({ pid: process.pid, workspaces: 1 });
    expect(sync).toMatchObject({ level: 'warn', workspace: workspace.id, stream: 'logged' });
    // The client's own lines no longer repeat the stream in the text: it is a field.
    expect(sync.msg.startsWith('sync logged')).toBe(false);
  });

  it('from `nxs node run`, every line it writes is a JSON line, its first one too (a log file of `nxs node start` reads with jq)', async () => {
    const ws = await makeWorkspace({ real: true });
    const home = ws.ownHome();
    const env = { ...process.env, NEXUS_HOME: home, NEXUS_LOG_LEVEL: 'info' };
    const running = runMain('nxs', ['node', 'run'], { env, cwd: ws.root });
    const info = join(home, 'node', 'node.json');
    await until('the node answers', async () => (existsSync(info) ? true : undefined), 30_000);
    const socket = join(home, 'node', 'node.sock');
    await until('the node answers', async () => callNode(socket, 'node.info', null, {}).then(() => true, () => undefined), 30_000);
    await callNode(socket, 'node.shutdown', null, {});
    const r = await running;
    try {
      const written = (r.stdout + r.stderr).split('\n').filter(Boolean);
      expect(written.length).toBeGreaterThan(0);
      for (const l of written) expect(() => JSON.parse(l), l).not.toThrow();
      expect(JSON.parse(written.find((l) => l.includes(' running; socket '))!)).toMatchObject({ level: 'info', component: 'node', socket });
    } finally {
      await ws.cleanup();
    }
  });
});
