// Every run state and every budget of the built-in runtime, through the real SDKs against the scripted fake provider.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunStatus } from '../../protocol/runs.js';
import { useFakeProvider } from '../helpers/fake-provider/index.js';
import { until } from '../helpers/until.js';
import { journalOf, makeWorkingCopy, runAgainst, stateFile } from './fixture.js';

let wc: ReturnType<typeof makeWorkingCopy>;
const fake = useFakeProvider(() => wc?.cleanup());

const answer = (text: string) => ({ reply: { text } });
const call = (name: string, input: unknown, text?: string) => ({ reply: { ...(text ? { text } : {}), tool_calls: [{ name, input }] } });

/** The tool results the last request carried back to the model, in either API's shape. */
function toolResults(req: { api: string; body: any }): string[] {
  if (req.api === 'openai') return req.body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content);
  return req.body.messages.flatMap((m: any) => (Array.isArray(m.content) ? m.content : [])).filter((b: any) => b.type === 'tool_result').map((b: any) => (typeof b.content === 'string' ? b.content : JSON.stringify(b.content)));
}
const toolNames = (req: { api: string; body: any }): string[] => (req.body.tools ?? []).map((t: any) => t.name ?? t.function?.name);

describe.each(['anthropic', 'openai'] as const)('on %s', (provider) => {
  it('completes with the final text, streams it, and runs tool calls in between', async () => {
    wc = makeWorkingCopy({ 'README.md': 'the secret word is pelican\n' });
    fake.setScript([call('Read', { path: 'README.md' }, 'Reading.'), answer('The word is pelican.')]);
    const streamed: string[] = [];
    const r = await runAgainst(fake, wc.root, { provider, onEvent: (e) => e.type === 'text' && streamed.push(e.delta) });
    expect(r).toMatchObject({ status: 'completed', output: 'The word is pelican.', escalate: false, usage: { model_calls: 2, tool_calls: 1, tokens_in: 20, tokens_out: 10, corrections: 0 } });
    expect(streamed.join('')).toBe('Reading.The word is pelican.');
    expect(toolResults(fake.requests[1]!)).toEqual(['the secret word is pelican\n']);
    expect(stateFile(wc.root)).toMatchObject({ status: 'completed', output: 'The word is pelican.', usage: r.usage, provider });
    expect(journalOf(wc.root).map((e) => e.t)).toContain('tool_done');
  });

  it('retries 429 and 5xx answers within the retry allowance, counting each attempt as a model call', async () => {
    wc = makeWorkingCopy();
    fake.setScript([{ status: 429, retryAfterMs: 0 }, { status: provider === 'anthropic' ? 529 : 503 }, answer('ok')]);
    const r = await runAgainst(fake, wc.root, { provider });
    expect(r).toMatchObject({ status: 'completed', output: 'ok', usage: { model_calls: 3 } });
    expect(journalOf(wc.root).filter((e) => e.t === 'retry')).toHaveLength(2);
  });

  it('retries a request that timed out at the gateway or was cut off mid-stream as overloaded', async () => {
    wc = makeWorkingCopy();
    fake.setScript([provider === 'anthropic' ? { streamError: 'overloaded_error' } : { status: 408 }, { status: 504 }, answer('made it')]);
    const r = await runAgainst(fake, wc.root, { provider });
    expect(r).toMatchObject({ status: 'completed', output: 'made it', usage: { model_calls: 3 } });
  });

  it('fails once the provider keeps failing past the retries', async () => {
    wc = makeWorkingCopy();
    fake.setScript([{ status: 500 }, { drop: true }, { status: 503 }, answer('too late')]);
    const r = await runAgainst(fake, wc.root, { provider });
    expect(r.status).toBe('failed');
    expect(r.reason).toMatch(/failed 3 times/);
    expect(r.usage.model_calls).toBe(3);
    expect(fake.requests).toHaveLength(3);
  });

  it('fails at once on a request the provider refuses outright', async () => {
    wc = makeWorkingCopy();
    fake.setScript([{ status: 400 }]);
    const r = await runAgainst(fake, wc.root, { provider });
    expect(r).toMatchObject({ status: 'failed', usage: { model_calls: 1 } });
    expect(r.reason).toMatch(/refused the request/);
  });

  it('asks for a correction of malformed tool arguments and goes on, keeping the completed results', async () => {
    wc = makeWorkingCopy({ 'a.txt': 'alpha\n' });
    fake.setScript([
      { reply: { tool_calls: [{ name: 'Read', id: 'ok1', input: { path: 'a.txt' } }, { name: 'Read', id: 'bad1', input: '{"path": "a.t' }] } },
      answer('read it'),
    ]);
    const r = await runAgainst(fake, wc.root, { provider });
    expect(r).toMatchObject({ status: 'completed', usage: { corrections: 1, model_calls: 2, tool_calls: 1 } });
    const results = toolResults(fake.requests[1]!);
    expect(results[0]).toBe('alpha\n');
    expect(results[1]).toMatch(/not valid JSON/);
    expect(journalOf(wc.root).filter((e) => e.t === 'correction')).toHaveLength(1);
  });

  it('fails when the output stays malformed past the correction allowance, every attempt counted', async () => {
    wc = makeWorkingCopy();
    const bad = call('Read', '{not json');
    fake.setScript([bad, bad, bad, answer('never')]);
    const r = await runAgainst(fake, wc.root, { provider, limits: { retries: 2 } });
    expect(r.status).toBe('failed');
    expect(r.reason).toMatch(/still malformed after 2 corrections/);
    expect(r.usage).toMatchObject({ corrections: 2, model_calls: 3 });
  });

  it('is budget_exhausted when the model-call budget runs out before an answer', async () => {
    wc = makeWorkingCopy();
    fake.setScript(() => call('LS', {}));
    const r = await runAgainst(fake, wc.root, { provider, limits: { max_model_calls: 3, max_tool_calls: 100 } });
    expect(r).toMatchObject({ status: 'budget_exhausted', usage: { model_calls: 3, tool_calls: 3 } });
    expect(fake.requests).toHaveLength(3);
    expect(stateFile(wc.root).status).toBe('budget_exhausted');
  });

  it('is budget_exhausted when the token budget is spent, keeping the reply that crossed it', async () => {
    wc = makeWorkingCopy();
    fake.setScript([{ reply: { tool_calls: [{ name: 'LS', input: {} }], usage: { input: 30, output: 20 } } }, answer('never asked')]);
    const r = await runAgainst(fake, wc.root, { provider, limits: { max_tokens: 40 } });
    expect(r).toMatchObject({ status: 'budget_exhausted', usage: { model_calls: 1, tool_calls: 1, tokens_in: 30, tokens_out: 20 } });
    expect(fake.requests).toHaveLength(1);
  });

  it('fails explicitly when a token budget is set and the provider reports no usage', async () => {
    wc = makeWorkingCopy();
    fake.setScript([{ reply: { text: 'hi', usage: null } }]);
    const r = await runAgainst(fake, wc.root, { provider, limits: { max_tokens: 1000 } });
    expect(r.status).toBe('failed');
    expect(r.reason).toMatch(/no token usage/);
  });

  it('completes without usage when no token budget is set', async () => {
    wc = makeWorkingCopy();
    fake.setScript([{ reply: { text: 'hi', usage: null } }]);
    const r = await runAgainst(fake, wc.root, { provider });
    expect(r).toMatchObject({ status: 'completed', usage: { tokens_in: 0, tokens_out: 0 } });
  });

  it('refuses tool calls past the tool budget, then stops offering tools so the model answers', async () => {
    wc = makeWorkingCopy();
    fake.setScript([
      { reply: { tool_calls: [{ name: 'LS', input: {} }, { name: 'LS', input: {} }, { name: 'LS', input: {} }] } },
      call('LS', {}),
      answer('done with what I had'),
    ]);
    const r = await runAgainst(fake, wc.root, { provider, limits: { max_tool_calls: 2 } });
    expect(r).toMatchObject({ status: 'completed', usage: { tool_calls: 2, model_calls: 3 } });
    expect(toolNames(fake.requests[0]!)).toContain('LS');
    expect(toolResults(fake.requests[1]!)[2]).toMatch(/tool-call budget of 2 is used/);
    // Once the budget is used only the answer form is offered, and a call made anyway is refused at execution.
    expect(toolNames(fake.requests[1]!)).toEqual(['escalate']);
    expect(toolResults(fake.requests[2]!).at(-1)).toMatch(/tool-call budget of 2 is used/);
  });

  it('stores a tool output over the inline limit as a content-addressed artifact and gives the model a reference', async () => {
    wc = makeWorkingCopy();
    fake.setScript([call('Bash', { command: 'seq 1 2000' }), answer('counted')]);
    const r = await runAgainst(fake, wc.root, { provider, limits: { max_tool_output_chars: 256 } });
    expect(r.status).toBe('completed');
    const seen = toolResults(fake.requests[1]!)[0]!;
    expect(seen.length).toBeLessThanOrEqual(256);
    const ref = /(\.nxs\/artifacts\/sha256-[0-9a-f]{64}\.txt)/.exec(seen)?.[1];
    expect(ref).toBeDefined();
    expect(readFileSync(path.join(wc.root, ref!), 'utf8')).toMatch(/^exit code 0\n1\n2\n[\s\S]*\n2000\n$/);
  });

  it('ends completed with escalate set when the model hands the task back', async () => {
    wc = makeWorkingCopy();
    fake.setScript([call('escalate', { reason: 'I need the production credential.' })]);
    const r = await runAgainst(fake, wc.root, { provider });
    expect(r).toMatchObject({ status: 'completed', escalate: true, output: 'I need the production credential.' });
  });
});

