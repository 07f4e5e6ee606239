// `nxs sync ...`: bind this workspace to a relay stream, show how sync is doing, unbind.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { SyncHistory } from '../../protocol/commands.js';
import { CertFingerprintSchema } from '../../protocol/sync.js';
import { NexusError } from '../../protocol/errors.js';
import { PENDING_LIMITS } from '../../protocol/storable.js';
import { nodePaths, originId } from '../host/node/files.js';
import { callNode } from '../host/rpc/client.js';
import { servingNode } from '../host/remote.js';
import { parseRelayUrls, readBinding, removeBinding, writeBinding, type Binding } from '../host/sync/binding.js';
import { isTlsRelay, readCaFile } from '../host/sync/tls.js';
import { findWorkspace, type Workspace } from '../adapters/workspace/index.js';
import { printJson, routerOf, type Io } from './io.js';
import { bool, str, type Args, type Verb } from './spec.js';
import { probe, type Probe } from './sync-probe.js';
import { watchSync } from './sync-watch.js';
import { visibleDeep } from './visible.js';

function serving(io: Io, ws: Workspace): string | null {
  return servingNode(ws, io.env);
}

/** The stream token: `--token T`, `--token -` (stdin, so it stays out of the shell's history), or `--token-file F`. */
async function tokenFrom(io: Io, a: Args): Promise<string | undefined> {
  const given = str(a, 'token');
  const file = str(a, 'token-file');
  if (given !== undefined && file !== undefined) throw new NexusError('USAGE', 'give the stream token once: --token or --token-file');
  let token: string | undefined = given;
  if (file !== undefined) {
    try {
      token = readFileSync(file, 'utf8');
    } catch (err) {
      throw new NexusError('USAGE', `--token-file ${file} cannot be read: ${(err as Error).message}`);
    }
  } else if (given === '-') token = await io.readStdin();
  token = token?.trim();
  if (token === '') throw new NexusError('USAGE', `the stream token ${file !== undefined ? `in ${file} ` : given === '-' ? 'on stdin ' : ''}is empty`);
  return token;
}

/**
 * Asks the relay URLs in turn until one answers (welcomes or refuses): instances sharing a database
 * answer alike, so the first answer speaks for all. The URL that answered comes with it.
 */
async function probeInTurn(binding: Binding, urls: readonly string[], node: string): Promise<{ answer: Probe; url: string }> {
  let last: { answer: Probe; url: string } | null = null;
  for (const url of urls) {
    const answer = await probe({ ...binding, relay: url }, node);
    last = { answer, url };
    if (answer.ok || answer.refused) return last;
  }
  return last!;
}

/** What a bind replaces: the binding there was, or that it could not be read; null when there was none. */
function previousBinding(paths: Parameters<typeof readBinding>[0]): { relay: string; relays: string[]; stream: string; bound_at: string } | { unreadable: string } | null {
  try {
    const b = readBinding(paths);
    return b === null ? null : { relay: b.relay, relays: b.relays ?? [b.relay], stream: b.stream, bound_at: b.bound_at };
  } catch (err) {
    return { unreadable: (err as Error).message };
  }
}

