// The relay end to end: a real relay on port 0 (PGlite; PostgreSQL for two instances), real ws clients, its HTTP side and CLI.
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newOpId, newThreadId } from '../protocol/ids.js';
import { MAX_LAMPORT, type StorableReason } from '../protocol/storable.js';
import { rawElements, rawMember, RelayInfoSchema, SYNC_ERROR_TABLE, SYNC_PROTOCOL, syncUrl, type Limits, type SyncErrorCode } from '../protocol/sync.js';
import { addressInUse } from '../launcher/ports.js';
import { createLogger, main, openPgliteStore, silentLog, startRelay, type Relay } from '../server/index.js';
import { unusedPort } from './helpers/ports.js';

type Frame = { type: string; [k: string]: unknown };
const REPO_ROOT = join(fileURLToPath(import.meta.url), '..', '..');
const WORKSPACE = 'abcdefghijklmnopqrstuvwxyz';

/** A valid wire op; `extra` overrides fields. */
function wireOp(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const thread = newThreadId();
  // The relay checks only the shape of `key` and `sig`; receivers verify them (test/signing.test.ts).
  return { id: newOpId(), workspace: WORKSPACE, origin: 'test-node', lamport: 1, ts: new Date().toISOString(), kind: 'message.posted', operation: thread, thread, session: null, body: { text: 'hi' }, key: 'k'.repeat(43), sig: 's'.repeat(86), ...extra };
}

/** A real ws client that records every frame and answers pings like a node would. */
class TestNode {
  readonly frames: Frame[] = [];
  readonly raw: string[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  answerPings = true;
  private readonly taken = new Set<number>();
  private waiters: Array<() => void> = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      const text = data.toString('utf8');
      const frame = JSON.parse(text) as Frame;
      if (frame.type === 'ping' && this.answerPings) this.send({ type: 'pong', t: frame['t'] });
      if (frame.type === 'ping' || frame.type === 'pong') return;
      this.raw.push(text);
      this.frames.push(frame);
      this.waiters.splice(0).forEach((w) => w());
    });
    ws.on('error', () => undefined);
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => (resolve({ code, reason: reason.toString() }), this.waiters.splice(0).forEach((w) => w()))));
  }

  static open(base: string): Promise<TestNode> {
    const ws = new WebSocket(syncUrl(base), { maxPayload: 64 * 1024 * 1024 });
    return new Promise((resolve, reject) => (ws.once('open', () => resolve(new TestNode(ws))), ws.once('error', reject)));
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' || Buffer.isBuffer(frame) ? frame : JSON.stringify(frame));
  }

  /** Takes the first frame not taken yet that is of `type` (pings aside), waiting up to `ms`; others keep their place. */
  async expect(type: string, ms = 10_000): Promise<Frame> {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = this.frames.findIndex((f, j) => !this.taken.has(j) && f.type === type);
      if (i >= 0) {
        this.taken.add(i);
        return this.frames[i]!;
      }
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error(`closed while waiting for ${type}; frames: ${JSON.stringify(this.types())}`);
      if (Date.now() > deadline) throw new Error(`no ${type} frame in time; frames: ${JSON.stringify(this.types())}`);
      await new Promise<void>((r) => (this.waiters.push(r), setTimeout(r, 50)));
    }
  }

  /** The types of every frame received so far, in order. */
  types(): string[] {
    return this.frames.map((f) => f.type);
  }

  /** Sends hello and reads welcome. */
  async hello(stream: string, token: string, since = 0): Promise<Frame> {
    this.send({ type: 'hello', protocol: SYNC_PROTOCOL, stream, token, node: 'test-node', since });
    return this.expect('welcome');
  }

  /** Reads `ops` frames until seq `upTo` arrived; returns the seqs in order. */
  async opsUntil(upTo: number): Promise<number[]> {
    const seqs: number[] = [];
    while ((seqs.at(-1) ?? 0) < upTo) seqs.push(...((await this.expect('ops'))['ops'] as Array<{ seq: number }>).map((o) => o.seq));
    return seqs;
  }

  async push(id: number, ops: unknown[]): Promise<Frame> {
    this.send({ type: 'push', id, ops });
    const ack = await this.expect('ack');
    expect(ack['id']).toBe(id);
    return ack;
  }

  /** Expects a coded error frame and the matching close code. */
  async refused(code: SyncErrorCode): Promise<Frame> {
    const f = await this.expect('error');
    expect(f['code']).toBe(code);
    expect((await this.closed).code).toBe(SYNC_ERROR_TABLE[code].close);
    return f;
  }
}

const seqRange = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

async function createStream(base: string, token: string, name: string): Promise<string> {
  const res = await fetch(`${base}/v1/streams`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: JSON.stringify({ name }) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { token: string }).token;
}

async function metric(base: string, line: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const row = text.split('\n').find((l) => l.startsWith(line + ' '));
  return row ? Number(row.slice(line.length + 1)) : 0;
}

const LIMITS: Partial<Limits> = { max_ops_per_push: 50, send_buffer_bytes: 64 * 1024, slow_consumer_ms: 300, ping_interval_ms: 500, ping_timeout_ms: 3_000 };
/** Every line the relay logged, parsed: the relay's own JSON lines, as an operator's collector would read them. */
const logged: Array<Record<string, unknown>> = [];
const log = createLogger({ component: 'relay', level: 'debug', env: {}, sink: (line) => void logged.push(JSON.parse(line) as Record<string, unknown>) });
const errorLines = () => logged.filter((r) => r['level'] === 'error');
const dirs: string[] = [];
let template = '';
let relay: Relay;
let url = '';
let operator = '';

