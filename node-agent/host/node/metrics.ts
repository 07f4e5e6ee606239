// What an operator watches on a node: `/healthz` and `/metrics` (Prometheus text, format 0.0.4) on a
// listener of their own, on loopback unless `--metrics-host` says otherwise. The figures come from one
// list of sources (NODE_METRIC_SOURCES): a new figure is one more source there. Labels are bounded: a
// served workspace's id, a refusal reason, the version; never a session, a thread or an address.
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isNull } from 'drizzle-orm';
import { NexusError } from '../../../protocol/errors.js';
import type { Logger } from '../../../infra/index.js';
import { tables } from '../../adapters/store/index.js';
import { spendFigures } from '../../capabilities/status/index.js';
import type { NodeCounters } from './counters.js';
import type { Served, ServedWorkspace } from './served.js';

export type MetricType = 'counter' | 'gauge';
/** One series: its labels (name to value) and its value. */
export type Sample = [labels: Readonly<Record<string, string>>, value: number];
/** One metric family as exposed: a name, its type, a line of help and its series. */
export type MetricFamily = { name: string; type: MetricType; help: string; samples: Sample[] };

/** What a source reads: the served workspaces, the counters kept since start, the build. */
export type NodeMetricsView = { served: Served; counters: NodeCounters; version: string; registered: () => number };

/** A source of families, read at each scrape. */
export type MetricSource = (view: NodeMetricsView) => Promise<MetricFamily[]>;

const perWorkspace = async (served: Served, read: (entry: ServedWorkspace) => Promise<number>): Promise<Sample[]> =>
  Promise.all(served.all().map(async (e): Promise<Sample> => [{ workspace: e.workspace.id }, await read(e)]));

/** In the workspace's queue: store reads never run beside a command. */
const inStore = <T>(served: Served, e: ServedWorkspace, fn: (db: ServedWorkspace['store']['db']) => Promise<T>) => served.inQueue(e, () => fn(e.store.db));

const build: MetricSource = async (v) => [
  { name: 'nexus_build_info', type: 'gauge', help: 'The running node: always 1, its version as a label.', samples: [[{ version: v.version }, 1]] },
];

const workspaces: MetricSource = async (v) => [
  { name: 'nexus_node_workspaces_served', type: 'gauge', help: 'Workspaces this node serves (their stores open).', samples: [[{}, v.served.size]] },
  { name: 'nexus_node_workspaces_registered', type: 'gauge', help: 'Workspaces registered with this node; more than served means one could not be opened (see the log).', samples: [[{}, v.registered()]] },
];

const sync: MetricSource = async (v) => {
  const bound = v.served.all().filter((e) => e.sync !== null);
  const status = await Promise.all(bound.map(async (e) => [e.workspace.id, await e.sync!.status()] as const));
  const rows = (pick: (s: (typeof status)[number][1]) => number) => status.map(([id, s]): Sample => [{ workspace: id }, pick(s)]);
  return [
    { name: 'nexus_node_sync_connected', type: 'gauge', help: 'Whether the bound workspace is connected to its relay (1) or not (0).', samples: rows((s) => (s.bound && s.connected ? 1 : 0)) },
    { name: 'nexus_node_sync_lag', type: 'gauge', help: 'Ops on the stream the workspace has not taken in yet.', samples: rows((s) => (s.bound ? s.lag : 0)) },
    { name: 'nexus_node_sync_outbox', type: 'gauge', help: 'Ops written here and not yet acknowledged by the relay.', samples: rows((s) => (s.bound ? s.outbox : 0)) },
    { name: 'nexus_node_sync_pending', type: 'gauge', help: 'Ops held for a key this node cannot place yet.', samples: rows((s) => (s.bound ? s.pending : 0)) },
  ];
};

const sessions: MetricSource = async (v) => [
  {
    name: 'nexus_node_sessions_running',
    type: 'gauge',
    help: 'Session turns whose process has not reported its end.',
    samples: await perWorkspace(v.served, (e) =>
      inStore(v.served, e, async (db) => (await db.select({ s: tables.sessionProcs.session }).from(tables.sessionProcs).where(isNull(tables.sessionProcs.endedAt))).length),
    ),
  },
];

const turns: MetricSource = async (v) => [
  {
    name: 'nexus_node_turns_started_total',
    type: 'counter',
    help: 'Session turns started since the node started.',
    samples: v.served.all().map((e): Sample => [{ workspace: e.workspace.id }, v.counters.turnsStarted.get(e.workspace.id) ?? 0]),
  },
  {
    name: 'nexus_node_turns_refused_total',
    type: 'counter',
    help: 'Turns that were due and not started since the node started, by reason (already_running, operation_budget_exhausted, persona_missing, start_failed, ...).',
    samples: [...v.counters.turnsRefused].flatMap(([workspace, byReason]) => [...byReason].map(([reason, n]): Sample => [{ workspace, reason }, n])),
  },
];