describe('statuses that need time or a person', () => {
  it('is running while the provider thinks, and cancelled when the signal fires', async () => {
    wc = makeWorkingCopy();
    fake.setScript([{ stall: true }]);
    const ac = new AbortController();
    const run = runAgainst(fake, wc.root, { signal: ac.signal });
    await until('the run to show running', async () => (existsSync(path.join(wc.root, '.nxs', 'runs', 'r', 'run.json')) && stateFile(wc.root).status === 'running' && fake.requests.length === 1 ? true : undefined));
    ac.abort();
    const r = await run;
    expect(r).toMatchObject({ status: 'cancelled', usage: { model_calls: 1 } });
    expect(stateFile(wc.root)).toMatchObject({ status: 'cancelled', ended_at: expect.any(String) });
  });

  it('is timed_out when the deadline passes during a provider request, which gives up with it', async () => {
    wc = makeWorkingCopy();
    fake.setScript([{ stall: true }]);
    // The deadline counts from the run's start, which was almost a minute ago.
    const r = await runAgainst(fake, wc.root, { startedAt: Date.now() - 59_700, limits: { timeout_ms: 60_000 } });
    expect(r.status).toBe('timed_out');
    expect(stateFile(wc.root).status).toBe('timed_out');
  });

  it('is timed_out before any request when the deadline passed before the run started', async () => {
    wc = makeWorkingCopy();
    fake.setScript([answer('never')]);
    const r = await runAgainst(fake, wc.root, { startedAt: Date.now() - 61_000, limits: { timeout_ms: 60_000 } });
    expect(r).toMatchObject({ status: 'timed_out', usage: { model_calls: 0 } });
    expect(fake.requests).toHaveLength(0);
  });

  it('waits for approval on an ungranted call in an interactive run, showing the pending call', async () => {
    wc = makeWorkingCopy();
    fake.setScript([call('Write', { path: 'ok.txt', content: 'yes' }), call('Write', { path: 'no.txt', content: 'no' }), answer('done')]);
    const seen: RunStatus[] = [];
    const r = await runAgainst(fake, wc.root, {
      tools: [],
      approve: async (pc) => {
        const s = stateFile(wc.root);
        seen.push(s.status);
        expect(s.pending_calls).toEqual([pc]);
        return pc.summary.includes('ok.txt');
      },
    });
    expect(seen).toEqual(['waiting_approval', 'waiting_approval']);
    expect(r.status).toBe('completed');
    expect(readFileSync(path.join(wc.root, 'ok.txt'), 'utf8')).toBe('yes');
    expect(existsSync(path.join(wc.root, 'no.txt'))).toBe(false);
    expect(toolResults(fake.requests[2]!).at(-1)).toMatch(/said no/);
  });

  it('refuses an ungranted call to the model when nobody can approve it, and nothing is written', async () => {
    wc = makeWorkingCopy();
    fake.setScript([call('Write', { path: 'x.txt', content: 'x' }), answer('could not')]);
    const r = await runAgainst(fake, wc.root, { tools: [] });
    expect(r.status).toBe('completed');
    expect(toolResults(fake.requests[1]!)[0]).toMatch(/nobody is here to approve/);
    expect(existsSync(path.join(wc.root, 'x.txt'))).toBe(false);
    expect(toolNames(fake.requests[0]!)).toEqual(['Read', 'LS', 'Grep', 'escalate']);
  });
});

