// `nxs sync ...`: bind this workspace to a relay stream, show how sync is doing, unbind.
import WebSocket from 'ws';
import { NexusError } from '../../protocol/errors.js';
import { FromRelaySchema, SYNC_PROTOCOL, syncUrl } from '../../protocol/sync.js';
import { nodePaths, originId } from '../host/node/files.js';
import { callNode } from '../host/rpc/client.js';
import { servingNode } from '../host/remote.js';
import { checkRelayUrl, readBinding, removeBinding, writeBinding, type Binding } from '../host/sync/binding.js';
import { findWorkspace, type Workspace } from '../adapters/workspace/index.js';
import { printJson, routerOf, type Io } from './io.js';
import { bool, str, type Verb } from './spec.js';

type Probe = { ok: true; head: number } | { ok: false; refused: boolean; message: string };

/** Says hello to the relay once, to catch a wrong token or stream at bind time rather than later in a log. */
function probe(binding: Binding, node: string): Promise<Probe> {
  return new Promise((resolve) => {
    const ws = new WebSocket(syncUrl(binding.relay), { handshakeTimeout: 5_000 });
    const done = (p: Probe) => {
      clearTimeout(timer);
      ws.terminate();
      resolve(p);
    };
    const timer = setTimeout(() => done({ ok: false, refused: false, message: 'no answer within 5 s' }), 5_000);
    ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', protocol: SYNC_PROTOCOL, stream: binding.stream, token: binding.token, node, since: 0 })));
    ws.on('message', (data) => {
      const frame = FromRelaySchema.safeParse(JSON.parse(data.toString()));
      if (!frame.success) return done({ ok: false, refused: false, message: 'the relay sent an invalid frame' });
      if (frame.data.type === 'welcome') return done({ ok: true, head: frame.data.head });
      if (frame.data.type === 'error') return done({ ok: false, refused: true, message: `${frame.data.code}: ${frame.data.message}` });
    });
    ws.on('error', (err) => done({ ok: false, refused: false, message: err.message }));
  });
}

function serving(io: Io, ws: Workspace): string | null {
  return servingNode(ws, io.env);
}

async function bind(io: Io, url: string | undefined, stream: string | undefined, token: string | undefined, json: boolean): Promise<void> {
  if (!url || !stream || !token) throw new NexusError('USAGE', 'nxs sync bind needs <relay-url>, --stream NAME and --token T');
  const ws = findWorkspace(io.cwd, io.env);
  const binding: Binding = { relay: checkRelayUrl(url), stream, token, bound_at: new Date().toISOString() };
  if (!/^[a-z0-9][a-z0-9_-]{0,63}$/.test(stream)) throw new NexusError('USAGE', `stream name ${JSON.stringify(stream)} is not valid`);
  const home = nodePaths(io.env['NEXUS_HOME'] ? io.env['NEXUS_HOME'] : undefined).home;
  const answer = await probe(binding, originId(home));
  if (!answer.ok && answer.refused) throw new NexusError('UNAUTHORIZED', `the relay refused this binding: ${answer.message}`);
  writeBinding(ws.paths, binding);
  const socket = serving(io, ws);
  const status = socket ? await callNode(socket, 'sync.reload', ws.id, {}) : null;
  const out = { bound: true, workspace: ws.id, relay: binding.relay, stream, reachable: answer.ok, head: answer.ok ? answer.head : null, node_serving: socket !== null, status };
  if (json) return printJson(io, out);
  io.stdout(`${ws.id} bound to stream ${stream} at ${binding.relay}${answer.ok ? ` (head ${answer.head})` : ` (not reachable now: ${answer.message})`}\n`);
  if (!socket) io.stdout('sync runs in the node: `nxs node register` and `nxs node start` here to begin\n');
  else if (process.stderr.isTTY) await watch(io, ws, socket, true);
}