async function bind(io: Io, a: Args): Promise<void> {
  const urls = parseRelayUrls(a.positionals);
  const url = urls[0];
  const stream = str(a, 'stream');
  const offline = bool(a, 'offline');
  const token = await tokenFrom(io, a);
  if (!url || !stream || !token) throw new NexusError('USAGE', 'nxs sync bind needs <relay-url>, --stream NAME and a stream token (--token T, --token -, or --token-file F)');
  if (!/^[a-z0-9][a-z0-9_-]{0,63}$/.test(stream)) throw new NexusError('USAGE', `stream name ${JSON.stringify(stream)} is not valid`);
  const ws = findWorkspace(io.cwd, io.env);
  const relay = url;
  const caFile = str(a, 'ca-file');
  const pinGiven = str(a, 'relay-fingerprint');
  const plain = urls.find((u) => !isTlsRelay(u));
  if ((caFile !== undefined || pinGiven !== undefined) && plain !== undefined) {
    throw new NexusError('USAGE', `--ca-file and --relay-fingerprint are for a TLS relay: give its https:// or wss:// URL, not ${plain}`);
  }
  const pin = pinGiven === undefined ? undefined : CertFingerprintSchema.safeParse(pinGiven);
  if (pin !== undefined && !pin.success) throw new NexusError('USAGE', `--relay-fingerprint ${pinGiven}: ${pin.error.issues[0]?.message ?? 'not a fingerprint'}`);
  // Kept as an absolute path (the node reads it from another folder) and read now, so a typo fails here.
  const caPath = caFile === undefined ? undefined : resolve(io.cwd, caFile);
  if (caPath !== undefined) readCaFile(caPath);
  const binding: Binding = {
    relay,
    stream,
    token,
    bound_at: new Date().toISOString(),
    ...(urls.length > 1 ? { relays: urls } : {}),
    ...(caPath === undefined ? {} : { ca_file: caPath }),
    ...(pin === undefined || !pin.success ? {} : { relay_fingerprint: pin.data }),
  };
  const home = nodePaths(io.env['NEXUS_HOME'] ? io.env['NEXUS_HOME'] : undefined).home;
  const { answer, url: asked } = await probeInTurn(binding, urls, originId(home));
  // A refusal is never bound, offline or not: the relay has said this binding cannot work.
  if (!answer.ok && answer.refused) {
    const hint = answer.code === 'UNKNOWN_STREAM' ? ` (the relay's operator makes streams: \`nxs relay stream create ${stream}\`)` : '';
    throw new NexusError(answer.code, `the relay at ${asked} refused this binding: ${answer.message}${hint}`, { relay: asked, stream });
  }
  if (!answer.ok && !offline) {
    const where = urls.length > 1 ? `any of ${urls.join(', ')} (the last: ${answer.cause})` : `the relay at ${asked}: ${answer.cause}`;
    throw new NexusError('RELAY_UNREACHABLE', `cannot reach ${where}. Nothing was bound; check the URL, or bind anyway with --offline`, {
      relay: asked,
      cause: answer.cause,
    });
  }
  // Binding again replaces what was bound: said, so a second bind is never a silent switch of stream or relay.
  const before = previousBinding(ws.paths);
  writeBinding(ws.paths, binding);
  const socket = serving(io, ws);
  const status = socket ? await callNode(socket, 'sync.reload', ws.id, {}) : null;
  const out = { bound: true, workspace: ws.id, relay: binding.relay, relays: urls, answered_by: answer.ok ? asked : null, stream, reachable: answer.ok, offline: !answer.ok, head: answer.ok ? answer.head : null, node_serving: socket !== null, status, replaced: before };
  if (a.json) return printJson(io, out);
  if (before !== null) {
    io.stdout(
      'unreadable' in before
        ? `replaced an unreadable binding (${before.unreadable})\n`
        : `replaced the binding to stream ${before.stream} at ${before.relays.join(', ')} (bound ${before.bound_at})${before.stream === stream && before.relays.join(',') === urls.join(',') ? '; the same stream and relays, with the token given now' : ''}\n`,
    );
  }
  io.stdout(
    answer.ok
      ? `${ws.id} bound to stream ${stream} at ${urls.join(', ')} (head ${answer.head}${urls.length > 1 ? ` from ${asked}` : ''})\n`
      : `${ws.id} bound OFFLINE to stream ${stream} at ${urls.join(', ')}: ${urls.length > 1 ? 'none' : 'it'} did not answer (${answer.cause}); the stream and token are checked when sync first connects\n`,
  );
  if (!socket) io.stdout('sync runs in the node: `nxs node register` and `nxs node start` here to begin\n');
  else if (io.stderrIsTty && answer.ok) await watchSync(io, ws, socket, { tty: true, untilCaughtUp: true });
}

async function status(io: Io, json: boolean): Promise<void> {
  const ws = findWorkspace(io.cwd, io.env);
  const r = await routerOf(io)(ws, (run) => run('sync.status', {}), io.env);
  const full: Record<string, unknown> = r.result.bound ? { ...r.result, node_running: r.via === 'node' } : r.result;
  if (json) return printJson(io, full);
  // The last error can be a relay's words.
  const report = visibleDeep(full);
  const inert =
    inertWords((report['inert'] as Record<string, number> | undefined) ?? {}) +
    unsignedWords((report['refusals_unsigned'] as Record<string, number> | undefined) ?? {});
  if (!report['bound']) return io.stdout(`not bound to any stream (nxs sync bind <relay-url> --stream NAME --token T)${inert}\n`);
  const rejected = Object.entries((report['rejected'] as Record<string, number> | undefined) ?? {}).filter(([, n]) => n > 0);
  io.stdout(
    `stream ${String(report['stream'])} at ${String(report['relay'])}: ${report['connected'] ? 'connected' : 'not connected'}` +
      ` · cursor ${String(report['cursor'])}${report['lag'] !== undefined ? ` · lag ${String(report['lag'])}` : ''} · outbox ${String(report['outbox'])}` +
      ` · rejected ${rejected.length === 0 ? '0' : rejected.map(([reason, n]) => `${reason} ${n}`).join(', ')}` +
      pendingWords(Number(report['pending'] ?? 0)) +
      historyWords(report['history'] as SyncHistory | null | undefined) +
      inert +
      (report['last_error'] ? ` · last error: ${String(report['last_error'])}` : '') +
      (report['node_running'] ? '' : ' · no node serves this workspace, so nothing syncs') +
      '\n',
  );
}

/**
 * A join's background history, when there is one: how far it is (seqs up to where the live feed began),
 * and whether the ops of this workspace and the ones it trusts, fetched first, are all here.
 */
