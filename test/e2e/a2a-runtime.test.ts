// A persona on `runtime: {a2a: {url}}`: a commission from Nexus answered by an A2A agent served by the A2A SDK's own server.
import { mkdirSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { A2A_PROTOCOL_VERSION, AGENT_CARD_PATH, type AgentCard, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';

let ws: TestWorkspace;
let server: Server;
let url: string;
const asked: string[] = [];

/** The outside agent: answers a task with one artifact, "pong" and the first line it was sent. */
const executor: AgentExecutor = {
  async execute(ctx, bus) {
    const text = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
    asked.push(text);
    const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
    bus.publish(AgentEvent.task({ id: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() }, artifacts: [], history: [ctx.userMessage], metadata: undefined }));
    bus.publish(AgentEvent.artifactUpdate({ ...ids, artifact: { artifactId: 'a1', name: 'answer', description: '', parts: [{ content: { $case: 'text', value: `pong from outside (${text.includes('ping the outside') ? 'asked' : 'not asked'})` }, metadata: undefined, filename: '', mediaType: 'text/plain' }], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
    bus.publish(AgentEvent.statusUpdate({ ...ids, status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined }));
  },
  cancelTask: async () => undefined,
};

beforeAll(async () => {
  const express = (await import('express' as string)).default as () => any;
  const app = express();
  server = await new Promise<Server>((resolve) => {
    const s: Server = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card: AgentCard = {
    name: 'outside', description: 'an agent outside Nexus', version: '1.0.0',
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }],
    provider: undefined, documentationUrl: undefined, capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text'], defaultOutputModes: ['text'], skills: [], signatures: [], iconUrl: undefined,
  } as AgentCard;
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use(jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  ws = await makeWorkspace({ real: true });
  ws.cliInProcess = true;
  mkdirSync(join(ws.root, '.nxs-personas'), { recursive: true });
  writeFileSync(join(ws.root, '.nxs-personas', 'outside.yaml'), ['model: any', 'system_prompt: An agent elsewhere.', 'tools: []', 'runtime:', '  a2a:', `    url: ${url}`].join('\n') + '\n');
});
afterAll(async () => {
  await ws?.cleanup();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
});

describe('runtime: {a2a: {url}}', () => {
  it('commissions an outside A2A agent as if local: its answer is the session\'s, at the session\'s depth', async () => {
    const sent = await ws.nxc(['send', 'outside', '--subject', 'a2a', '--json', 'Please ping the outside agent.']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    expect(sent.json.woke).toMatchObject({ role: 'outside', depth: 1 });
    await ws.waitIdle(120_000);
    const view = await ws.nxc(['threads', 'show', sent.json.thread, '--json']);
    expect(view.json.messages.at(-1)).toMatchObject({ author: `${ws.short}/outside`, effect: 'answer', text: 'pong from outside (asked)' });
    // What the agent was sent is the turn's prompt: the thread as the session sees it.
    expect(asked.at(-1)).toContain('Please ping the outside agent.');
  }, 180_000);
});
