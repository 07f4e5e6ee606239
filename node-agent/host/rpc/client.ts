// The local RPC client: nxc and nxs talk to a running node over its Unix socket. No PGlite on this path.
import { request } from 'node:http';
import { NexusError, ERROR_CODES, type ErrorCode } from '../../../protocol/errors.js';

export type RpcReply<T> = { ok: true; result: T } | { ok: false; error: { code: string; message: string; details?: Record<string, unknown> } };

/** Calls the node. Throws `unreachable` errors as plain Errors (the caller falls back), coded errors as NexusError. */
export function rpc<T>(socket: string, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, timeoutMs = 120_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = request(
      {
        socketPath: socket,
        path,
        method,
        headers: payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {},
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          let parsed: RpcReply<T>;
          try {
            parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RpcReply<T>;
          } catch {
            reject(new NexusError('INTERNAL', `the node answered ${path} with something that is not JSON (HTTP ${res.statusCode})`));
            return;
          }
          if (parsed.ok) resolve(parsed.result);
          else {
            const code = (ERROR_CODES as string[]).includes(parsed.error.code) ? (parsed.error.code as ErrorCode) : 'INTERNAL';
            reject(new NexusError(code, parsed.error.message, parsed.error.details));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('the node did not answer in time')));
    req.on('error', (err) => reject(Object.assign(new Error(`node unreachable: ${err.message}`), { unreachable: true })));
    if (payload) req.write(payload);
    req.end();
  });
}

export function isUnreachable(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { unreachable?: boolean }).unreachable === true;
}
