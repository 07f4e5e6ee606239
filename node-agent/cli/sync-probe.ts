// `nxs sync bind`'s check: one hello to the relay, to catch a wrong URL, stream or token at bind time
// rather than later in a log.
import WebSocket from 'ws';
import { ERROR_TABLE, type ErrorCode } from '../../protocol/errors.js';
import { FromRelaySchema, SYNC_PROTOCOL, syncUrl } from '../../protocol/sync.js';
import type { Binding } from '../host/sync/binding.js';
import { relaySocketOptions } from '../host/sync/tls.js';
import { NexusError } from '../../protocol/errors.js';

export type Probe =
  | { ok: true; head: number }
  /** The relay answered and refused: `code` is the relay's own (UNKNOWN_STREAM, UNAUTHORIZED, ...). */
  | { ok: false; refused: true; code: ErrorCode; message: string }
  /** Nothing usable answered: `cause` says what happened at the given URL. */
  | { ok: false; refused: false; cause: string };

/** The relay's refusal as one of our codes: its own when we know it, else UNAUTHORIZED (it would not let us in). */
export function refusalCode(code: string): ErrorCode {
  return code in ERROR_TABLE ? (code as ErrorCode) : 'UNAUTHORIZED';
}

/** Why a connection failed, in words that carry the OS's code ("ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1"). */
export function connectCause(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } } | null;
  const message = typeof e?.message === 'string' && e.message !== '' ? e.message : String(err);
  const inner = typeof e?.cause?.message === 'string' ? ` (${e.cause.message})` : '';
  const code = typeof e?.code === 'string' && !message.includes(e.code) ? `${e.code}: ` : '';
  return `${code}${message}${inner}`;
}

export function probe(binding: Binding, node: string, timeoutMs = 5_000): Promise<Probe> {
  return new Promise((resolve) => {
    const ws = new WebSocket(syncUrl(binding.relay), { handshakeTimeout: timeoutMs, ...relaySocketOptions(binding) });
    const done = (p: Probe) => {
      clearTimeout(timer);
      ws.removeAllListeners();
      ws.on('error', () => undefined);
      // An answered probe leaves with a normal close, so the relay does not log a lost node; the socket
      // itself is not waited for (the answer is in).
      if (ws.readyState === WebSocket.OPEN) {
        ws.close(1000, 'probe done');
        setTimeout(() => ws.terminate(), 1_000).unref();
      } else ws.terminate();
      resolve(p);
    };
    const timer = setTimeout(() => done({ ok: false, refused: false, cause: `no answer within ${Math.round(timeoutMs / 1000)} s` }), timeoutMs);
    // `join: 1`: a relay then starts this connection at the stream's head, so it sends the check none of the
    // history (a long stream's first pages, read and sent for nothing, and through a slow link ahead of the
    // node's own connection). A relay without the history feature ignores it; the goodbye follows the welcome.
    ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', protocol: SYNC_PROTOCOL, stream: binding.stream, token: binding.token, node, since: 0, join: 1 })));
    ws.on('message', (data) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(data.toString());
      } catch {
        return done({ ok: false, refused: false, cause: 'the relay sent a frame that is not JSON (is this a Nexus relay?)' });
      }
      const frame = FromRelaySchema.safeParse(parsed);
      if (!frame.success) return done({ ok: false, refused: false, cause: 'the relay sent an invalid frame (is this a Nexus relay of this version?)' });
      if (frame.data.type === 'welcome') return done({ ok: true, head: frame.data.head });
      if (frame.data.type === 'error') return done({ ok: false, refused: true, code: refusalCode(frame.data.code), message: frame.data.message });
    });
    ws.on('unexpected-response', (_req, res) => done({ ok: false, refused: false, cause: `HTTP ${res.statusCode} instead of a sync socket (is this a Nexus relay's base URL?)` }));
    // A certificate other than the pinned one is a refusal of ours, not an unreachable relay: never bound, --offline or not.
    ws.on('error', (err) =>
      done(err instanceof NexusError ? { ok: false, refused: true, code: err.code, message: err.message } : { ok: false, refused: false, cause: connectCause(err) }),
    );
  });
}
