// `nxs relay stream create|list|delete|rotate-token`: the operator's commands, over the relay's HTTP API.
import type { z } from 'zod';
import { backoffDelay } from '../infra/index.js';
import { ERROR_TABLE, NexusError, type ErrorCode } from '../protocol/errors.js';
import { CreateStreamResponseSchema, DeleteStreamResponseSchema, ListStreamsResponseSchema, StreamName } from '../protocol/sync.js';
import { parse, type RelayIo } from './cli-common.js';

export const STREAM_HELP = `nxs relay stream: the operator's stream commands (the operator token is --token or $NEXUS_RELAY_TOKEN)

  nxs relay stream create NAME --relay URL [--token T] [--json]
      create a stream; prints its token (shown once).
  nxs relay stream list --relay URL [--token T] [--json]
      every stream: head, connections open on the instance that answered, created.
  nxs relay stream delete NAME --yes --relay URL [--token T] [--json]
      delete the stream and all its ops for good; its connections are closed (UNKNOWN_STREAM).
  nxs relay stream rotate-token NAME --relay URL [--token T] [--json]
      replace the stream token; prints the new one (shown once). Nodes holding the old one are
      closed (UNAUTHORIZED) and must be bound again with the new one.

  --wait S   how long to wait for the relay to become ready (default 5 s; it may be starting)
`;

const DEFAULT_WAIT_S = 5;

/** The relay's HTTP base for a URL given with an http(s) or ws(s) scheme (a trailing slash added). */
function httpBase(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new NexusError('USAGE', `--relay ${url} is not a URL`);
  }
  const scheme = { 'http:': 'http:', 'https:': 'https:', 'ws:': 'http:', 'wss:': 'https:' }[parsed.protocol];
  if (scheme === undefined) throw new NexusError('USAGE', `--relay ${url} is not an http(s) or ws(s) URL`);
  parsed.protocol = scheme;
  parsed.search = '';
  parsed.hash = '';
  if (!parsed.pathname.endsWith('/')) parsed.pathname += '/';
  return parsed;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until the relay answers /readyz with 200, retrying with backoff (a relay started a moment
 * ago may not listen yet, or its storage may still be opening) until `waitMs` has passed.
 */
async function untilReady(base: URL, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  let last = '';
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(new URL('readyz', base), { signal: AbortSignal.timeout(Math.max(500, Math.min(5_000, deadline - Date.now()))) });
      await res.body?.cancel();
      if (res.ok) return;
      last = `/readyz answered HTTP ${res.status}`;
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      last = cause ?? (err as Error).message;
    }
    const delay = backoffDelay(attempt, { baseMs: 100, maxMs: 1_000 });
    if (Date.now() + delay > deadline) break;
    await sleep(delay);
  }
  throw new NexusError('RELAY_UNREACHABLE', `no ready relay at ${base.origin} within ${Math.round(waitMs / 100) / 10} s (${last})`);
}

type Call = { method: 'GET' | 'POST' | 'DELETE'; path: string; body?: unknown };

