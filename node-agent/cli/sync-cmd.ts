// `nxs sync ...`: bind this workspace to a relay stream, show how sync is doing, unbind.
import WebSocket from 'ws';
import { NexusError } from '../../protocol/errors.js';
import { FromRelaySchema, SYNC_PROTOCOL, syncUrl } from '../../protocol/sync.js';
import { nodePaths, originId, runningNode, isRegistered } from '../host/node/files.js';
import { rpc } from '../host/rpc/client.js';
import { checkRelayUrl, readBinding, removeBinding, writeBinding, type Binding } from '../host/sync/binding.js';
import { findWorkspace, type Workspace } from '../adapters/workspace/index.js';
import { parse, printJson, type Io } from './io.js';
import { trustCommand } from './trust-cmd.js';

const USAGE = 'nxs sync bind <relay-url> --stream NAME --token T | status | unbind | trust add|list|remove [--json]';

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
  const paths = nodePaths(io.env['NEXUS_HOME'] ? io.env['NEXUS_HOME'] : undefined);
  const node = runningNode(paths);
  return node !== null && isRegistered(paths, ws.id) ? node.socket : null;
}

async function bind(io: Io, url: string | undefined, stream: string | undefined, token: string | undefined, json: boolean): Promise<void> {
  if (!url || !stream || !token) throw new NexusError('USAGE', `usage: ${USAGE}`);
  const ws = findWorkspace(io.cwd, io.env);
  const binding: Binding = { relay: checkRelayUrl(url), stream, token, bound_at: new Date().toISOString() };
  if (!/^[a-z0-9][a-z0-9_-]{0,63}$/.test(stream)) throw new NexusError('USAGE', `stream name ${JSON.stringify(stream)} is not valid`);
  const home = nodePaths(io.env['NEXUS_HOME'] ? io.env['NEXUS_HOME'] : undefined).home;
  const answer = await probe(binding, originId(home));
  if (!answer.ok && answer.refused) throw new NexusError('UNAUTHORIZED', `the relay refused this binding: ${answer.message}`);
  writeBinding(ws.paths, binding);
  const socket = serving(io, ws);
  const status = socket ? await rpc(socket, 'POST', `/v1/w/${ws.id}/sync/reload`, {}) : null;
  const out = { bound: true, workspace: ws.id, relay: binding.relay, stream, reachable: answer.ok, head: answer.ok ? answer.head : null, node_serving: socket !== null, status };
  if (json) return printJson(io, out);
  io.stdout(`${ws.id} bound to stream ${stream} at ${binding.relay}${answer.ok ? ` (head ${answer.head})` : ` (not reachable now: ${answer.message})`}\n`);
  if (!socket) io.stdout('sync runs in the node: `nxs node register` and `nxs node start` here to begin\n');
  else if (process.stderr.isTTY) await watch(io, ws, socket, true);
}

async function status(io: Io, json: boolean): Promise<void> {
  const ws = findWorkspace(io.cwd, io.env);
  const binding = readBinding(ws.paths);
  const socket = serving(io, ws);
  let report: Record<string, unknown>;
  if (binding === null) report = { bound: false };
  else if (socket) report = { ...(await rpc<Record<string, unknown>>(socket, 'GET', `/v1/w/${ws.id}/sync`)), node_running: true };
  else {
    const { withDirectHost } = await import('../host/direct.js');
    const { readPosition, outboxSize, positionKey } = await import('../host/sync/state.js');
    const { pendingCount } = await import('../kernel/index.js');
    const origin = originId(nodePaths(io.env['NEXUS_HOME'] ? io.env['NEXUS_HOME'] : undefined).home);
    report = await withDirectHost(ws, async (h) => {
      const pos = await readPosition(h.deps.db, positionKey(binding.relay, binding.stream));
      return { bound: true, relay: binding.relay, stream: binding.stream, connected: false, cursor: pos.cursor, outbox: await outboxSize(h.deps.db, origin, pos.acked), rejected: pos.rejected, pending: await pendingCount(h.deps.db), last_error: null, node_running: false };
    });
  }
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
  if (socket) await rpc(socket, 'POST', `/v1/w/${ws.id}/sync/reload`, {});
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
    last = await rpc<Progress>(socket, 'GET', `/v1/w/${ws.id}/sync`);
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

export async function syncCommand(io: Io, args: string[]): Promise<void> {
  if (args[0] === 'trust') return trustCommand(io, args.slice(1));
  const { values, positionals } = parse(
    args,
    { json: { type: 'boolean' }, stream: { type: 'string' }, token: { type: 'string' }, watch: { type: 'boolean' } },
    USAGE,
  );
  if (values.watch) {
    if (positionals[0] !== 'status' || positionals.length > 1) throw new NexusError('USAGE', '--watch goes with `nxs sync status`');
    const ws = findWorkspace(io.cwd, io.env);
    const socket = serving(io, ws);
    if (!socket) throw new NexusError('NOT_SERVED', 'no node serves this workspace, so nothing syncs: `nxs node register` and `nxs node start`');
    const final = await watch(io, ws, socket, Boolean(process.stderr.isTTY));
    if (values.json) printJson(io, final);
    return;
  }
  const json = values.json ?? false;
  const [verb, arg, ...rest] = positionals;
  if (rest.length > 0) throw new NexusError('USAGE', `usage: ${USAGE}`);
  if (verb === 'bind') return bind(io, arg, values.stream, values.token, json);
  if (arg !== undefined) throw new NexusError('USAGE', `usage: ${USAGE}`);
  if (verb === 'status') return status(io, json);
  if (verb === 'unbind') return unbind(io, json);
  throw new NexusError('USAGE', `usage: ${USAGE}`);
}