beforeAll(async () => {
  // initdb costs seconds; one migrated folder is made once and copied for each relay here.
  template = mkdtempSync(join(tmpdir(), 'nexus-relay-template-'));
  await (await openPgliteStore({ dataDir: template, log: silentLog })).close();
  const dir = mkdtempSync(join(tmpdir(), 'nexus-relay-'));
  cpSync(template, dir, { recursive: true });
  dirs.push(template, dir);
  relay = await startRelay({ port: 0, dataDir: dir, limits: LIMITS, log });
  url = relay.url;
  operator = relay.operatorToken!;
});

afterAll(async () => {
  await relay?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  expect(errorLines()).toEqual([]);
});

describe('a relay on PGlite', () => {
  it('answers health, readiness and info', async () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(operator).toMatch(/^nxr_[A-Za-z0-9_-]{43}$/);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${url}/readyz`)).json()).toEqual({ ok: true, storage: 'pglite' });
    const info = (await (await fetch(`${url}/v1/info`)).json()) as { protocol: number; limits: Limits };
    expect(info.protocol).toBe(SYNC_PROTOCOL);
    expect(info.limits).toMatchObject({ ...LIMITS, max_frame_bytes: 1024 * 1024, page_size: 500 });
  });

  it('reports its package version in /v1/info and as nexus_build_info', async () => {
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    const info = RelayInfoSchema.parse(await (await fetch(`${url}/v1/info`)).json());
    expect(info.version).toBe(version);
    expect(await metric(url, `nexus_build_info{version="${version}"}`)).toBe(1);
  });

  it('logs connects, disconnects with their close code, and refusals with their code, as JSON lines', async () => {
    const token = await createStream(url, operator, 'logged');
    const node = await TestNode.open(url);
    await node.hello('logged', token);
    await node.expect('caught_up');
    node.ws.close(1000, 'bye');
    await node.closed;
    const intruder = await TestNode.open(url);
    intruder.send({ type: 'hello', protocol: SYNC_PROTOCOL, stream: 'logged', token: 'not-the-token', node: 'intruder', since: 0 });
    await intruder.refused('UNAUTHORIZED');
    await expect.poll(() => logged.filter((r) => r['msg'] === 'node disconnected' && r['code'] === SYNC_ERROR_TABLE.UNAUTHORIZED.close).length).toBe(1);
    const connected = logged.find((r) => r['msg'] === 'node connected' && r['stream'] === 'logged')!;
    expect(connected).toMatchObject({ level: 'info', component: 'relay', node: 'test-node', since: 0, head: 0, conn: expect.any(Number), ts: expect.any(String) });
    const mine = logged.filter((r) => r['conn'] === connected['conn']);
    expect(mine.at(-1)).toMatchObject({ level: 'info', msg: 'node disconnected', code: 1000, reason: 'bye', stream: 'logged', node: 'test-node' });
    const refused = logged.find((r) => r['msg'] === 'sync connection refused' && r['code'] === 'UNAUTHORIZED');
    expect(refused).toMatchObject({ level: 'warn', component: 'relay' });
    expect(JSON.stringify(logged)).not.toContain(token);
  });

  it('creates streams only for the operator, once, with a valid name', async () => {
    const post = (body: string, token?: string) =>
      fetch(`${url}/v1/streams`, { method: 'POST', body, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
    const noToken = await post('{"name":"admin-1"}');
    expect([noToken.status, ((await noToken.json()) as { error: { code: string } }).error.code]).toEqual([401, 'UNAUTHORIZED']);
    expect((await post('{"name":"admin-1"}', 'wrong-token-wrong-token')).status).toBe(401);
    expect((await post('{"name":"Bad Name"}', operator)).status).toBe(400);
    expect((await post('not json', operator)).status).toBe(400);
    const ok = await post('{"name":"admin-1"}', operator);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ name: 'admin-1', token: expect.stringMatching(/^nxr_[A-Za-z0-9_-]{43}$/) });
    const again = await post('{"name":"admin-1"}', operator);
    expect([again.status, ((await again.json()) as { error: { code: string } }).error.code]).toEqual([409, 'STREAM_EXISTS']);
  });

  it('acks a push after commit and gives a second node the backlog, caught_up, then live ops, byte for byte', async () => {
    const token = await createStream(url, operator, 'flow');
    const a = await TestNode.open(url);
    expect(await a.hello('flow', token)).toMatchObject({ protocol: SYNC_PROTOCOL, stream: 'flow', head: 0 });
    expect(await a.expect('caught_up')).toEqual({ type: 'caught_up', head: 0 });
    const odd = `{ "body": {"text":"spaced  \\u00e9"},"id":"${newOpId()}" ,"workspace":"${WORKSPACE}","origin":"n1","lamport":7,"ts":"2025-01-01T00:00:00.000Z","kind":"lease.granted","operation":"${newThreadId()}","thread":null,"session":null, "key":"${'k'.repeat(43)}","sig":"${'s'.repeat(86)}"}`;
    a.send(`{"type":"push","id":1,"ops":[${odd} , ${JSON.stringify(wireOp())}]}`);
    expect(await a.expect('ack')).toMatchObject({ id: 1, head: 2, results: [{ seq: 1, duplicate: false }, { seq: 2, duplicate: false }] });
    expect(await a.opsUntil(2)).toEqual([1, 2]);
    const b = await TestNode.open(url);
    expect((await b.hello('flow', token))['head']).toBe(2);
    expect(await b.opsUntil(2)).toEqual([1, 2]);
    const first = rawElements(rawMember(b.raw[b.types().indexOf('ops')]!, 'ops')!)!.map((e) => rawMember(e, 'op'));
    expect(first[0]).toBe(odd);
    expect(await b.expect('caught_up')).toEqual({ type: 'caught_up', head: 2 });
    const dup = wireOp();
    const ack = await a.push(2, [dup, dup, wireOp()]);
    expect(ack['results']).toMatchObject([{ seq: 3, duplicate: false }, { seq: 3, duplicate: true }, { seq: 4, duplicate: false }]);
    expect(await b.opsUntil(4)).toEqual([3, 4]);
    expect(b.types()).toEqual(['welcome', 'ops', 'caught_up', 'ops']);
    a.ws.close();
    b.ws.close();
  });

  it('acks pushes sent back to back in push order, with seqs gapless across connections and every op stored once', async () => {
    const token = await createStream(url, operator, 'pipelined');
    const pushers = await Promise.all([TestNode.open(url), TestNode.open(url), TestNode.open(url)]);
    const watcher = await TestNode.open(url);
    for (const n of [...pushers, watcher]) await n.hello('pipelined', token), await n.expect('caught_up');
    const shared = wireOp();
    const sent = pushers.map(() => Array.from({ length: 15 }, () => Array.from({ length: 10 }, () => wireOp())));
    // The same op pushed by every node, twice each: stored once.
    for (const batches of sent) batches[3]!.push(shared), batches[11]!.push(shared);
    // No push waits for the ack of the one before.
    for (const [n, node] of pushers.entries()) for (const [i, ops] of sent[n]!.entries()) node.send({ type: 'push', id: i + 1, ops });
    // Each node's acks are taken one after another, in the order they arrived: fifteen waits at once would
    // each take the first ack still untaken when its own timer fires, in whatever order the timers fire.
    const acksOf = async (node: TestNode) => {
      const list: Frame[] = [];
      for (let i = 0; i < 15; i++) list.push(await node.expect('ack'));
      return list;
    };
    const acks = await Promise.all(pushers.map(acksOf));
    for (const list of acks) expect(list.map((a) => a['id'])).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
    const results = acks.flat().flatMap((a) => a['results'] as Array<{ op: string; seq: number; duplicate: boolean }>);
    const total = 3 * 15 * 10 + 1;
    expect(results.filter((r) => !r.duplicate).map((r) => r.seq).sort((x, y) => x - y)).toEqual(seqRange(1, total));
    const sharedSeqs = new Set(results.filter((r) => r.op === shared['id']).map((r) => r.seq));
    expect(sharedSeqs.size).toBe(1);
    expect(results.filter((r) => r.op === shared['id'] && !r.duplicate)).toHaveLength(1);
    // Watchers and late readers see the same ops at the same seqs, once each.
    expect(await watcher.opsUntil(total)).toEqual(seqRange(1, total));
    const seqOf = new Map(results.filter((r) => !r.duplicate).map((r) => [r.op, r.seq]));
    const live = watcher.frames.filter((f) => f.type === 'ops').flatMap((f) => f['ops'] as Array<{ seq: number; op: { id: string } }>);
    for (const o of live) expect(seqOf.get(o.op.id)).toBe(o.seq);
    for (const n of [...pushers, watcher]) n.ws.close();
  });

  it('resumes from since: only later ops, then caught_up', async () => {
    const token = await createStream(url, operator, 'resume');
    const a = await TestNode.open(url);
    await a.hello('resume', token);
    await a.push(1, Array.from({ length: 10 }, () => wireOp()));
    const b = await TestNode.open(url);
    await b.hello('resume', token, 6);
    expect(await b.opsUntil(10)).toEqual([7, 8, 9, 10]);
    expect(await b.expect('caught_up')).toEqual({ type: 'caught_up', head: 10 });
    a.ws.close();
    b.ws.close();
  });

  const bad: Array<[string, SyncErrorCode, (token: string) => unknown[]]> = [
    ['malformed JSON', 'BAD_FRAME', () => ['{"type":"hello",']],
    ['a binary frame', 'BAD_FRAME', () => [Buffer.from('{"type":"hello"}')]],
    ['a first frame that is not hello', 'NOT_HELLO', () => [{ type: 'push', id: 1, ops: [] }]],
    ['a wrong token', 'UNAUTHORIZED', () => [{ type: 'hello', protocol: SYNC_PROTOCOL, stream: 'edge', token: 'nope', node: 'n', since: 0 }]],
    ['an unknown stream', 'UNKNOWN_STREAM', (t) => [{ type: 'hello', protocol: SYNC_PROTOCOL, stream: 'nowhere', token: t, node: 'n', since: 0 }]],
    ['another protocol version', 'PROTOCOL_VERSION', (t) => [{ type: 'hello', protocol: 99, stream: 'edge', token: t, node: 'n', since: 0 }]],
    ['a cursor past the head', 'BAD_CURSOR', (t) => [{ type: 'hello', protocol: SYNC_PROTOCOL, stream: 'edge', token: t, node: 'n', since: 999 }]],
    ['a frame over the limit', 'FRAME_TOO_LARGE', (t) => [hello(t), JSON.stringify({ type: 'push', id: 1, ops: [wireOp({ body: { t: 'x'.repeat(1024 * 1024) } })] })]],
    ['too many ops', 'TOO_MANY_OPS', (t) => [hello(t), { type: 'push', id: 1, ops: Array.from({ length: 51 }, () => wireOp()) }]],
    ['an op over the op limit', 'OP_TOO_LARGE', (t) => [hello(t), { type: 'push', id: 1, ops: [wireOp({ body: { t: 'x'.repeat(300 * 1024) } })] }]],
    ['an op with a bad envelope', 'BAD_FRAME', (t) => [hello(t), { type: 'push', id: 1, ops: [wireOp({ kind: 'NotAKind' })] }]],
    ['an op with an unknown envelope field', 'BAD_FRAME', (t) => [hello(t), { type: 'push', id: 1, ops: [wireOp({ extra: 1 })] }]],
    ['an op without a signature', 'BAD_FRAME', (t) => [hello(t), { type: 'push', id: 1, ops: [wireOp({ sig: undefined })] }]],
    ['an op without a key', 'BAD_FRAME', (t) => [hello(t), { type: 'push', id: 1, ops: [wireOp({ key: undefined })] }]],
    ['a second hello', 'BAD_FRAME', (t) => [hello(t), hello(t)]],
  ];
  const hello = (token: string) => ({ type: 'hello', protocol: SYNC_PROTOCOL, stream: 'edge', token, node: 'n', since: 0 });

  it.each(bad)('refuses %s with %s, closes that socket and stays up', async (_, code, frames) => {
    const token = (edgeToken ||= await createStream(url, operator, 'edge'));
    const node = await TestNode.open(url);
    for (const f of frames(token)) node.send(f);
    const err = await node.refused(code);
    if (code === 'BAD_CURSOR') expect(err['resume_from']).toBe(0);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const fresh = await TestNode.open(url);
    await fresh.hello('edge', token);
    await fresh.expect('caught_up');
    fresh.ws.close();
  });
  let edgeToken = '';

  /** Nesting `depth` containers deep inside the body. */
  const deepBody = (depth: number) => {
    let v: unknown = 'leaf';
    for (let i = 0; i < depth; i++) v = [v];
    return { deep: v };
  };
  const poison: Array<[string, StorableReason, () => string]> = [
    ['a NUL in the body text', 'nul', () => JSON.stringify(wireOp({ body: { text: 'a\u0000b' } }))],
    ['a NUL in a body key', 'nul', () => JSON.stringify(wireOp({ body: { 'k\u0000': 1 } }))],
    ['a lone surrogate in the body text', 'surrogate', () => JSON.stringify(wireOp({ body: { text: 'x\ud800y' } }))],
    ['a lone surrogate in a body key', 'surrogate', () => JSON.stringify(wireOp({ body: { '\udfffk': 1 } }))],
    ['nesting far past the bound', 'too_deep', () => JSON.stringify(wireOp({ body: deepBody(200) }))],
    ['a lamport past MAX_LAMPORT', 'lamport_range', () => JSON.stringify(wireOp({ lamport: MAX_LAMPORT + 1 }))],
    ['a lamport at the last safe integer', 'lamport_range', () => JSON.stringify(wireOp({ lamport: Number.MAX_SAFE_INTEGER }))],
  ];

  it.each(poison)('refuses an op with %s as %s in its ack, stores and fans out the good op after it, and keeps the connection', async (_, reason, text) => {
    const stream = `poison-${reason.replace('_', '-')}-${Math.random().toString(36).slice(2, 8)}`;
    const token = await createStream(url, operator, stream);
    const [pusher, watcher] = [await TestNode.open(url), await TestNode.open(url)];
    for (const n of [pusher, watcher]) await n.hello(stream, token), await n.expect('caught_up');
    const bad = text();
    const badId = (JSON.parse(bad) as { id: string }).id;
    const before = await metric(url, `nexus_relay_ops_refused_total{reason="${reason}"}`);
    pusher.send(`{"type":"push","id":1,"ops":[${bad}]}`);
    expect(await pusher.expect('ack')).toEqual({ type: 'ack', id: 1, head: 0, results: [{ op: badId, seq: 0, duplicate: false, refused: reason }] });
    // The good op goes alone, then beside a second copy of the poison: seqs stay gapless.
    const good = [wireOp(), wireOp()];
    const ack = await pusher.push(2, [good[0]]);
    expect(ack['results']).toEqual([{ op: good[0]!['id'], seq: 1, duplicate: false }]);
    pusher.send(`{"type":"push","id":3,"ops":[${bad},${JSON.stringify(good[1])}]}`);
    expect((await pusher.expect('ack'))['results']).toEqual([
      { op: badId, seq: 0, duplicate: false, refused: reason },
      { op: good[1]!['id'], seq: 2, duplicate: false },
    ]);
    expect(await metric(url, `nexus_relay_ops_refused_total{reason="${reason}"}`)).toBe(before + 2);
    // Only the good ops were stored and sent on, to the watcher and to a node reading from 0.
    expect(await watcher.opsUntil(2)).toEqual([1, 2]);
    const late = await TestNode.open(url);
    await late.hello(stream, token);
    expect(await late.opsUntil(2)).toEqual([1, 2]);
    const sent = [...watcher.frames, ...late.frames].filter((f) => f.type === 'ops').flatMap((f) => (f['ops'] as Array<{ op: { id: string } }>).map((o) => o.op.id));
    expect(sent).not.toContain(badId);
    expect(new Set(sent)).toEqual(new Set(good.map((o) => o['id'])));
    expect(pusher.ws.readyState).toBe(WebSocket.OPEN);
    for (const n of [pusher, watcher, late]) n.ws.close();
  });

  it('closes a node that stops reading with SLOW_CONSUMER and a resume seq, while another keeps receiving', async () => {
    const token = await createStream(url, operator, 'slow');
    const [writer, reader, stalled] = await Promise.all([TestNode.open(url), TestNode.open(url), TestNode.open(url)]);
    for (const n of [writer, reader, stalled]) await n.hello('slow', token), await n.expect('caught_up');
    stalled.ws.pause();
    const before = await metric(url, 'nexus_relay_rejects_total{code="SLOW_CONSUMER"}');
    let head = 0;
    for (let id = 1; (await metric(url, 'nexus_relay_rejects_total{code="SLOW_CONSUMER"}')) === before; id++) {
      expect(head, 'pushed 64 MiB without a SLOW_CONSUMER').toBeLessThan(64 * 9);
      head = (await writer.push(id, Array.from({ length: 9 }, () => wireOp({ body: { t: 'x'.repeat(100 * 1024) } }))))['head'] as number;
    }
    expect(await reader.opsUntil(head)).toEqual(seqRange(1, head));
    stalled.ws.resume();
    expect((await stalled.closed).code).toBe(SYNC_ERROR_TABLE.SLOW_CONSUMER.close);
    const types = stalled.types();
    expect(types.slice(0, 2)).toEqual(['welcome', 'caught_up']);
    expect(new Set(types.slice(2, -1))).toEqual(new Set(['ops']));
    const err = stalled.frames.at(-1)!;
    expect(err).toMatchObject({ type: 'error', code: 'SLOW_CONSUMER', resume_from: expect.any(Number) });
    const got = stalled.frames.slice(2, -1).flatMap((f) => (f['ops'] as Array<{ seq: number }>).map((o) => o.seq));
    expect(got).toEqual(seqRange(1, err['resume_from'] as number));
    const again = await TestNode.open(url);
    await again.hello('slow', token, err['resume_from'] as number);
    expect(await again.opsUntil(head)).toEqual(seqRange((err['resume_from'] as number) + 1, head));
    for (const n of [writer, reader, again]) n.ws.close();
  });

  it('closes a node that never answers pings with PING_TIMEOUT', async () => {
    const token = await createStream(url, operator, 'quiet');
    const node = await TestNode.open(url);
    node.answerPings = false;
    await node.hello('quiet', token);
    await node.expect('caught_up');
    await node.refused('PING_TIMEOUT');
  });

  it('shows connections, ops, heads, lag and rejects in /metrics', async () => {
    const token = await createStream(url, operator, 'metered');
    const node = await TestNode.open(url);
    await node.hello('metered', token);
    await node.push(1, [wireOp(), wireOp(), wireOp()]);
    await node.opsUntil(3);
    const res = await fetch(`${url}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await metric(url, 'nexus_relay_ops_in_total{stream="metered"}')).toBe(3);
    expect(await metric(url, 'nexus_relay_ops_out_total{stream="metered"}')).toBe(3);
    expect(await metric(url, 'nexus_relay_stream_head{stream="metered"}')).toBe(3);
    expect(await metric(url, 'nexus_relay_connections')).toBeGreaterThanOrEqual(1);
    expect(await metric(url, 'nexus_relay_rejects_total{code="BAD_FRAME"}')).toBeGreaterThanOrEqual(1);
    expect(await metric(url, 'nexus_relay_stream_connections{stream="metered"}')).toBe(1);
    expect(await metric(url, 'nexus_relay_stream_lag_max{stream="metered"}')).toBe(0);
    // Labels stay bounded: streams, codes, reasons and the version; never a connection, node or address.
    const labels = new Set([...(await res.text()).matchAll(/[{,]([a-z_]+)="/g)].map((m) => m[1]));
    expect(labels.has('stream')).toBe(true);
    expect([...labels].filter((l) => !['code', 'reason', 'stream', 'version'].includes(l!))).toEqual([]);
    node.ws.close();
  });

  it('guards /metrics with a metrics token when given one, and only /metrics', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nexus-relay-'));
    dirs.push(dir);
    cpSync(template, dir, { recursive: true });
    const guarded = await startRelay({ dataDir: dir, operatorToken: 'operator-token-0123456789', metricsToken: 'metrics-token-0123456789', log });
    try {
      const scrape = (token?: string) => fetch(`${guarded.url}/metrics`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
      for (const token of [undefined, 'wrong-token-0123456789', 'operator-token-0123456789']) {
        const res = await scrape(token);
        expect([res.status, res.headers.get('www-authenticate'), ((await res.json()) as { error: { code: string } }).error.code]).toEqual([401, 'Bearer', 'UNAUTHORIZED']);
      }
      const ok = await scrape('metrics-token-0123456789');
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('nexus_relay_connections 0');
      expect((await fetch(`${guarded.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${guarded.url}/v1/info`)).status).toBe(200);
    } finally {
      await guarded.close();
    }
    await expect(startRelay({ dataDir: dir, metricsToken: 'short', log })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });
});

describe('nxs relay (the CLI)', () => {
  it('serves until stopped, shows the operator token on first start only, and creates streams', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nexus-relay-cli-'));
    dirs.push(dir);
    cpSync(template, dir, { recursive: true });
    const serve = async () => {
      let out = '';
      let stop!: () => void;
      const stopped = new Promise<void>((r) => (stop = r));
      let err = '';
      const done = main(['relay', 'serve', '--port', '0', '--data-dir', dir, '--json'], { env: {}, stdout: (s) => (out += s), stderr: (s) => (err += s), untilStopped: () => stopped });
      await expect.poll(() => out, { timeout: 60_000 }).toContain('\n');
      return { info: JSON.parse(out) as { url: string; operator_token: string | null }, stop: async () => (stop(), done), stderr: () => err };
    };
    const first = await serve();
    expect(first.info.operator_token).toMatch(/^nxr_[A-Za-z0-9_-]{43}$/);
    // stderr carries the relay's JSON log lines, never the operator token.
    const lines = first.stderr().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toContainEqual(expect.objectContaining({ level: 'info', component: 'relay', msg: 'relay listening', url: first.info.url, storage: 'pglite' }));
    expect(first.stderr()).not.toContain(first.info.operator_token!);
    const run = async (...argv: string[]) => {
      let out = '';
      const code = await main(argv, { env: { NEXUS_RELAY_TOKEN: first.info.operator_token! }, stdout: (s) => (out += s), stderr: (s) => (out += s) });
      return { code, out: JSON.parse(out) as Record<string, unknown> & { error?: { code: string } } };
    };
    const made = await run('stream', 'create', 'from-cli', '--relay', first.info.url.replace('http', 'ws'), '--json');
    expect(made).toMatchObject({ code: 0, out: { name: 'from-cli', token: expect.any(String) } });
    expect(await run('stream', 'create', 'from-cli', '--relay', first.info.url, '--json')).toMatchObject({ code: 2, out: { ok: false, error: { code: 'STREAM_EXISTS' } } });
    expect((await run('stream', 'create', 'Bad!', '--relay', first.info.url, '--json')).out.error?.code).toBe('BAD_REQUEST');
    expect((await run('stream', 'create', 'x', '--relay', first.info.url, '--token', 'wrong-wrong-wrong', '--json')).out.error?.code).toBe('UNAUTHORIZED');
    expect((await run('serve', '--port', 'nope', '--json')).code).toBe(2);
    expect(await first.stop()).toBe(0);
    expect(await run('stream', 'create', 'late', '--relay', first.info.url, '--wait', '1', '--json')).toMatchObject({ code: 1, out: { error: { code: 'RELAY_UNREACHABLE' } } });
    const second = await serve();
    expect(second.info.operator_token).toBeNull();
    expect(await second.stop()).toBe(0);
  });
});

/** `nxs relay ...` in this process: exit code, stdout parsed as JSON when it is, and stderr. */
async function nxsRelay(env: NodeJS.ProcessEnv, ...argv: string[]) {
  let out = '';
  let err = '';
  const code = await main(argv, { env, stdout: (s) => (out += s), stderr: (s) => (err += s) });
  type Answer = Record<string, unknown> & { error?: { code: string; message: string } };
  let json: Answer | null;
  try {
    json = JSON.parse(out) as Answer;
  } catch {
    json = null;
  }
  return { code, out, err, json };
}

describe('nxs relay stream list | delete | rotate-token (the operator)', () => {
  it('lists streams with head and connections, replaces a token (evicting its nodes), deletes a stream (evicting its nodes)', async () => {
    const env = { NEXUS_RELAY_TOKEN: operator };
    const cli = (...argv: string[]) => nxsRelay(env, 'stream', ...argv, '--relay', url, '--json');
    const doomedToken = (await cli('create', 'doomed')).json!['token'] as string;
    const keptToken = (await cli('create', 'kept')).json!['token'] as string;
    const onDoomed = await TestNode.open(url);
    await onDoomed.hello('doomed', doomedToken);
    await onDoomed.push(1, [wireOp(), wireOp(), wireOp()]);
    const onKept = await TestNode.open(url);
    await onKept.hello('kept', keptToken);

    const list = await cli('list');
    expect(list.code).toBe(0);
    const streams = list.json!['streams'] as Array<{ name: string; head: number; connections: number; created_at: string }>;
    expect(streams.find((x) => x.name === 'doomed')).toMatchObject({ head: 3, connections: 1, created_at: expect.any(String) });
    expect(streams.find((x) => x.name === 'kept')).toMatchObject({ head: 0, connections: 1 });
    const human = await nxsRelay(env, 'stream', 'list', '--relay', url);
    expect(human.out).toMatch(/^doomed\s+3\s+1\s+\d{4}-/m);

    const rotated = await cli('rotate-token', 'kept');
    expect(rotated).toMatchObject({ code: 0, json: { name: 'kept', token: expect.stringMatching(/^nxr_[A-Za-z0-9_-]{43}$/) } });
    await onKept.refused('UNAUTHORIZED');
    const withOld = await TestNode.open(url);
    withOld.send({ type: 'hello', protocol: SYNC_PROTOCOL, stream: 'kept', token: keptToken, node: 'n', since: 0 });
    await withOld.refused('UNAUTHORIZED');
    const withNew = await TestNode.open(url);
    await withNew.hello('kept', rotated.json!['token'] as string);
    withNew.ws.close();

    expect(await cli('delete', 'doomed')).toMatchObject({ code: 2, json: { error: { code: 'USAGE' } } });
    expect(await cli('delete', 'doomed', '--yes')).toMatchObject({ code: 0, json: { name: 'doomed', deleted_ops: 3 } });
    await onDoomed.refused('UNKNOWN_STREAM');
    expect(((await cli('list')).json!['streams'] as Array<{ name: string }>).map((x) => x.name)).not.toContain('doomed');
    expect(await cli('delete', 'doomed', '--yes')).toMatchObject({ code: 2, json: { error: { code: 'UNKNOWN_STREAM' } } });
    expect(await cli('rotate-token', 'doomed')).toMatchObject({ code: 2, json: { error: { code: 'UNKNOWN_STREAM' } } });
    // The name is free again, and the new stream starts from seq 1.
    const again = (await cli('create', 'doomed')).json!['token'] as string;
    const fresh = await TestNode.open(url);
    expect((await fresh.hello('doomed', again))['head']).toBe(0);
    expect((await fresh.push(1, [wireOp()]))['results']).toMatchObject([{ seq: 1 }]);
    fresh.ws.close();
  });

  it('refuses a wrong operator token and bad input with their codes, and explains itself with --help', async () => {
    expect(await nxsRelay({ NEXUS_RELAY_TOKEN: 'wrong-token-0123456789' }, 'stream', 'list', '--relay', url, '--json')).toMatchObject({ code: 2, json: { error: { code: 'UNAUTHORIZED' } } });
    expect(await nxsRelay({}, 'stream', 'list', '--relay', url, '--json')).toMatchObject({ code: 2, json: { error: { code: 'USAGE' } } });
    expect(await nxsRelay({ NEXUS_RELAY_TOKEN: operator }, 'stream', 'delete', 'Bad!', '--yes', '--relay', url, '--json')).toMatchObject({ code: 2, json: { error: { code: 'BAD_REQUEST' } } });
    expect(await nxsRelay({ NEXUS_RELAY_TOKEN: operator }, 'stream', 'frob', '--relay', url, '--json')).toMatchObject({ code: 2, json: { error: { code: 'USAGE' } } });
    for (const argv of [['stream', '--help'], ['stream', 'list', '--help'], ['stream', 'rotate-token', '-h'], ['serve', '--help'], ['--help']]) {
      const r = await nxsRelay({}, ...argv);
      expect(r.code, argv.join(' ')).toBe(0);
      expect(r.out).toMatch(/nxs relay/);
    }
    expect((await nxsRelay({}, 'stream', '--help')).out).toMatch(/rotate-token/);
  });

  it('waits for a relay that is still starting instead of failing at once', async () => {
    const port = await unusedPort();
    const dir = mkdtempSync(join(tmpdir(), 'nexus-relay-'));
    dirs.push(dir);
    cpSync(template, dir, { recursive: true });
    const token = 'late-operator-token-0123456789';
    // The command starts first, while nothing listens on the port.
    const listing = nxsRelay({ NEXUS_RELAY_TOKEN: token }, 'stream', 'list', '--relay', `http://127.0.0.1:${port}`, '--wait', '60', '--json');
    const late = await startRelay({ port, dataDir: dir, operatorToken: token, log });
    try {
      expect(await listing).toMatchObject({ code: 0, json: { streams: [] } });
    } finally {
      await late.close();
    }
  });

  it('on a taken port, says ADDRESS_IN_USE before making any store: the data folder is left as it was (not there)', async () => {
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
    const port = (holder.address() as AddressInfo).port;
    const dir = join(mkdtempSync(join(tmpdir(), 'nexus-relay-')), 'never-made');
    dirs.push(dirname(dir));
    try {
      const taken = await nxsRelay({ NEXUS_RELAY_TOKEN: operator }, 'serve', '--port', String(port), '--data-dir', dir);
      expect(taken.code).toBe(1);
      expect(taken.err).toContain('ADDRESS_IN_USE');
      expect(taken.err).not.toContain('creating');
      expect(existsSync(dir)).toBe(false);
    } finally {
      await new Promise((r) => holder.close(r));
    }
  });

  it('on a first start, says it is making the store once the port is held, before the slow part', async () => {
    // A data folder that cannot be made fails at once, after the word: no 16 s database creation in this test.
    const parent = mkdtempSync(join(tmpdir(), 'nexus-relay-'));
    dirs.push(parent);
    writeFileSync(join(parent, 'a-file'), '');
    const r = await nxsRelay({ NEXUS_RELAY_TOKEN: operator }, 'serve', '--port', '0', '--data-dir', join(parent, 'a-file', 'relay'));
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^creating the relay's store in .*a-file\/relay \(first start/);
  });

  it('names a taken port ADDRESS_IN_USE (not USAGE) and a bad database URL without its password', async () => {
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
    const port = (holder.address() as AddressInfo).port;
    const dir = mkdtempSync(join(tmpdir(), 'nexus-relay-'));
    dirs.push(dir);
    cpSync(template, dir, { recursive: true });
    try {
      const taken = await nxsRelay({ NEXUS_RELAY_TOKEN: operator }, 'serve', '--port', String(port), '--data-dir', dir, '--json');
      expect(taken).toMatchObject({ code: 1, json: { ok: false, error: { code: 'ADDRESS_IN_USE' } } });
      expect(taken.json!.error!.message).toContain(`127.0.0.1:${port}`);
      // The OS error is the coded error's cause, which is what `npm start` reads to fall back to a free port.
      const err: unknown = await startRelay({ port, dataDir: dir, log }).then(
        async (r) => (await r.close(), null),
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ code: 'ADDRESS_IN_USE', details: { os_code: 'EADDRINUSE' }, cause: { code: 'EADDRINUSE' } });
      expect(addressInUse(err)).toBe(true);
    } finally {
      await new Promise((r) => holder.close(r));
    }
    const refused = await nxsRelay({}, 'serve', '--port', '0', '--database-url', 'postgres://relay:s3cret-pw@127.0.0.1:1/relaydb', '--json');
    expect(refused).toMatchObject({ code: 1, json: { error: { code: 'STORE_FAILED' } } });
    expect(refused.json!.error!.message).toContain('postgres://relay:***@127.0.0.1:1/relaydb');
    for (const bad of ['mysql://relay:s3cret-pw@db/relay', 'no url at all', 'postgres://relay:s3cret-pw@[bad']) {
      const r = await nxsRelay({}, 'serve', '--port', '0', '--database-url', bad, '--json');
      expect(r).toMatchObject({ code: 2, json: { error: { code: 'USAGE' } } });
      expect(r.out).not.toContain('s3cret-pw');
    }
    expect(refused.out).not.toContain('s3cret-pw');
  });
});

const PG_URL = process.env['TEST_DATABASE_URL'];
const pgSkip = await (async () => {
  if (!PG_URL) return 'TEST_DATABASE_URL is not set';
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 });
  return c.connect().then(
    () => (c.end(), null),
    (e: Error) => `PostgreSQL did not answer (${e.message})`,
  );
})();
if (pgSkip) console.log(`relay-ws: two relays on PostgreSQL are skipped: ${pgSkip}`);