/** One authenticated request once the relay is ready; a coded answer becomes a NexusError with that code. */
async function call<S extends z.ZodType>(base: URL, token: string, waitMs: number, req: Call, schema: S): Promise<z.infer<S>> {
  await untilReady(base, waitMs);
  let res: Response;
  try {
    res = await fetch(new URL(req.path, base), {
      method: req.method,
      headers: { authorization: `Bearer ${token}`, ...(req.body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(req.body === undefined ? {} : { body: JSON.stringify(req.body) }),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (err) {
    throw new NexusError('RELAY_UNREACHABLE', `no answer from the relay at ${base.origin}: ${(err as Error).message}`);
  }
  const body = (await res.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
  if (!res.ok) {
    const code = body?.error?.code;
    if (code !== undefined && code in ERROR_TABLE) throw new NexusError(code as ErrorCode, body?.error?.message ?? `HTTP ${res.status}`);
    throw new NexusError('INTERNAL', `the relay answered HTTP ${res.status}`);
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new NexusError('INTERNAL', `the relay's answer to ${req.method} /${req.path} is not what this version expects`);
  return parsed.data;
}

/** The options of `nxs relay stream ...`. */
export const STREAM_OPTIONS = {
  relay: { type: 'string' },
  token: { type: 'string' },
  wait: { type: 'string' },
  yes: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The verbs of `nxs relay stream`. */
export const STREAM_VERBS = ['create', 'list', 'delete', 'rotate-token'] as const;

/** `nxs relay stream <verb> ...`. */
export async function streamCommand(io: RelayIo, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, STREAM_OPTIONS, STREAM_HELP);
  const [verb, name, ...rest] = positionals;
  if (values.help || verb === undefined || verb === 'help') return io.stdout(STREAM_HELP);
  const named = verb === 'create' || verb === 'delete' || verb === 'rotate-token';
  if (!(STREAM_VERBS as readonly string[]).includes(verb)) throw new NexusError('USAGE', `unknown command "relay stream ${verb}"\n${STREAM_HELP}`);
  if ((named && name === undefined) || (named ? rest.length : positionals.length - 1) > 0) {
    throw new NexusError('USAGE', `usage: nxs relay stream ${verb}${named ? ' NAME' : ''} --relay URL\n${STREAM_HELP}`);
  }
  if (values.relay === undefined) throw new NexusError('USAGE', `nxs relay stream ${verb} needs --relay URL`);
  const token = values.token ?? (io.env['NEXUS_RELAY_TOKEN'] || undefined);
  if (token === undefined) throw new NexusError('USAGE', 'the operator token is needed: --token, or NEXUS_RELAY_TOKEN');
  const waitS = values.wait === undefined ? DEFAULT_WAIT_S : Number(values.wait);
  if (!Number.isFinite(waitS) || waitS < 0 || waitS > 600) throw new NexusError('USAGE', `--wait ${values.wait} is not a number of seconds from 0 to 600`);
  if (named && !StreamName.safeParse(name).success) throw new NexusError('BAD_REQUEST', `stream name "${name}" must match ^[a-z0-9][a-z0-9_-]{0,63}$`);
  const base = httpBase(values.relay);
  const go = <S extends z.ZodType>(req: Call, schema: S) => call(base, token, waitS * 1000, req, schema);
  const out = (json: unknown, text: string) => io.stdout(values.json ? JSON.stringify(json) + '\n' : text);
  const path = `v1/streams/${encodeURIComponent(name ?? '')}`;

  if (verb === 'create') {
    const made = await go({ method: 'POST', path: 'v1/streams', body: { name } }, CreateStreamResponseSchema);
    return out({ name: made.name, token: made.token, relay: base.origin }, `stream ${made.name} created on ${base.origin}\nstream token (shown this once): ${made.token}\n`);
  }
  if (verb === 'list') {
    const { streams } = await go({ method: 'GET', path: 'v1/streams' }, ListStreamsResponseSchema);
    const rows = streams.map((s) => `${s.name.padEnd(24)} ${String(s.head).padStart(10)} ${String(s.connections).padStart(11)}  ${s.created_at}`);
    const text = streams.length === 0 ? `no streams on ${base.origin}\n` : [`${'stream'.padEnd(24)} ${'head'.padStart(10)} ${'connections'.padStart(11)}  created`, ...rows].join('\n') + '\n';
    return out({ relay: base.origin, streams }, text);
  }
  if (verb === 'delete') {
    if (!values.yes) throw new NexusError('USAGE', `deleting stream ${name} removes all its ops for good; add --yes to do it`);
    const gone = await go({ method: 'DELETE', path }, DeleteStreamResponseSchema);
    return out({ name: gone.name, deleted_ops: gone.deleted_ops, relay: base.origin }, `stream ${gone.name} deleted from ${base.origin} (${gone.deleted_ops} ops)\n`);
  }
  const rotated = await go({ method: 'POST', path: `${path}/rotate-token` }, CreateStreamResponseSchema);
  return out(
    { name: rotated.name, token: rotated.token, relay: base.origin },
    `stream ${rotated.name} has a new token on ${base.origin}; nodes holding the old one were disconnected\nstream token (shown this once): ${rotated.token}\n`,
  );
}
