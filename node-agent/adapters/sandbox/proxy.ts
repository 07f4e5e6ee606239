// The filtering proxy behind a host list (`network: [hosts]`). The supervising process runs it outside the sandbox,
// listening on a Unix socket that is bound into the sandbox; the sandbox itself has no network (no route out, no
// resolver), so this socket is its only way out. It serves HTTP CONNECT (https, or anything tunnelled) and plain
// requests for an absolute http:// URL, to the declared hosts only, resolving their names itself; everything else is
// answered 403 and counted.
import { rmSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** One declared host: `example.com`, `*.example.com` (any name below it, not itself), either with `:port` or any port. */
export type HostRule = { name: string; wildcard: boolean; port: number | null };

export function hostRules(hosts: readonly string[]): HostRule[] {
  return hosts.map((h) => {
    const at = h.lastIndexOf(':');
    const name = (at < 0 ? h : h.slice(0, at)).toLowerCase().replace(/\.$/, '');
    const port = at < 0 ? null : Number(h.slice(at + 1));
    return name.startsWith('*.') ? { name: name.slice(2), wildcard: true, port } : { name, wildcard: false, port };
  });
}

/** Whether a request for `host:port` is declared. Names are compared as written: `localhost` is not `127.0.0.1`. */
export function hostAllowed(rules: readonly HostRule[], host: string, port: number): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return rules.some((r) => (r.port === null || r.port === port) && (r.wildcard ? name.endsWith(`.${r.name}`) : name === r.name));
}

/** A refused request, as the supervisor logs it. */
export type Refusal = { method: string; host: string; port: number | null };

export type FilteringProxy = {
  /** The Unix socket it listens on (outside the sandbox). */
  readonly path: string;
  /** How many requests it refused so far. */
  readonly refused: number;
  /** Stops listening, cuts every open connection and removes the socket. */
  close(): Promise<void>;
};

/** `host:port` of a CONNECT line, or null for anything else. */
function connectTarget(target: string | undefined): { host: string; port: number } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:/\s]+):(\d{1,5})$/.exec(target ?? '');
  return m === null ? null : { host: m[1]!, port: Number(m[2]) };
}

/** Header names that describe one hop (this proxy's), not the request: not passed on. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

export async function startFilteringProxy(opts: { path: string; hosts: readonly string[]; onRefuse?: (r: Refusal) => void }): Promise<FilteringProxy> {
  const rules = hostRules(opts.hosts);
  let refused = 0;
  const open = new Set<Duplex>();
  const track = (s: Duplex) => {
    open.add(s);
    s.once('close', () => open.delete(s));
  };
  const refuse = (r: Refusal): string => {
    refused++;
    try {
      opts.onRefuse?.(r);
    } catch {
      // A log that cannot be written does not open anything.
    }
    return `${r.host}${r.port === null ? '' : `:${r.port}`} is not in this session's network: list\n`;
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let url: URL | null = null;
    try {
      url = new URL(req.url ?? '');
    } catch {
      // Not an absolute URL: a request for the proxy itself, which serves nothing.
    }
    if (url === null || url.protocol !== 'http:') {
      res.writeHead(url === null ? 400 : 403, { 'content-type': 'text/plain' }).end(refuse({ method: req.method ?? '?', host: url?.hostname || String(req.headers.host ?? '?'), port: null }));
      return;
    }
    const port = url.port === '' ? 80 : Number(url.port);
    if (!hostAllowed(rules, url.hostname, port)) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end(refuse({ method: req.method ?? '?', host: url.hostname, port }));
      return;
    }
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP.has(k)) headers[k] = v;
    // The host asked for is the one declared, whatever Host header came with it.
    headers['host'] = url.host;
    const up = httpRequest({ host: url.hostname, port, method: req.method, path: url.pathname + url.search, headers, agent: false }, (answer) => {
      const back: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(answer.headers)) if (v !== undefined && !HOP.has(k)) back[k] = v;
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, back);
      answer.pipe(res);
    });
    up.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end(`the proxy could not reach ${url.host}: ${err.message}\n`);
      else res.destroy();
    });
    req.pipe(up);
  });

  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    track(client);
    client.on('error', () => undefined);
    const target = connectTarget(req.url);
    if (target === null || !hostAllowed(rules, target.host, target.port)) {
      const why = refuse({ method: 'CONNECT', host: target?.host ?? String(req.url), port: target?.port ?? null });
      client.end(`HTTP/1.1 ${target === null ? '400 Bad Request' : '403 Forbidden'}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(why)}\r\nconnection: close\r\n\r\n${why}`);
      return;
    }
    const up: Socket = connect({ host: target.host, port: target.port });
    track(up);
    let linked = false;
    up.once('connect', () => {
      linked = true;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) up.write(head);
      up.pipe(client);
      client.pipe(up);
    });
    up.on('error', (err) => {
      if (!linked) client.end(`HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nthe proxy could not reach ${req.url}: ${err.message}\n`);
      else client.destroy();
    });
    client.once('close', () => up.destroy());
    up.once('close', () => client.destroy());
  });
  server.on('connection', track);
  server.on('clientError', (_err, socket) => socket.destroy());

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.path, () => resolve());
  });
  return {
    path: opts.path,
    get refused() {
      return refused;
    },
    async close() {
      const closed = new Promise<void>((r) => server.close(() => r()));
      for (const s of open) s.destroy();
      await closed;
      rmSync(opts.path, { force: true });
    },
  };
}