async function status(io: Io, json: boolean): Promise<void> {
  const ws = findWorkspace(io.cwd, io.env);
  const r = await routerOf(io)(ws, (run) => run('sync.status', {}), io.env);
  const report: Record<string, unknown> = r.result.bound ? { ...r.result, node_running: r.via === 'node' } : r.result;
  if (json) return printJson(io, report);
  if (!report['bound']) return io.stdout('not bound to any stream (nxs sync bind <relay-url> --stream NAME --token T)\n');
  const rejected = Object.entries((report['rejected'] as Record<string, number> | undefined) ?? {}).filter(([, n]) => n > 0);
  io.stdout(
    `stream ${String(report['stream'])} at ${String(report['relay'])}: ${report['connected'] ? 'connected' : 'not connected'}` +
      ` · cursor ${String(report['cursor'])}${report['lag'] !== undefined ? ` · lag ${String(report['lag'])}` : ''} · outbox ${String(report['outbox'])}` +
      ` · rejected ${rejected.length === 0 ? '0' : rejected.map(([reason, n]) => `${reason} ${n}`).join(', ')}` +
      ` · pending ${String(report['pending'] ?? 0)} (unknown_key)` +
      (report['last_error'] ? ` · last error: ${String(report['last_error'])}` : '') +
      (report['node_running'] ? '' : ' · no node serves this workspace, so nothing syncs') +
      '\n',
  );
}

async function unbind(io: Io, json: boolean): Promise<void> {
  const ws = findWorkspace(io.cwd, io.env);
  const removed = removeBinding(ws.paths);
  const socket = serving(io, ws);
  if (socket) await callNode(socket, 'sync.reload', ws.id, {});
  if (json) return printJson(io, { unbound: removed, workspace: ws.id });
  io.stdout(removed ? `${ws.id} no longer syncs\n` : `${ws.id} was not bound\n`);
}

type Progress = { connected?: boolean; caught_up?: boolean; cursor?: number; head?: number; lag?: number; last_error?: string | null; refused?: boolean };

/**
 * Follows the node's sync of this workspace until it has caught up: one line rewritten in
 * place on a terminal, a line every few seconds otherwise. Ends early when sync is refused.
 */
async function watch(io: Io, ws: Workspace, socket: string, tty: boolean, limitMs = 30 * 60_000): Promise<Progress> {
  const started = Date.now();
  let last: Progress = {};
  let lastCursor = -1;
  let lastPrint = 0;
  let rateFrom = { t: Date.now(), cursor: 0 };
  for (;;) {
    last = (await callNode(socket, 'sync.status', ws.id, {})) as Progress;
    const cursor = last.cursor ?? 0;
    const head = Math.max(last.head ?? 0, cursor);
    const done = last.caught_up === true && (last.lag ?? 0) === 0;
    const now = Date.now();
    if (now - rateFrom.t >= 2_000) rateFrom = { t: now, cursor: lastCursor < 0 ? cursor : lastCursor };
    const rate = now > rateFrom.t ? Math.round(((cursor - rateFrom.cursor) * 1000) / Math.max(1, now - rateFrom.t)) : 0;
    const pct = head > 0 ? Math.floor((cursor * 100) / head) : 100;
    const line = `sync: ${cursor} of ${head} ops (${pct}%)${rate > 0 ? ` · ${rate} ops/s` : ''}${last.connected ? '' : ' · connecting'}${last.last_error ? ` · ${last.last_error}` : ''}`;
    if (tty) io.stderr(`\r${line}\x1b[K`);
    else if (done || now - lastPrint >= 5_000) {
      io.stderr(line + '\n');
      lastPrint = now;
    }
    lastCursor = cursor;
    if (done || last.refused || now - started > limitMs) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  if (tty) io.stderr('\n');
  return last;
}

export const SYNC_VERBS: readonly Verb[] = [
  {
    path: ['sync', 'bind'],
    args: '<relay-url>',
    arity: [1, 1],
    summary: "sync this workspace's op log through a relay stream (the token is checked at once; sync runs in the node)",
    flags: {
      stream: { type: 'string', value: 'NAME', help: 'the stream on the relay (required)' },
      token: { type: 'string', value: 'T', help: 'the stream token (required)' },
    },
    run: (io, a) => bind(io, a.positionals[0], str(a, 'stream'), str(a, 'token'), a.json),
  },
  {
    path: ['sync', 'status'],
    summary: 'cursor, lag, outbox, refused ops by reason, last error',
    flags: { watch: { type: 'boolean', help: 'follow the node’s sync until it has caught up' } },
    run: async (io, a) => {
      if (!bool(a, 'watch')) return status(io, a.json);
      const ws = findWorkspace(io.cwd, io.env);
      const socket = serving(io, ws);
      if (!socket) throw new NexusError('NOT_SERVED', 'no node serves this workspace, so nothing syncs: `nxs node register` and `nxs node start`');
      const final = await watch(io, ws, socket, Boolean(process.stderr.isTTY));
      if (a.json) printJson(io, final);
    },
  },
  { path: ['sync', 'unbind'], summary: 'stop syncing this workspace', run: (io, a) => unbind(io, a.json) },
];
