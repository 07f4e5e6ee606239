// `nxs sync ...`: bind this workspace to a relay stream, show how sync is doing, unbind.
import WebSocket from 'ws';
import { NexusError } from '../../protocol/errors.js';
import { FromRelaySchema, SYNC_PROTOCOL, syncUrl } from '../../protocol/sync.js';
import { nodePaths, originId, runningNode, isRegistered } from '../node/files.js';
import { rpc } from '../rpc/client.js';
import { checkRelayUrl, readBinding, removeBinding, writeBinding, type Binding } from '../sync/binding.js';
import { findWorkspace, type Workspace } from '../workspace/index.js';
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
    const { readPosition, outboxSize, positionKey } = await import('../sync/state.js');
    const { pendingCount } = await import('../log/index.js');
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

export async function syncCommand(io: Io, args: string[]): Promise<void> {
  if (args[0] === 'trust') return trustCommand(io, args.slice(1));
  const { values, positionals } = parse(args, { json: { type: 'boolean' }, stream: { type: 'string' }, token: { type: 'string' } }, USAGE);
  const json = values.json ?? false;
  const [verb, arg, ...rest] = positionals;
  if (rest.length > 0) throw new NexusError('USAGE', `usage: ${USAGE}`);
  if (verb === 'bind') return bind(io, arg, values.stream, values.token, json);
  if (arg !== undefined) throw new NexusError('USAGE', `usage: ${USAGE}`);
  if (verb === 'status') return status(io, json);
  if (verb === 'unbind') return unbind(io, json);
  throw new NexusError('USAGE', `usage: ${USAGE}`);
}
