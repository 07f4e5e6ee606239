// The fake provider's OpenAI Responses API, read by the real OpenAI SDK: text, function calls, usage, streamed and not, and its failures.
import { request } from 'node:http';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider/index.js';

let fake: FakeProvider;
let client: OpenAI;

beforeAll(async () => {
  fake = await startFakeProvider();
  client = new OpenAI({ apiKey: 'test-key', baseURL: fake.openaiUrl, maxRetries: 0 });
});
afterAll(async () => {
  await fake.close();
});

describe('the fake provider speaking the Responses API', () => {
  it('answers a request with a message and function calls, and their usage', async () => {
    fake.setScript([{ reply: { text: 'Looking.', tool_calls: [{ name: 'exec_command', id: 'call_a', input: { cmd: 'ls' } }], usage: { input: 40, output: 7 } } }]);
    const r = await client.responses.create({ model: 'fake-model', input: 'list the files' });
    expect(r.status).toBe('completed');
    expect(r.output_text).toBe('Looking.');
    expect(r.output.find((o) => o.type === 'function_call')).toMatchObject({ name: 'exec_command', call_id: 'call_a', arguments: '{"cmd":"ls"}' });
    expect(r.usage).toMatchObject({ input_tokens: 40, output_tokens: 7, total_tokens: 47 });
    expect(fake.requests.at(-1)).toMatchObject({ api: 'responses', path: '/v1/responses', body: { input: 'list the files' } });
  });

  it('streams the same reply as events whose deltas add up to the items, ending in response.completed', async () => {
    const input = { cmd: 'nxc reply --thread t-1 "done"' };
    fake.setScript([{ reply: { text: 'Replying on the thread now.', tool_calls: [{ name: 'exec_command', input }], usage: { input: 12, output: 3 } } }]);
    const stream = await client.responses.create({ model: 'fake-model', input: 'go', stream: true });
    const types: string[] = [];
    let text = '';
    let args = '';
    let completed: OpenAI.Responses.Response | null = null;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
      if (ev.type === 'response.completed') completed = ev.response;
    }
    expect(text).toBe('Replying on the thread now.');
    expect(JSON.parse(args)).toEqual(input);
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(types.filter((t) => t === 'response.output_item.done')).toHaveLength(2);
    expect(completed?.usage).toMatchObject({ input_tokens: 12, output_tokens: 3 });
    expect(completed?.output.map((o) => o.type)).toEqual(['message', 'function_call']);
  });

  it('ends a reply cut short as response.incomplete with its reason, and reports no usage when told to', async () => {
    fake.setScript([{ reply: { text: 'Half an ans', stop: 'max_output_tokens', usage: null } }]);
    const stream = await client.responses.create({ model: 'fake-model', input: 'go', stream: true });
    let last: OpenAI.Responses.ResponseStreamEvent | null = null;
    for await (const ev of stream) last = ev;
    expect(last).toMatchObject({ type: 'response.incomplete', response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage: null } });
  });

  it('fails a stream with response.failed, and answers an HTTP error the SDK reads', async () => {
    fake.setScript([{ streamError: 'server_error' }, { status: 429 }]);
    const stream = await client.responses.create({ model: 'fake-model', input: 'go', stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of stream) events.push(ev);
    expect(events).toMatchObject([{ type: 'response.failed', response: { status: 'failed', error: { code: 'server_error' } } }]);
    await expect(client.responses.create({ model: 'fake-model', input: 'go' })).rejects.toMatchObject({ status: 429 });
  });
});

describe('the fake provider as a proxy that lets nothing out', () => {
  const viaProxy = (method: string, path: string) =>
    new Promise<number>((resolve, reject) => {
      const { hostname, port } = new URL(fake.proxyUrl);
      const req = request({ hostname, port, method, path });
      req.on('connect', (res, socket) => {
        socket.destroy();
        resolve(res.statusCode ?? 0);
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });

  it('refuses a CONNECT tunnel and a request for an absolute URL, and lists both', async () => {
    fake.proxied.length = 0;
    expect(await viaProxy('CONNECT', 'api.openai.com:443')).toBe(403);
    expect(await viaProxy('GET', 'http://example.com/v1/responses')).toBe(403);
    expect(fake.proxied).toEqual(['CONNECT api.openai.com:443', 'GET http://example.com/v1/responses']);
  });
});
