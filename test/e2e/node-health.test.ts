// What an operator watches on a node: /healthz and /metrics, on loopback by default, with the figures
// that say whether the node keeps up: served workspaces, sync lag and outbox, sessions running, turns
// started and refused by reason, the working copy's queue. A real node in this process, a real store, a
// real session process; nothing is timed.
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../infra/index.js';
import { NexusError } from '../../protocol/errors.js';
import { addToRegistry, nodePaths, runningNode, startNode, type RunningNode } from '../../node-agent/host/node/index.js';
import { NODE_METRIC_SOURCES, renderMetrics } from '../../node-agent/host/node/metrics.js';
import { writeBinding } from '../../node-agent/host/sync/index.js';
import { findWorkspace } from '../../node-agent/adapters/workspace/index.js';
import { runMain } from '../helpers/host.js';
import { callNode } from '../../node-agent/host/rpc/client.js';
import { until } from '../helpers/until.js';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { unusedPort } from '../helpers/ports.js';

/** The value of one series in a Prometheus text, or undefined when it is not there. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("the node's health and metrics", () => {
  let ws: TestWorkspace;
  let home: string;
  let node: RunningNode;
  let id: string;
  /** The sleeper's thread: withdrawn at the end, so its stopped turn wakes no second one for the follow-up. */
  let sleeping: string | null = null;
  beforeAll(async () => {
    ws = await makeWorkspace({ real: true });
    ws.persona('sleeper', { mode: 'hang' });
    home = ws.ownHome();
    const workspace = findWorkspace(ws.root, {});
    id = workspace.id;
    // Bound to a relay nobody runs: what it writes waits in the outbox.
    writeBinding(workspace.paths, { relay: `http://127.0.0.1:${await unusedPort()}`, stream: 'watched', token: 'nxr_x', bound_at: new Date().toISOString() });
    addToRegistry(nodePaths(home), id, ws.root);
    node = await startNode({ home, ui: false, log: silentLogger });
  });
  afterAll(async () => {
    if (sleeping !== null) await runMain('nxc', ['withdraw', '--thread', sleeping, '--json'], { env: env(), cwd: ws.root });
    await node?.close();
    await ws.cleanup();
  });

  const env = () => ({ ...process.env, NEXUS_HOME: home, NXC_ACTOR: 'alice' });

  it('listens on loopback by default and says where in its info file', async () => {
    expect(node.health).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(runningNode(nodePaths(home))?.health).toBe(node.health);
    const health = await fetch(`${node.health}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ ok: true, pid: process.pid, workspaces: { served: 1, registered: 1 } });
  });

  it('counts turns started and refused by reason, sessions running, and the outbox of a workspace whose relay is away', async () => {
    const sent = await runMain('nxc', ['send', 'sleeper', 'work on it', '--json'], { env: env(), cwd: ws.root });
    expect(sent.code).toBe(0);
    const thread = sent.json.thread as string;
    sleeping = thread;
    // A follow-up while its turn still runs: the turn is due and not started.
    const again = await runMain('nxc', ['reply', '--thread', thread, 'and this too', '--json'], { env: env(), cwd: ws.root });
    expect(again.json.warnings.map((w: { reason?: string }) => w.reason)).toContain('already_running');

    const res = await fetch(`${node.health}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const w = `workspace="${id}"`;
    expect(sample(text, 'nexus_node_workspaces_served')).toBe(1);
    expect(sample(text, `nexus_node_turns_started_total{${w}}`)).toBe(1);
    expect(sample(text, `nexus_node_turns_refused_total{${w},reason="already_running"}`)).toBe(1);
    expect(sample(text, `nexus_node_sessions_running{${w}}`)).toBe(1);
    expect(sample(text, `nexus_node_lease_queue_length{${w}}`)).toBe(0);
    expect(sample(text, `nexus_node_sync_connected{${w}}`)).toBe(0);
    expect(sample(text, `nexus_node_sync_lag{${w}}`)).toBe(0);
    // The ops written (a thread, a session, its turn, two messages) wait for the relay.
    await until('the outbox counted', async () => ((sample(await (await fetch(`${node.health}/metrics`)).text(), `nexus_node_sync_outbox{${w}}`) ?? 0) > 0 ? true : undefined));
    // Every family declares its type once, before its series.
    for (const name of ['nexus_node_sync_lag', 'nexus_node_turns_refused_total', 'nexus_node_lease_queue_length']) {
      expect(text.split('\n').filter((l) => l.startsWith(`# TYPE ${name} `))).toHaveLength(1);
    }
  });

  it('a send while the relay is away exits 0 and says relay_unreachable, with the ops waiting in the outbox', async () => {
    await until('the relay found away', async () => ((await callNode(node.socket, 'sync.status', id, {})) as { last_error: string | null }).last_error ? true : undefined);
    const json = await runMain('nxc', ['send', '@bob', '--subject', 'away', 'are you there?', '--json'], { env: env(), cwd: ws.root });
    expect(json.code, json.stdout + json.stderr).toBe(0);
    const warning = (json.json.warnings as Array<{ class: string; outbox?: number; message: string }>).find((w) => w.class === 'relay_unreachable');
    expect(warning?.outbox).toBeGreaterThan(0);
    expect(warning?.message).toContain(`${warning?.outbox} op(s)`);
    const text = await runMain('nxc', ['send', '@bob', '--subject', 'away', 'still there?'], { env: env(), cwd: ws.root });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/warning relay_unreachable: the relay cannot be reached .* wait in the outbox/);
  });

  it('is one list of sources: a figure added there is scraped with no other edit', async () => {
    const extended = [...NODE_METRIC_SOURCES, async () => [{ name: 'nexus_node_example_total', type: 'counter' as const, help: 'an example', samples: [[{ workspace: 'w' }, 3] as [Record<string, string>, number]] }]];
    const families = (await Promise.all(extended.map((s) => s({ served: { all: () => [], size: 0 } as never, counters: { turnsStarted: new Map(), turnsRefused: new Map() } as never, version: 'v', registered: () => 0 })))).flat();
    expect(renderMetrics(families)).toContain('nexus_node_example_total{workspace="w"} 3\n');
  });

  it('refuses a taken metrics port with ADDRESS_IN_USE, and runs no node', async () => {
    const other = join(ws.root, '..', 'other-home');
    const held = createServer();
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', r));
    const port = (held.address() as { port: number }).port;
    try {
      const err = await startNode({ home: other, ui: false, log: silentLogger, health: { port } }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(NexusError);
      expect((err as NexusError).code).toBe('ADDRESS_IN_USE');
      expect(runningNode(nodePaths(other))).toBeNull();
    } finally {
      await new Promise<void>((r) => held.close(() => r()));
    }
  });
});
