// `nxs a2a serve`: the personas a workspace declares `addressable: {a2a: true}` as A2A agents, with the A2A SDK's
// own request handler. An incoming message is a commission from the client (a person handle `a2a-<client>`, at
// depth 0 of a new operation, its text read by the session as untrusted content); the task follows the thread.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { A2A_PROTOCOL_VERSION, A2A_VERSION_HEADER, AgentCard, Role, TaskState, type Message, type Part, type Task, type TaskStatus } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  ServerCallContext,
  validateVersion,
  type AgentExecutor,
  type ExecutionEventBus,
  type User,
} from '@a2a-js/sdk/server';
import { a2aClientHandle } from '../../../protocol/a2a.js';
import type { CallerClaim, WorkspaceCommand } from '../../../protocol/commands.js';
import { internalError, NexusError } from '../../../protocol/errors.js';
import type { Receipt, ThreadView } from '../../../protocol/receipts.js';
import type { Persona } from '../../adapters/personas/index.js';
import type { Workspace } from '../../adapters/workspace/index.js';
import type { Router } from '../remote.js';
import { a2aClientOf } from './tokens.js';

export type A2aServeOptions = {
  workspace: Workspace;
  /** The personas to publish: those declared `addressable: {a2a: true}` (the caller lists them). */
  personas: readonly Persona[];
  router: Router;
  env: NodeJS.ProcessEnv;
  host: string;
  port: number;
  /** The address clients reach this server at, which the cards name (default: http://host:port as bound). */
  publicUrl?: string;
  /** How often a task's thread is read while it is open (default 1 s). */
  pollMs?: number;
  version: string;
};

export type A2aServer = { url: string; agents: Array<{ role: string; url: string; card: string }>; close(): Promise<void> };

/** Where a persona's agent answers (JSON-RPC) and where its card is, under the server's URL. */
export const agentPath = (role: string) => `/a2a/${role}`;
const CARD_PATH = '/.well-known/agent-card.json';
/** The longest request body taken: a message is a commission's text, at most a few MiB. */
const MAX_BODY = 4 * 1024 * 1024;

const textOf = (parts: readonly Part[] | undefined): string => (parts ?? []).flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join('\n');
const textPart = (text: string): Part => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' });

function agentMessage(contextId: string, taskId: string, text: string): Message {
  return { messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT, parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [] };
}

/**
 * A thread's state as a task's: open and not yet started is submitted, a session at work (or waiting on its own
 * commissions) is working; answered is completed, a hand-back is input-required, a withdrawal canceled, and a
 * refusal by the workspace addressed rejected.
 */
export function taskStateOf(view: Pick<ThreadView, 'thread'>): TaskState {
  const row = view.thread;
  if (row.state === 'open') return row.session === null || (row.session.turn === 0 && !row.session.running) ? TaskState.TASK_STATE_SUBMITTED : TaskState.TASK_STATE_WORKING;
  if (row.withdrawn) return TaskState.TASK_STATE_CANCELED;
  if (row.rejected_code) return TaskState.TASK_STATE_REJECTED;
  return row.escalated ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_COMPLETED;
}

const FINAL = new Set([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_INPUT_REQUIRED]);

/** The answer's text: the last message on the thread once it is answered. */
const answerText = (view: ThreadView): string => view.messages.at(-1)?.text ?? '';

function cardOf(persona: Persona, ws: Workspace, url: string, version: string): AgentCard {
  return {
    name: `${ws.short}/${persona.role}`,
    description: persona.description ?? `${persona.role}, a persona of the Nexus workspace "${ws.name}"`,
    version,
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }],
    provider: undefined,
    documentationUrl: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: { bearer: { scheme: { $case: 'httpAuthSecurityScheme', value: { description: 'a token from `nxs a2a token add`', scheme: 'Bearer', bearerFormat: '' } } } },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: persona.role, name: persona.role, description: persona.description ?? persona.role, tags: [], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
    iconUrl: undefined,
  } as AgentCard;
}

/** An authenticated client: its name is the handle its commissions are opened under. */
class ClientUser implements User {
  constructor(private readonly name: string) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.name;
  }
}