describe.skipIf(pgSkip !== null)('two relays on one PostgreSQL database', () => {
  it('delivers ops pushed to one instance to a node on the other, seqs gapless', async () => {
    const schema = `relay_ws_${process.pid}_${Date.now().toString(36)}`;
    const opts = { port: 0, databaseUrl: PG_URL!, databaseSchema: schema, operatorToken: 'operator-token-for-tests', log, pollMs: 60_000 };
    const [a, b] = await Promise.all([startRelay(opts), startRelay(opts)]);
    try {
      expect(await (await fetch(`${a.url}/readyz`)).json()).toEqual({ ok: true, storage: 'postgres' });
      const token = await createStream(a.url, 'operator-token-for-tests', 'shared');
      const [onA, onB] = [await TestNode.open(a.url), await TestNode.open(b.url)];
      for (const n of [onA, onB]) await n.hello('shared', token), await n.expect('caught_up');
      await onB.push(1, [wireOp(), wireOp()]);
      expect(await onA.opsUntil(2)).toEqual([1, 2]);
      const acks = await Promise.all([onA.push(2, Array.from({ length: 20 }, () => wireOp())), onB.push(2, Array.from({ length: 20 }, () => wireOp()))]);
      const seqs = acks.flatMap((ack) => (ack['results'] as Array<{ seq: number }>).map((r) => r.seq)).sort((x, y) => x - y);
      expect(seqs).toEqual(seqRange(3, 42));
      expect(await onA.opsUntil(42)).toEqual(seqRange(3, 42));
      expect(await onB.opsUntil(42)).toEqual(seqRange(1, 42));
      onA.ws.close();
      // A token replaced through one instance evicts the stream's nodes on the other; a deleted stream too.
      const rotated = await nxsRelay({ NEXUS_RELAY_TOKEN: 'operator-token-for-tests' }, 'stream', 'rotate-token', 'shared', '--relay', a.url, '--json');
      expect(rotated.code).toBe(0);
      await onB.refused('UNAUTHORIZED');
      const again = await TestNode.open(b.url);
      await again.hello('shared', rotated.json!['token'] as string);
      expect((await nxsRelay({ NEXUS_RELAY_TOKEN: 'operator-token-for-tests' }, 'stream', 'delete', 'shared', '--yes', '--relay', a.url, '--json')).json).toMatchObject({ deleted_ops: 42 });
      await again.refused('UNKNOWN_STREAM');
    } finally {
      await Promise.all([a.close(), b.close()]);
      const c = new pg.Client({ connectionString: PG_URL! });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
    }
  });
});
