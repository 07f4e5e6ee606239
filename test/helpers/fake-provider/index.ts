// A scripted model provider on a loopback port: speaks Anthropic Messages, OpenAI Chat Completions and OpenAI Responses so the real SDKs and CLIs can be pointed at it.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  anthropicError,
  anthropicMessage,
  anthropicStream,
  anthropicStreamError,
  openaiCompletion,
  openaiError,
  openaiStream,
  responsesObject,
  responsesStream,
  responsesStreamError,
} from './wire.js';

export type ScriptedCall = {
  name: string;
  id?: string;
  /** An object is sent as JSON; a string is sent verbatim (for malformed arguments). */
  input?: unknown;
  /** Responses only: the namespace of a tool offered inside one (codex offers an MCP server's tools so). */
  namespace?: string;
};

export type ScriptedReply = {
  text?: string;
  tool_calls?: ScriptedCall[];
  /** null: the provider reports no usage at all. */
  usage?: { input: number; output: number } | null;
  stop?: string;
};

export type Step =
  | { reply: ScriptedReply; delayMs?: number }
  /** An HTTP error answer; `retryAfterMs` is sent as retry-after-ms (and retry-after in whole seconds). */
  | { status: number; retryAfterMs?: number }
  /** An error event inside an opened stream: Anthropic's error event (e.g. overloaded_error), or response.failed with that code (Responses). */
  | { streamError: string }
  /** The connection is cut without an answer. */
  | { drop: true }
  /** The request is never answered; the client must give up by itself. */
  | { stall: true };

/** openai: Chat Completions; responses: the Responses API (POST .../responses). */
export type Api = 'anthropic' | 'openai' | 'responses';

export type RecordedRequest = { api: Api; path: string; headers: IncomingMessage['headers']; body: any };

export type Script = Step[] | ((req: RecordedRequest, index: number) => Step);

export type FakeProvider = {
  /** For the Anthropic SDK's baseURL. */
  readonly anthropicUrl: string;
  /** For the OpenAI SDK's baseURL (it expects the /v1 prefix in the URL); Chat Completions and Responses both live under it. */
  readonly openaiUrl: string;
  readonly requests: RecordedRequest[];
  /**
   * For HTTP(S)_PROXY: a client told to use the fake as its proxy has every attempt to leave the machine
   * (a CONNECT, or a request for an absolute URL) refused with 403 and listed here.
   */
  readonly proxyUrl: string;
  readonly proxied: string[];
  /** Replaces the script; the request count starts again at 0. */
  setScript(script: Script): void;
  close(): Promise<void>;
};

const EXHAUSTED: Step = { status: 400 };

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function stream(res: ServerResponse, text: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(text);
}

function answer(api: Api, req: RecordedRequest, step: Step, n: number, res: ServerResponse, socket: Socket): void {
  if ('stall' in step) return;
  if ('drop' in step) {
    socket.destroy();
    return;
  }
  if ('status' in step) {
    const headers: Record<string, string> = {};
    if (step.retryAfterMs !== undefined) {
      headers['retry-after-ms'] = String(step.retryAfterMs);
      headers['retry-after'] = String(Math.ceil(step.retryAfterMs / 1000));
    }
    send(res, step.status, api === 'anthropic' ? anthropicError(step.status) : openaiError(step.status), headers);
    return;
  }
  if ('streamError' in step) {
    stream(res, api === 'responses' ? responsesStreamError(step.streamError) : anthropicStreamError(step.streamError));
    return;
  }
  const model = String(req.body?.model ?? 'fake-model');
  if (api === 'responses') {
    if (req.body?.stream === true) stream(res, responsesStream(step.reply, model, n));
    else send(res, 200, responsesObject(step.reply, model, n));
  } else if (api === 'anthropic') {
    if (req.body?.stream === true) stream(res, anthropicStream(step.reply, model, n));
    else send(res, 200, anthropicMessage(step.reply, model, n));
  } else if (req.body?.stream === true) {
    stream(res, openaiStream(step.reply, model, n, req.body?.stream_options?.include_usage === true));
  } else {
    send(res, 200, openaiCompletion(step.reply, model, n));
  }
}

/** Starts the fake on 127.0.0.1, port 0. Every request is recorded, then answered by the next step of the script. */
export async function startFakeProvider(script: Script = []): Promise<FakeProvider> {
  let current = script;
  let count = 0;
  const requests: RecordedRequest[] = [];
  const proxied: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (/^[a-z]+:\/\//i.test(req.url ?? '')) {
        proxied.push(`${req.method} ${req.url}`);
        send(res, 403, { error: { message: 'the fake provider does not forward requests' } });
        return;
      }
      const path = (req.url ?? '').split('?')[0] ?? '';
      const api: Api | null = path.endsWith('/v1/messages') ? 'anthropic' : path.endsWith('/chat/completions') ? 'openai' : path.endsWith('/responses') ? 'responses' : null;
      if (api === null || req.method !== 'POST') {
        send(res, 404, { error: { message: `the fake provider has no ${req.method} ${path}` } });
        return;
      }
      let body: unknown = null;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        send(res, 400, { error: { message: 'the request body is not JSON' } });
        return;
      }
      const recorded: RecordedRequest = { api, path, headers: req.headers, body };
      requests.push(recorded);
      const n = count++;
      const step = typeof current === 'function' ? current(recorded, n) : (current[n] ?? EXHAUSTED);
      const delay = 'reply' in step ? (step.delayMs ?? 0) : 0;
      if (delay > 0) setTimeout(() => answer(api, recorded, step, n, res, req.socket), delay);
      else answer(api, recorded, step, n, res, req.socket);
    });
  });
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    proxied.push(`CONNECT ${req.url}`);
    socket.on('error', () => undefined);
    socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  return {
    anthropicUrl: base,
    openaiUrl: `${base}/v1`,
    proxyUrl: base,
    requests,
    proxied,
    setScript(s) {
      current = s;
      count = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