describe('resume', () => {
  it('keeps the saved limits, usage and deadline, and the results already recorded', async () => {
    wc = makeWorkingCopy({ 'a.txt': 'alpha\n' });
    const ac = new AbortController();
    fake.setScript((_req, n) => (n === 0 ? call('Read', { path: 'a.txt' }) : { stall: true }));
    const started = Date.now() - 1000;
    const first = runAgainst(fake, wc.root, { signal: ac.signal, startedAt: started, limits: { max_model_calls: 5, timeout_ms: 60_000 } });
    await until('the second request', async () => (fake.requests.length === 2 ? true : undefined));
    ac.abort();
    expect((await first).status).toBe('cancelled');
    // A crash leaves no terminal status behind (cancelled is one, so it is cut off here): that is what resume is for.
    const journal = path.join(wc.root, '.nxs', 'runs', 'r', 'journal.jsonl');
    const lines = readFileSync(journal, 'utf8').trimEnd().split('\n');
    writeFileSync(journal, lines.filter((l) => JSON.parse(l).status !== 'cancelled').join('\n') + '\n');
    fake.setScript([answer('resumed and done')]);
    fake.requests.length = 0;
    const r = await runAgainst(fake, wc.root, { resume: true, limits: { max_model_calls: 99, timeout_ms: 1 } });
    expect(r).toMatchObject({ status: 'completed', output: 'resumed and done', started_at: started });
    expect(r.limits).toMatchObject({ max_model_calls: 5, timeout_ms: 60_000, deadline_at: started + 60_000 });
    expect(r.usage).toMatchObject({ model_calls: 3, tool_calls: 1 });
    expect(toolResults(fake.requests[0]!)).toEqual(['alpha\n']);
  });

  it('ends failed, with the reason, when asked to resume a run that already ended', async () => {
    wc = makeWorkingCopy();
    fake.setScript([answer('first')]);
    expect((await runAgainst(fake, wc.root)).status).toBe('completed');
    fake.requests.length = 0;
    const r = await runAgainst(fake, wc.root, { resume: true });
    expect(r.status).toBe('failed');
    expect(r.reason).toMatch(/^JOURNAL_INVALID: the run already ended completed/);
    expect(fake.requests).toHaveLength(0);
  });
});
