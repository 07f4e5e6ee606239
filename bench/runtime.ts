// bench:runtime — what the built-in runtime adds per model call, beyond the provider's own round trip (fake provider on loopback).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createModelClient, executeRun, fileCommandLeases, policyFor, resolveLimits, type ModelClient } from '../node-agent/capabilities/runtime/index.js';
import { startFakeProvider, type FakeProvider } from '../test/helpers/fake-provider/index.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 200);
const CALLS_PER_RUN = 10;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}
function p90(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length * 0.9)]!;
}
const ms = (x: number) => `${x.toFixed(3)} ms`;

/** One raw HTTP POST of a streamed Messages request, read to the end: the floor any client pays. */
function rawRoundTrip(fake: FakeProvider, body: string): Promise<void> {
  const url = new URL(`${fake.anthropicUrl}/v1/messages`);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.on('data', () => undefined);
      res.on('end', () => resolve());
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function time(n: number, f: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f();
    out.push(performance.now() - t);
  }
  return out;
}

async function main(): Promise<void> {
  const work = mkdtempSync(path.join(tmpdir(), 'nxs-bench-runtime-'));
  mkdirSync(path.join(work, '.nxs'), { recursive: true });
  // Every request but each run's last asks for one cheap tool, so the loop goes round; the last one answers.
  const fake = await startFakeProvider((req) => {
    const tools = (req.body.messages as unknown[]).length;
    return tools >= CALLS_PER_RUN * 2 - 1 ? { reply: { text: 'done' } } : { reply: { tool_calls: [{ name: 'LS', input: { path: '.' } }] } };
  });
  const sdk = createModelClient({ provider: 'anthropic', model: 'bench', base_url: fake.anthropicUrl }, { ANTHROPIC_API_KEY: 'bench' });
  // Time spent inside provider requests, so what is left of a run is the runtime's own work.
  let inProvider = 0;
  const client: ModelClient = {
    provider: sdk.provider,
    model: sdk.model,
    async call(req) {
      const t = performance.now();
      try {
        return await sdk.call(req);
      } finally {
        inProvider += performance.now() - t;
      }
    },
  };
  const body = JSON.stringify({ model: 'bench', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] });
  const ac = new AbortController();
  const sdkCall = () => sdk.call({ system: 's', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], tools: [], signal: ac.signal, timeoutMs: 10_000 });
  // The revision is fixed here: the git fingerprint is an inspection cost of the working copy, measured by bench:core.
  const revision = async () => 'bench-revision';
  const leases = fileCommandLeases({ file: path.join(work, '.nxs', 'command-lease'), revision });
  let runNo = 0;
  const run = async () => {
    const dir = path.join(work, '.nxs', 'runs', String(runNo++));
    const r = await executeRun({
      identity: { run_id: `bench-${runNo}`, role: 'bench', session: null, turn: null, thread: null },
      root: work,
      files: { journal: path.join(dir, 'journal.jsonl'), state: path.join(dir, 'run.json') },
      system: 's',
      prompt: 'hi',
      client,
      limits: resolveLimits({ max_model_calls: CALLS_PER_RUN, max_tool_calls: CALLS_PER_RUN }, 60_000, Date.now()),
      policy: policyFor({ tools: undefined, permissions: 'default' }),
      leases,
      revision,
      env: {},
    });
    if (r.status !== 'completed' || r.usage.model_calls !== CALLS_PER_RUN) throw new Error(`bench run ended ${r.status} after ${r.usage.model_calls} calls: ${r.reason}`);
  };
  // Warm-up: JIT, keep-alive sockets, the file system cache.
  for (let i = 0; i < 20; i++) await rawRoundTrip(fake, body);
  for (let i = 0; i < 20; i++) await sdkCall();
  for (let i = 0; i < 3; i++) await run();

  const raw = await time(ROUNDS, () => rawRoundTrip(fake, body));
  const sdkTimes = await time(ROUNDS, sdkCall);
  const perCall: number[] = [];
  const own: number[] = [];
  for (let i = 0; i < Math.max(5, Math.floor(ROUNDS / CALLS_PER_RUN)); i++) {
    inProvider = 0;
    const t = performance.now();
    await run();
    const total = performance.now() - t;
    perCall.push(total / CALLS_PER_RUN);
    own.push((total - inProvider) / CALLS_PER_RUN);
  }
  await fake.close();
  rmSync(work, { recursive: true, force: true });

  console.log(`bench:runtime — ${ROUNDS} round trips each; runs of ${CALLS_PER_RUN} model calls (${CALLS_PER_RUN - 1} with one LS tool call each)`);
  console.log(`  raw HTTP round trip to the fake          median ${ms(median(raw))}  p90 ${ms(p90(raw))}`);
  console.log(`  SDK request through the provider client  median ${ms(median(sdkTimes))}  p90 ${ms(p90(sdkTimes))}`);
  console.log(`  runtime, per model call (whole loop)     median ${ms(median(perCall))}  p90 ${ms(p90(perCall))}`);
  console.log(`  runtime's own time per model call        median ${ms(median(own))}  p90 ${ms(p90(own))}  (target < 2 ms; run time outside provider requests: journal appends and fsyncs, run-state writes, budget, one LS tool call)`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