export function historyWords(h: SyncHistory | null | undefined): string {
  if (h === null || h === undefined) return '';
  const pct = h.from > 0 ? Math.floor((h.through * 100) / h.from) : 100;
  const first = `${h.priority.length <= 1 ? 'this workspace' : `this workspace and ${h.priority.length - 1} trusted`}: ${h.priority_complete ? 'complete' : 'fetching'}`;
  return h.complete ? ` · history complete (${h.from} ops before joining)` : ` · history ${h.through} of ${h.from} (${pct}%) in the background · ${first}`;
}

/**
 * Ops held back because they are signed by a key this node does not know yet for their workspace
 * (a key rotation that has not arrived): said in words, and only when there are some.
 */
export function pendingWords(n: number): string {
  if (!(n > 0)) return '';
  return (
    ` · ${n} op(s) held: signed by a key not known here yet (they are taken in when that workspace's key rotation arrives;` +
    ` at most ${PENDING_LIMITS.ops_per_workspace} per workspace are held, and what does not fit is counted as pending_full)`
  );
}

/**
 * Ops stored but inert (the fold took nothing from them: see docs/ARCHITECTURE.md, "Threads, answers and
 * who may move what"), by reason, and only when there are some.
 */
export function inertWords(inert: Record<string, number>): string {
  const shown = Object.entries(inert).filter(([, n]) => n > 0);
  if (shown.length === 0) return '';
  return ` · inert ${shown.map(([reason, n]) => `${reason} ${n}`).join(', ')} (stored, moved nothing)`;
}

/** Commissions refused without signing a refusal (a sender past the limit), said only when there are some. */
export function unsignedWords(unsigned: Record<string, number>): string {
  const shown = Object.entries(unsigned).filter(([, n]) => n > 0);
  if (shown.length === 0) return '';
  return ` · refused without a signed refusal (over the limit): ${shown.map(([ws, n]) => `${n} from ${ws}`).join(', ')}`;
}

async function unbind(io: Io, json: boolean): Promise<void> {
  const ws = findWorkspace(io.cwd, io.env);
  const removed = removeBinding(ws.paths);
  const socket = serving(io, ws);
  if (socket) await callNode(socket, 'sync.reload', ws.id, {});
  if (json) return printJson(io, { unbound: removed, workspace: ws.id });
  io.stdout(removed ? `${ws.id} no longer syncs\n` : `${ws.id} was not bound\n`);
}

export const SYNC_VERBS: readonly Verb[] = [
  {
    path: ['sync', 'bind'],
    args: '<relay-url>...',
    arity: [1, 16],
    summary: "sync this workspace's op log through a relay stream (the relay is asked at once; sync runs in the node)",
    flags: {
      stream: { type: 'string', value: 'NAME', help: 'the stream on the relay (required)' },
      token: { type: 'string', value: 'T', help: 'the stream token; "-" reads it from stdin' },
      'token-file': { type: 'string', value: 'F', help: 'read the stream token from file F' },
      offline: { type: 'boolean', help: 'bind even when the relay does not answer now (checked when sync first connects)' },
      'ca-file': { type: 'string', value: 'FILE', help: "trust the relay's certificate when it chains to this CA (PEM), beside the system's" },
      'relay-fingerprint': { type: 'string', value: 'sha256:HEX', help: 'accept only the relay certificate with this pin (printed by nxs relay serve)' },
    },
    details:
      'Several URLs (repeated, or a comma list) name instances of one relay sharing a database: they are asked in turn,\n' +
      'kept in the binding, and the node moves to the next when the one it uses cannot be reached.\n' +
      'The relay is asked at once: an unknown stream (UNKNOWN_STREAM) or a wrong token (UNAUTHORIZED) binds nothing, exit 2;\n' +
      'a relay that does not answer binds nothing either (RELAY_UNREACHABLE, exit 1) unless --offline is given.\n' +
      'An https:// or wss:// relay is reached over TLS: --ca-file trusts a private CA, --relay-fingerprint pins the relay\n' +
      "certificate (then no CA is needed): any other certificate is refused (RELAY_CERT_MISMATCH) before the token is sent.",
    run: (io, a) => bind(io, a),
  },
  {
    path: ['sync', 'status'],
    summary: 'cursor, lag, outbox, refused ops by reason, last error',
    flags: {
      watch: { type: 'boolean', help: 'follow the node’s sync live until Ctrl-C' },
      'until-caught-up': { type: 'boolean', help: 'follow it until it has caught up, then exit' },
    },
    run: async (io, a) => {
      const untilCaughtUp = bool(a, 'until-caught-up');
      if (!bool(a, 'watch') && !untilCaughtUp) return status(io, a.json);
      const ws = findWorkspace(io.cwd, io.env);
      const socket = serving(io, ws);
      if (!socket) throw new NexusError('NOT_SERVED', 'no node serves this workspace, so nothing syncs: `nxs node register` and `nxs node start`');
      const final = await watchSync(io, ws, socket, { tty: Boolean(io.stderrIsTty), untilCaughtUp });
      if (a.json) printJson(io, final);
    },
  },
  { path: ['sync', 'unbind'], summary: 'stop syncing this workspace', run: (io, a) => unbind(io, a.json) },
];
