// A relay on PGlite stays responsive while many nodes catch up: its HTTP side is served between page reads.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newOpId, newThreadId } from '../../protocol/ids.js';
import { SYNC_PROTOCOL, syncUrl } from '../../protocol/sync.js';
import { openPgliteStore, silentLog, startRelay, type Relay } from '../../server/index.js';

const READERS = 20;
// Enough pages that a few /healthz answers fall between them on a loaded machine too: at 4,000 ops, once
// the relay's reads were prepared, a full suite on two cores saw only two.
const OPS = 8_000;
const dirs: string[] = [];
let relay: Relay;

function wireOp(): string {
  const thread = newThreadId();
  return JSON.stringify({ id: newOpId(), workspace: 'abcdefghijklmnopqrstuvwxyz', origin: 'writer', lamport: 1, ts: new Date().toISOString(), kind: 'message.posted', operation: thread, thread, session: null, body: { text: 'catch-up '.repeat(40) }, key: 'k'.repeat(43), sig: 's'.repeat(86) });
}

const OPS_FRAME = Buffer.from('{"type":"ops"');
const SEQ = Buffer.from('{"seq":');

function countSeqs(frame: Buffer): number {
  let n = 0;
  for (let at = frame.indexOf(SEQ); at !== -1; at = frame.indexOf(SEQ, at + SEQ.length)) n += 1;
  return n;
}

/** A sync socket after hello: `frames` sees every frame; resolves once welcomed. */
async function connect(stream: string, token: string, node: string, frames: (f: { type: string; [k: string]: unknown }) => void): Promise<WebSocket> {
  const ws = new WebSocket(syncUrl(relay.url), { maxPayload: 64 * 1024 * 1024 });
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject);
    ws.on('message', (data: Buffer) => {
      // Pages are counted in their bytes, not decoded: this process reads 20 backlogs at the relay's pace,
      // and decoding them here would be what delays the polls, not the relay.
      if (data.subarray(0, OPS_FRAME.length).equals(OPS_FRAME)) return frames({ type: 'ops', count: countSeqs(data) });
      const f = JSON.parse(data.toString('utf8')) as { type: string; [k: string]: unknown };
      if (f.type === 'ping') return ws.send(JSON.stringify({ type: 'pong', t: f['t'] }));
      if (f.type === 'welcome') resolve();
      if (f.type === 'error') reject(new Error(JSON.stringify(f)));
      frames(f);
    });
    ws.once('open', () => ws.send(JSON.stringify({ type: 'hello', protocol: SYNC_PROTOCOL, stream, token, node, since: 0 })));
  });
  return ws;
}

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nexus-relay-catchup-'));
  dirs.push(dir);
  await (await openPgliteStore({ dataDir: dir, log: silentLog })).close();
  const copy = mkdtempSync(join(tmpdir(), 'nexus-relay-catchup-'));
  dirs.push(copy);
  cpSync(dir, copy, { recursive: true });
  relay = await startRelay({ dataDir: copy, operatorToken: 'catchup-operator-token', log: silentLog });
});

afterAll(async () => {
  await relay?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

it(`answers every /healthz, again and again, while ${READERS} nodes catch up on ${OPS} ops each`, async () => {
  const res = await fetch(`${relay.url}/v1/streams`, { method: 'POST', headers: { authorization: 'Bearer catchup-operator-token' }, body: '{"name":"backlog"}' });
  const { token } = (await res.json()) as { token: string };
  let acked = 0;
  const writer = await connect('backlog', token, 'writer', (f) => void (f.type === 'ack' && (acked += (f['results'] as unknown[]).length)));
  for (let id = 1; id * 500 <= OPS; id++) writer.send(`{"type":"push","id":${id},"ops":[${Array.from({ length: 500 }, wireOp).join(',')}]}`);
  await expect.poll(() => acked, { timeout: 60_000 }).toBe(OPS);
  writer.close();

  // Phases of the catch-up as the readers see them: started (a first page arrived), finished (all caught up).
  let started = false;
  let caughtUp = 0;
  const received = new Array<number>(READERS).fill(0);
  const polls: Array<{ status: number; during: boolean }> = [];
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const r = await fetch(`${relay.url}/healthz`, { signal: AbortSignal.timeout(60_000) });
      await r.text();
      polls.push({ status: r.status, during: started && caughtUp < READERS });
    }
  })();
  const readers = await Promise.all(
    Array.from({ length: READERS }, (_, i) =>
      connect('backlog', token, `reader-${i}`, (f) => {
        if (f.type === 'ops') (started = true), (received[i]! += f['count'] as number);
        if (f.type === 'caught_up') caughtUp += 1;
      }),
    ),
  );
  await expect.poll(() => caughtUp, { timeout: 120_000 }).toBe(READERS);
  polling = false;
  await poller;
  for (const ws of readers) ws.close();

  expect(received).toEqual(new Array(READERS).fill(OPS));
  expect(polls.every((p) => p.status === 200)).toBe(true);
  // Answered between pages, not only before the first and after the last: a relay that read the whole
  // backlog without yielding answers none of these until every reader is done. Readers at the same
  // cursor share each page, so the catch-up is about sixteen steps of 20 frames, not 320 reads: a few
  // answers in between is the most a relay that yields between steps can be asked for.
  expect(polls.filter((p) => p.during).length).toBeGreaterThanOrEqual(3);
});