type Follow = { thread: string; caller: CallerClaim; contextId: string };

function executorFor(role: string, opts: A2aServeOptions, stopped: AbortSignal): AgentExecutor {
  const { workspace: ws, router, env } = opts;
  const run = async <T>(command: WorkspaceCommand, input: unknown): Promise<T> =>
    (await router(ws, (r) => (r as (n: WorkspaceCommand, i: unknown) => Promise<unknown>)(command, input), env)).result as T;
  const tasks = new Map<string, Follow>();
  const every = opts.pollMs ?? 1_000;

  /** Publishes the thread's state as the task's each time it changes, until it is final or the server stops. */
  async function follow(bus: ExecutionEventBus, ids: { taskId: string; contextId: string }, thread: string, from: TaskState): Promise<void> {
    let last = from;
    for (;;) {
      const view = await run<ThreadView>('threads.show', { thread });
      const state = taskStateOf(view);
      if (state !== last) {
        last = state;
        const timestamp = new Date().toISOString();
        if (!FINAL.has(state)) {
          bus.publish(AgentEvent.statusUpdate({ ...ids, status: { state, message: undefined, timestamp }, metadata: undefined }));
        } else {
          const text = answerText(view);
          if (state === TaskState.TASK_STATE_COMPLETED) {
            bus.publish(AgentEvent.artifactUpdate({ ...ids, artifact: { artifactId: `${thread}-answer`, name: 'answer', description: '', parts: [textPart(text)], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
          }
          const status: TaskStatus = { state, message: state === TaskState.TASK_STATE_COMPLETED ? undefined : agentMessage(ids.contextId, ids.taskId, text), timestamp };
          bus.publish(AgentEvent.statusUpdate({ ...ids, status, metadata: undefined }));
          return;
        }
      }
      if (stopped.aborted) return;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, every);
        stopped.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
      });
    }
  }

  return {
    async execute(ctx, bus) {
      const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
      const client = ctx.context.user?.isAuthenticated === true ? ctx.context.user.userName : null;
      if (client === null) throw new NexusError('UNAUTHORIZED', 'no client');
      const caller: CallerClaim = { actor: a2aClientHandle(client), session: null, hop: null };
      const text = textOf(ctx.userMessage.parts);
      const known = tasks.get(ctx.taskId);
      const fail = (err: unknown) => {
        const e = internalError(err);
        bus.publish(AgentEvent.statusUpdate({ ...ids, status: { state: TaskState.TASK_STATE_FAILED, message: agentMessage(ids.contextId, ids.taskId, `${e.code}: ${e.message}`), timestamp: new Date().toISOString() }, metadata: undefined }));
      };
      if (ctx.task !== undefined && known !== undefined) {
        // More from the client on a task it started (after a hand-back): a reply on its thread, which the session reads.
        bus.publish(AgentEvent.task({ ...ctx.task, history: [...ctx.task.history, ctx.userMessage], status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() } }));
        try {
          await run<Receipt>('reply', { thread: known.thread, escalate: false, text, caller });
        } catch (err) {
          return fail(err);
        }
        return follow(bus, ids, known.thread, TaskState.TASK_STATE_WORKING);
      }
      const task: Task = { id: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() }, artifacts: [], history: [ctx.userMessage], metadata: undefined };
      let receipt: Receipt;
      try {
        const subject = text.split('\n', 1)[0]!.slice(0, 120).trim();
        receipt = await run<Receipt>('send', { to: role, subject: subject === '' ? null : subject, text, caller });
      } catch (err) {
        bus.publish(AgentEvent.task(task));
        return fail(err);
      }
      tasks.set(ctx.taskId, { thread: receipt.thread, caller, contextId: ctx.contextId });
      bus.publish(AgentEvent.task({ ...task, metadata: { nexus_thread: receipt.thread, nexus_operation: receipt.operation } }));
      await follow(bus, ids, receipt.thread, TaskState.TASK_STATE_SUBMITTED);
    },
    async cancelTask(taskId, bus) {
      const known = tasks.get(taskId);
      if (known === undefined) return;
      // The client sent the operation's first commission, so it may take it back as any sender may.
      await run('withdraw', { thread: known.thread, caller: known.caller });
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId: known.contextId, status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined }));
    },
  };
}