const leases: MetricSource = async (v) => {
  const state = await Promise.all(
    v.served.all().map(async (e) => {
      const rows = await inStore(v.served, e, (db) => db.select({ state: tables.leases.state }).from(tables.leases));
      const s = (rows[0]?.state ?? null) as { holder?: unknown; queue?: unknown[] } | null;
      return { id: e.workspace.id, held: s?.holder ? 1 : 0, queued: Array.isArray(s?.queue) ? s.queue.length : 0 };
    }),
  );
  return [
    { name: 'nexus_node_lease_held', type: 'gauge', help: 'Whether an operation holds the working copy (1) or not (0).', samples: state.map((s): Sample => [{ workspace: s.id }, s.held]) },
    { name: 'nexus_node_lease_queue_length', type: 'gauge', help: 'Operations queued for the working copy.', samples: state.map((s): Sample => [{ workspace: s.id }, s.queued]) },
  ];
};

/** What the workspace's turns spent: today (the daily ceiling's day, UTC) and in its open operations, summed per workspace. */
const spend: MetricSource = async (v) => {
  const figures = await Promise.all(v.served.all().map((e) => v.served.inQueue(e, () => spendFigures(e.host.deps))));
  const per = (pick: (f: (typeof figures)[number]) => number): Sample[] => figures.map((f): Sample => [{ workspace: f.workspace }, pick(f)]);
  const open = (pick: (u: (typeof figures)[number]['operations'][number]['usage']) => number) => per((f) => f.operations.reduce((n, o) => n + pick(o.usage), 0));
  const over = (u: (typeof figures)[number]['operations'][number]['usage']) =>
    (u.budget.max_tokens !== null && u.tokens >= u.budget.max_tokens) || (u.budget.max_cost !== null && u.cost >= u.budget.max_cost);
  return [
    { name: 'nexus_spend_today_tokens', type: 'gauge', help: "Tokens the workspace's turns spent today (UTC), what its daily_budget counts.", samples: per((f) => f.today.tokens) },
    { name: 'nexus_spend_today_cost_usd', type: 'gauge', help: "Dollars the workspace's turns spent today (UTC), reported or priced.", samples: per((f) => f.today.cost) },
    { name: 'nexus_open_operations_tokens', type: 'gauge', help: 'Tokens spent so far by the open operations, summed (other workspaces\' turns they commissioned included).', samples: open((u) => u.tokens) },
    { name: 'nexus_open_operations_cost_usd', type: 'gauge', help: 'Dollars spent so far by the open operations, summed.', samples: open((u) => u.cost) },
    { name: 'nexus_open_operations_over_budget', type: 'gauge', help: 'Open operations whose tokens or cost have reached their operation_budget.', samples: per((f) => f.operations.filter((o) => over(o.usage)).length) },
  ];
};

/** Every figure the node exposes, in the order they are written. A new figure is a source added here. */
export const NODE_METRIC_SOURCES: readonly MetricSource[] = [build, workspaces, sync, sessions, turns, leases, spend];

function labelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** The Prometheus text exposition of `families`. */
export function renderMetrics(families: readonly MetricFamily[]): string {
  const out: string[] = [];
  for (const f of families) {
    out.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`);
    for (const [labels, value] of f.samples) {
      const pairs = Object.entries(labels).map(([k, v]) => `${k}="${labelValue(v)}"`);
      out.push(`${f.name}${pairs.length > 0 ? `{${pairs.join(',')}}` : ''} ${value}`);
    }
  }
  return out.join('\n') + '\n';
}

/** Reads every source; one that fails is logged and left out, so the rest are still scraped. */
export async function collect(view: NodeMetricsView, sources: readonly MetricSource[] = NODE_METRIC_SOURCES, log?: Logger): Promise<MetricFamily[]> {
  const parts = await Promise.all(
    sources.map((s) =>
      s(view).catch((err: unknown) => {
        log?.error('a metric source failed', { err });
        return [];
      }),
    ),
  );
  return parts.flat();
}

export type HealthOptions = {
  /** Where to listen: 127.0.0.1 by default. */
  host?: string;
  /** 0 (default): any free port, written to the node's info file. */
  port?: number;
};

export type HealthServer = { url: string; host: string; port: number; close(): Promise<void> };

/** The health and metrics routes. */
export function healthApp(view: NodeMetricsView, extra: { pid: number; startedAt: string; log?: Logger }): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => {
    const served = view.served.size;
    const registered = view.registered();
    return c.json({ ok: true, version: view.version, pid: extra.pid, started_at: extra.startedAt, workspaces: { served, registered } });
  });
  app.get('/metrics', async (c) =>
    c.text(renderMetrics(await collect(view, NODE_METRIC_SOURCES, extra.log)), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }),
  );
  app.notFound((c) => c.json({ error: { code: 'NOT_FOUND', message: 'the node answers /healthz and /metrics here' } }, 404));
  return app;
}

/** Listens for /healthz and /metrics; ADDRESS_IN_USE when the port is taken. */
export async function startHealth(app: Hono, opts: HealthOptions): Promise<HealthServer> {
  const host = opts.host ?? '127.0.0.1';
  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new NexusError('ADDRESS_IN_USE', `the node's metrics port ${host}:${opts.port ?? 0} is taken by another process; choose another with --metrics-port`)
          : new NexusError('LISTEN_FAILED', `the node's metrics cannot listen on ${host}:${opts.port ?? 0}: ${err.message}`, undefined, { cause: err }),
      ),
    );
    server.listen(opts.port ?? 0, host, () => resolve((server.address() as AddressInfo).port));
  });
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}`,
    host,
    port,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