function readBody(req: IncomingMessage): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        resolve(null);
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

const rpcError = (id: unknown, code: number, message: string) => JSON.stringify({ jsonrpc: '2.0', id: id ?? null, error: { code, message } });

/** Serves the agents until `close`. A request without a valid bearer token is refused before anything reads it. */
export async function serveA2a(opts: A2aServeOptions): Promise<A2aServer> {
  const stop = new AbortController();
  const handlers = new Map<string, { handler: DefaultRequestHandler; rpc: JsonRpcTransportHandler }>();
  let base = opts.publicUrl ?? '';

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    // The root card is the one agent's, when one is published: a client given only the server's address finds it.
    const path = url.pathname === CARD_PATH && handlers.size === 1 ? `${agentPath([...handlers.keys()][0]!)}${CARD_PATH}` : url.pathname;
    const m = /^\/a2a\/([a-z][a-z0-9_-]{0,39})(\/\.well-known\/agent-card\.json)?\/?$/.exec(path);
    const agent = m ? handlers.get(m[1]!) : undefined;
    if (agent === undefined) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'no agent here', agents: [...handlers.keys()].map((r) => `${base}${agentPath(r)}`) }));
      return;
    }
    if (m![2] !== undefined) {
      // The card is public, as A2A has it: it says how to authenticate, and nothing a token opens.
      if (req.method !== 'GET') return void res.writeHead(405).end();
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache' }).end(JSON.stringify(AgentCard.toJSON(await agent.handler.getAgentCard())));
      return;
    }
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const auth = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    const client = auth ? a2aClientOf(opts.workspace.paths, auth[1]!) : null;
    if (client === null) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end(rpcError(null, -32001, 'UNAUTHORIZED: a bearer token from `nxs a2a token add` is needed'));
      return;
    }
    const text = await readBody(req);
    if (text === null) return void res.writeHead(413, { 'content-type': 'application/json' }).end(rpcError(null, -32600, 'the request body is too large'));
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(rpcError(null, -32700, 'the request is not JSON'));
    }
    try {
      const version = req.headers[A2A_VERSION_HEADER.toLowerCase()];
      const context = new ServerCallContext({ user: new ClientUser(client), ...(typeof version === 'string' ? { requestedVersion: version } : {}) });
      validateVersion(context.requestedVersion, await agent.handler.getAgentCard(), 'JSONRPC');
      const out = await agent.rpc.handle(body, context);
      if (typeof (out as AsyncGenerator)[Symbol.asyncIterator] !== 'function') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      try {
        for await (const event of out as AsyncGenerator) res.write(`data: ${JSON.stringify(event)}\n\n`);
      } catch (err) {
        res.write(`event: error\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: body['id'] ?? null, error: JsonRpcTransportHandler.mapToJSONRPCError(err) })}\n\n`);
      }
      res.end();
    } catch (err) {
      if (!res.headersSent) res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: body['id'] ?? null, error: JsonRpcTransportHandler.mapToJSONRPCError(err) }));
    }
  }

  const server: Server = createServer((req, res) => {
    answer(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(rpcError(null, -32603, internalError(err).message));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new NexusError(err.code === 'EADDRINUSE' ? 'ADDRESS_IN_USE' : 'LISTEN_FAILED', `cannot listen on ${opts.host}:${opts.port}: ${err.message}`, undefined, { cause: err })),
    );
    server.listen(opts.port, opts.host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  if (base === '') base = `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
  base = base.replace(/\/+$/, '');
  for (const p of opts.personas) {
    const handler = new DefaultRequestHandler(cardOf(p, opts.workspace, `${base}${agentPath(p.role)}`, opts.version), new InMemoryTaskStore(), executorFor(p.role, opts, stop.signal));
    handlers.set(p.role, { handler, rpc: new JsonRpcTransportHandler(handler) });
  }
  return {
    url: base,
    agents: opts.personas.map((p) => ({ role: p.role, url: `${base}${agentPath(p.role)}`, card: `${base}${agentPath(p.role)}${CARD_PATH}` })),
    close: () =>
      new Promise<void>((resolve) => {
        stop.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
