// `npm run bench:scale`: the relay at width. Two relay instances on one PostgreSQL database, many node
// connections over many streams (the real wire protocol, all in this process), a steady offered rate:
//   width:    fan-out p99 against JetStream on the same topology (one subject per stream, one consumer per
//             node, its own connection each), measured in the same run; every op delivered to every member;
//   memory:   relay RSS per connection (both instances) against nats-server's (a private one);
//   failover: one instance killed mid-run: the time until each of its nodes is welcomed by the other, and
//             every op still delivered to every member exactly once; the bench's own event-loop delay
//             over that window is printed beside it, since 1,000 sockets on one loop under load lag by
//             seconds and every simulated node's moment carries that lag. Beside them, a handful of real
//             sync clients (the node's SyncClient on real PGlite stores, bench/scale-clients.ts) in a
//             process of their own, bound to both URLs: the time from the kill to each one's first ops
//             page from the surviving instance, which is the client's failover policy without the
//             bench's lag (their own process's loop delay printed too).
// The simulated nodes fail over as the sync client does (reconnectDelay: the next URL at once after a
// close, backoff only after a full round of URLs, cursor kept, unacked pushes sent again);
// test/sync-failover.test.ts and test/sync-reconnect.test.ts check the client itself. Judged like
// bench:sync (median of runs, noise margin). The age rows (bench/scale-age.ts) measure a store after a
// long life. The join row (bench/scale-join.ts) measures a new node joining a long stream.
// BENCH_SCALE_ONLY=width, =failover (the steady phase and the failover rows, without JetStream), =age or
// =join runs one set of rows. Knobs:
//   BENCH_SCALE_STREAMS (100), BENCH_SCALE_PER_STREAM (10), BENCH_SCALE_RATE (1000 ops/s in total),
//   BENCH_SCALE_SECS (10, steady phase), BENCH_SCALE_FAIL_SECS (5, after the kill), BENCH_SCALE_REPEATS (1),
//   BENCH_SCALE_REAL (10, real sync clients, one per stream from the first),
//   BENCH_DATABASE_URL or TEST_DATABASE_URL (PostgreSQL; the bench stops when none answers).
import { randomBytes, generateKeyPairSync } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { connect, DeliverPolicy, StorageType, type ConsumerMessages, type NatsConnection } from 'nats';
import pg from 'pg';
import { WebSocket } from 'ws';
import { opSigner, signOp, workspaceOfKey } from '../crypto/index.js';
import { reconnectDelay } from '../node-agent/host/sync/client.js';
import { newOpId, newThreadId } from '../protocol/ids.js';
import type { Op } from '../protocol/ops.js';
import { SYNC_PROTOCOL, syncUrl } from '../protocol/sync.js';
import { ageRows } from './scale-age.js';
import { joinRows } from './scale-join.js';
import { percentile } from './stats.js';
import { rssBytes } from './sync-memory.js';
import { targetsTable, type TargetRow } from './targets.js';

function num(name: string, dflt: number): number {
  const v = Number(process.env[name] ?? '');
  return Number.isFinite(v) && v > 0 ? v : dflt;
}
const STREAMS = Math.round(num('BENCH_SCALE_STREAMS', 100));
const PER = Math.round(num('BENCH_SCALE_PER_STREAM', 10));
const RATE = num('BENCH_SCALE_RATE', 1_000);
const SECS = num('BENCH_SCALE_SECS', 10);
const FAIL_SECS = num('BENCH_SCALE_FAIL_SECS', 5);
const REPEATS = Math.round(num('BENCH_SCALE_REPEATS', 1));
const REAL = Math.min(STREAMS, Math.round(num('BENCH_SCALE_REAL', 10)));
const PG_URL = process.env['BENCH_DATABASE_URL'] || process.env['TEST_DATABASE_URL'] || 'postgres://postgres@127.0.0.1:5432/test';
const RUN = `${process.pid.toString(36)}${Date.now().toString(36)}`;
const OPERATOR = randomBytes(24).toString('base64url');
const SIGNER = opSigner(generateKeyPairSync('ed25519').privateKey);
const WORKSPACE = workspaceOfKey(SIGNER.key)!;

/** Children to end when the bench is interrupted. */
const children = new Set<ChildProcess>();
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    for (const c of children) c.kill('SIGKILL');
    process.exit(130);
  });
}

const progress = (msg: string) => process.stderr.write(`scale-bench: ${msg}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

type BenchOp = { id: string; text: string };

/** One small signed op (a thread opened) per call: what the relay checks and stores. */
function makeOp(i: number, origin: string): BenchOp {
  const thread = newThreadId();
  const op = {
    id: newOpId(),
    workspace: WORKSPACE,
    origin,
    lamport: i + 1,
    ts: new Date().toISOString(),
    kind: 'thread.opened',
    operation: thread,
    thread,
    session: null,
    body: { parent: null, subject: `scale op ${i}`, opener: { handle: 'alice', session: null }, target: { kind: 'person', handle: 'bob' } },
    key: SIGNER.key,
  };
  return { id: op.id, text: signOp(op as unknown as Op, SIGNER).raw };
}

/** Receipts of every member: latency samples (while `measuring`) and how often each member saw each op. */
class Tally {
  readonly sentAt = new Map<string, number>();
  readonly seen = new Map<string, Uint8Array>();
  readonly lat: number[] = [];
  /** The same samples split by where the member is: on the instance the op was pushed to, or the other. */
  readonly latSame: number[] = [];
  readonly latOther: number[] = [];
  /** The instance (URL) each op was pushed to. */
  readonly via = new Map<string, string>();
  measuring = true;
  constructor(readonly members: number) {}
  sent(id: string, url?: string): void {
    this.sentAt.set(id, performance.now());
    this.seen.set(id, new Uint8Array(this.members));
    if (url !== undefined) this.via.set(id, url);
  }
  receipt(member: number, id: string, t: number, url?: string): void {
    const row = this.seen.get(id);
    if (!row) return;
    row[member]!++;
    const s = this.sentAt.get(id);
    if (this.measuring && s !== undefined && row[member] === 1) {
      this.lat.push(t - s);
      const via = this.via.get(id);
      if (via !== undefined && url !== undefined) (via === url ? this.latSame : this.latOther).push(t - s);
    }
  }
  /** Ops some member of their stream has not seen, and (member, op) pairs seen more than once. */
  count(streamOf: (id: string) => number): { lost: number; doubled: number; complete: boolean } {
    let lost = 0;
    let doubled = 0;
    for (const [id, row] of this.seen) {
      const s = streamOf(id);
      for (let m = s * PER; m < (s + 1) * PER; m++) {
        if (row[m] === 0) lost++;
        else if (row[m]! > 1) doubled++;
      }
    }
    return { lost, doubled, complete: lost === 0 };
  }
}

/** A simulated node on the wire protocol: follows its stream, pushes, and fails over like the sync client. */
class Member {
  cursor = 0;
  welcomed = false;
  welcomedAt = 0;
  private ws: WebSocket | null = null;
  private at: number;
  /** Closed or failed connections in a row since the last welcome. */
  private failures = 0;
  private stopped = false;
  private nextId = 1;
  /** Pushed and not acknowledged: sent again on the next connection (the relay drops repeats by id). */
  readonly unacked = new Map<number, string>();
  constructor(
    readonly index: number,
    readonly stream: string,
    readonly token: string,
    readonly urls: string[],
    first: number,
    readonly tally: Tally,
  ) {
    this.at = first;
  }

  get url(): string {
    return this.urls[this.at]!;
  }

  open(): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(syncUrl(this.url), { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 });
      this.ws = ws;
      ws.on('message', (data: Buffer) => {
        const t = performance.now();
        const f = JSON.parse(data.toString('utf8')) as { type: string; [k: string]: unknown };
        if (f.type === 'welcome') {
          this.welcomed = true;
          this.welcomedAt = t;
          this.failures = 0;
          for (const [id, text] of this.unacked) ws.send(`{"type":"push","id":${id},"ops":[${text}]}`);
          resolve();
        } else if (f.type === 'ops') {
          for (const e of f['ops'] as Array<{ seq: number; op: { id: string } }>) {
            if (e.seq <= this.cursor) continue;
            this.cursor = e.seq;
            this.tally.receipt(this.index, e.op.id, t, this.url);
          }
        } else if (f.type === 'ack') this.unacked.delete(f['id'] as number);
        else if (f.type === 'ping') ws.send(JSON.stringify({ type: 'pong', t: f['t'] }));
        else if (f.type === 'error') reject(new Error(`relay error ${String(f['code'])}: ${String(f['message'])}`));
      });
      ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', protocol: SYNC_PROTOCOL, stream: this.stream, token: this.token, node: `scale-${this.index}`, since: this.cursor })));
      ws.on('error', () => undefined);
      ws.on('close', () => {
        if (this.ws !== ws) return;
        this.welcomed = false;
        reject(new Error('closed before welcome'));
        if (this.stopped) return;
        // As the sync client: the next URL, at once until a whole round of URLs failed.
        this.at = (this.at + 1) % this.urls.length;
        const delay = reconnectDelay(++this.failures, this.urls.length);
        if (delay === 0) void this.open().catch(() => undefined);
        else setTimeout(() => void this.open().catch(() => undefined), delay);
      });
    });
  }

  push(op: BenchOp): void {
    const id = this.nextId++;
    this.unacked.set(id, op.text);
    if (this.welcomed) this.ws?.send(`{"type":"push","id":${id},"ops":[${op.text}]}`);
  }

  async close(): Promise<void> {
    this.stopped = true;
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    const closed = new Promise((r) => ws.once('close', r));
    ws.close(1000);
    const cut = setTimeout(() => ws.terminate(), 2_000);
    await closed;
    clearTimeout(cut);
  }
}

/** A relay instance (bench/sync-relay.ts) on the shared PostgreSQL schema. */
async function startRelay(schema: string): Promise<{ url: string; child: ChildProcess; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, ['--single-threaded-gc', fileURLToPath(new URL('./sync-relay.js', import.meta.url))], {
    env: { ...process.env, BENCH_RELAY_DB_URL: PG_URL, BENCH_RELAY_DB_SCHEMA: schema, BENCH_RELAY_OPERATOR: OPERATOR, BENCH_RELAY_MAX_PENDING: String(STREAMS * PER * 2) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  children.add(child);
  const exited = new Promise<void>((r) => child.once('exit', () => (children.delete(child), r())));
  const lines = createInterface({ input: child.stdout! });
  let first: { url: string } | null = null;
  for await (const line of lines) {
    first = JSON.parse(line) as { url: string };
    break;
  }
  lines.close();
  if (first === null) throw new Error('a relay exited before listening');
  return {
    url: first.url,
    child,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.stdin!.end();
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** The real sync clients of bench/scale-clients.ts in their own process: each line it prints, in order. */
async function startRealClients(urls: string[], nodes: Array<{ stream: string; token: string }>): Promise<{ send: (cmd: string) => void; line: () => Promise<unknown>; stop: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'nexus-scale-clients-'));
  const child = spawn(process.execPath, ['--single-threaded-gc', fileURLToPath(new URL('./scale-clients.js', import.meta.url)), JSON.stringify({ urls, nodes, dir })], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.add(child);
  const exited = new Promise<void>((r) => child.once('exit', () => (children.delete(child), r())));
  const queue: unknown[] = [];
  const waiters: Array<(v: unknown) => void> = [];
  createInterface({ input: child.stdout! }).on('line', (l) => {
    const v = JSON.parse(l) as unknown;
    const w = waiters.shift();
    if (w) w(v);
    else queue.push(v);
  });
  const line = () => (queue.length > 0 ? Promise.resolve(queue.shift()) : Promise.race([new Promise<unknown>((r) => waiters.push(r)), exited.then(() => Promise.reject(new Error('the real sync clients exited')))]));
  await line();
  return {
    send: (cmd) => void child.stdin!.write(`${cmd}\n`),
    line,
    stop: async () => {
      child.stdin!.end();
      const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(t);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function createStream(base: string, name: string): Promise<string> {
  const res = await fetch(`${base}/v1/streams`, { method: 'POST', headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' }, body: JSON.stringify({ name }) });
  if (res.status !== 200) throw new Error(`creating stream ${name}: HTTP ${res.status} ${await res.text()}`);
  return ((await res.json()) as { token: string }).token;
}

/** Calls `fn` on each item, `width` at a time. */
async function eachLimited<T>(items: T[], width: number, fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

/** Offers `count` ops at `rate`/s in total, round-robin over the streams, through `send`. */
async function offer(count: number, rate: number, send: (i: number) => void): Promise<void> {
  const t0 = performance.now();
  let next = 0;
  while (next < count) {
    const due = Math.min(count, Math.floor(((performance.now() - t0) * rate) / 1000) + 1);
    while (next < due) send(next++);
    await sleep(2);
  }
}

async function until(what: string, ms: number, check: () => boolean): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await sleep(100);
  }
  progress(`gave up waiting for ${what}`);
  return false;
}

type RelayRun = { p99: number | null; rssPerConn: number | null; failoverMs: number | null; realMs: number | null; note: string };

async function relayRun(r: number): Promise<RelayRun> {
  const schema = `scale_${RUN}_${r}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  const a = await startRelay(schema);
  const b = await startRelay(schema);
  const members: Member[] = [];
  let real: Awaited<ReturnType<typeof startRealClients>> | null = null;
  try {
    const urls = [a.url, b.url];
    const tokens: string[] = [];
    for (let s = 0; s < STREAMS; s++) tokens.push(await createStream(a.url, `s${s}`));
    const tally = new Tally(STREAMS * PER);
    const before = (rssBytes(a.child.pid!) ?? 0) + (rssBytes(b.child.pid!) ?? 0);
    for (let s = 0; s < STREAMS; s++) for (let m = 0; m < PER; m++) members.push(new Member(s * PER + m, `s${s}`, tokens[s]!, urls, m % 2, tally));
    await eachLimited(members, 32, (m) => m.open());
    await sleep(1_000);
    const after = (rssBytes(a.child.pid!) ?? 0) + (rssBytes(b.child.pid!) ?? 0);
    const rssPerConn = (after - before) / members.length;
    progress(`run ${r + 1}: ${members.length} nodes on ${STREAMS} streams; relay RSS +${((after - before) / 2 ** 20).toFixed(1)} MiB`);
    // Steady phase: each stream's first member (on instance A) pushes its share of RATE; on the real
    // clients' streams, the second member (on instance B).
    const streamOf = new Map<string, number>();
    const pushOne = (i: number) => {
      const s = i % STREAMS;
      const op = makeOp(i, `scale-origin-${s}`);
      streamOf.set(op.id, s);
      // A real client's stream is fed through the instance that survives (its second member is there), so
      // its first op after the kill waits on nothing but its own move; the others through the one killed.
      const pusher = members[s * PER + (s < REAL && PER > 1 ? 1 : 0)]!;
      tally.sent(op.id, pusher.url);
      pusher.push(op);
    };
    const steady = Math.round(RATE * SECS);
    const steadyLag = monitorEventLoopDelay({ resolution: 10 });
    steadyLag.enable();
    await offer(steady, RATE, pushOne);
    await until('every steady op at every member', 60_000, () => tally.count((id) => streamOf.get(id)!).complete);
    steadyLag.disable();
    const steadyCount = tally.count((id) => streamOf.get(id)!);
    const p99 = steadyCount.complete ? percentile([...tally.lat].sort((x, y) => x - y), 99) : null;
    tally.measuring = false;
    const pct = (xs: number[], p: number) => (xs.length === 0 ? 'n/a' : percentile([...xs].sort((x, y) => x - y), p).toFixed(1));
    progress(
      `run ${r + 1}: steady fan-out ms: all p50 ${pct(tally.lat, 50)} p99 ${pct(tally.lat, 99)}; members on the pushing instance (${tally.latSame.length}) p50 ${pct(tally.latSame, 50)} p99 ${pct(tally.latSame, 99)}; ` +
        `on the other (${tally.latOther.length}) p50 ${pct(tally.latOther, 50)} p99 ${pct(tally.latOther, 99)}; the bench's own loop delay max ${(steadyLag.max / 1e6).toFixed(0)} ms, p99 ${(steadyLag.percentile(99) / 1e6).toFixed(0)} ms, mean ${(steadyLag.mean / 1e6).toFixed(1)} ms`,
    );

    // The real sync clients start only now: their process (PGlite stores taking every op) was the
    // busiest on the machine, and JetStream's fan-out is measured without it.
    real = await startRealClients(urls, tokens.slice(0, REAL).map((token, s) => ({ stream: `s${s}`, token })));
    progress(`run ${r + 1}: ${REAL} real sync clients connected to the first instance and caught up`);

    // Failover phase: instance A dies without a goodbye while ops keep coming.
    const onA = members.filter((m) => m.url === a.url);
    const failing = Math.round(RATE * FAIL_SECS);
    let killedAt = 0;
    // This process's own event-loop delay from the kill until the last simulated node is on the other
    // instance: the part of their figure that is the bench's lag, not the policy.
    const lag = monitorEventLoopDelay({ resolution: 10 });
    await offer(failing, RATE, (i) => {
      if (i === Math.floor(failing / 3)) {
        real!.send('mark');
        lag.enable();
        killedAt = performance.now();
        a.child.kill('SIGKILL');
      }
      pushOne(steady + i);
    });
    const moved = await until('every node of the killed instance on the other', 30_000, () => onA.every((m) => m.welcomed && m.welcomedAt > killedAt));
    lag.disable();
    const lagMs = { max: lag.max / 1e6, p99: lag.percentile(99) / 1e6 };
    const done = await until('every op at every member after the kill', 60_000, () => tally.count((id) => streamOf.get(id)!).complete);
    const { lost, doubled } = tally.count((id) => streamOf.get(id)!);
    const moves = onA.map((m) => m.welcomedAt - killedAt).sort((x, y) => x - y);
    const failoverMs = moved && done && lost === 0 && doubled === 0 ? moves.at(-1)! : null;
    // The real clients: from the kill to each one's first page from the surviving instance.
    real.send('report');
    const report = (await real.line()) as { first: Array<number | null>; movedAt: Array<number | null>; loop: { max: number; p99: number } };
    const killedWall = performance.timeOrigin + killedAt;
    const since = (ts: Array<number | null>) => ts.map((t) => (t === null ? 'n/a' : (t - killedWall).toFixed(0))).join('/');
    progress(`run ${r + 1}: real sync clients after the kill, ms: closed and moved ${since(report.movedAt)}; first op ${since(report.first)}`);
    const realMoves = report.first.filter((t): t is number => t !== null).map((t) => t - killedWall).sort((x, y) => x - y);
    const realMs = realMoves.length === REAL ? realMoves.at(-1)! : null;
    const note =
      `steady: ${steady} ops, lost ${steadyCount.lost}, doubled ${steadyCount.doubled}; failover: ${onA.length} simulated nodes moved ` +
      `(p50 ${percentile(moves, 50).toFixed(0)} ms, p90 ${percentile(moves, 90).toFixed(0)} ms, max ${moves.at(-1)?.toFixed(0) ?? 'n/a'} ms; the bench's own loop delay meanwhile ` +
      `max ${lagMs.max.toFixed(0)} ms, p99 ${lagMs.p99.toFixed(0)} ms), ${failing} ops, lost ${lost}, doubled ${doubled}; ` +
      `${REAL} real sync clients, first op from the other instance: ${realMoves.length} of ${REAL}, p50 ${realMoves.length > 0 ? percentile(realMoves, 50).toFixed(0) : 'n/a'} ms, ` +
      `max ${realMoves.at(-1)?.toFixed(0) ?? 'n/a'} ms (their process's loop delay max ${report.loop.max.toFixed(0)} ms, p99 ${report.loop.p99.toFixed(0)} ms)`;
    progress(`run ${r + 1}: fan-out p99 ${p99?.toFixed(1) ?? 'n/a'} ms; ${note}; slowest simulated node on the other instance after ${failoverMs?.toFixed(0) ?? 'n/a'} ms`);
    return { p99, rssPerConn, failoverMs, realMs, note };
  } finally {
    progress('closing the nodes and the relays');
    await real?.stop();
    await eachLimited(members, 64, (m) => m.close());
    await b.stop();
    await a.stop();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await admin.end();
  }
}

/** A nats-server of the bench's own, with JetStream in a temp folder on a free port. */
async function natsServer(): Promise<{ url: string; pid: number; stop: () => Promise<void> }> {
  const port = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => resolve(p));
    });
  });
  const dir = mkdtempSync(join(tmpdir(), 'nexus-scale-nats-'));
  const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], { stdio: 'ignore' });
  children.add(child);
  const exited = new Promise<void>((r) => child.once('exit', () => (children.delete(child), r())));
  const url = `127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const ok = await connect({ servers: url }).then(
      (nc) => nc.close().then(() => true),
      () => false,
    );
    if (ok) break;
    await sleep(100);
  }
  return {
    url,
    pid: child.pid!,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function jetStreamRun(): Promise<{ p99: number | null; rssPerConn: number | null }> {
  progress('JetStream on the same topology');
  const server = await natsServer();
  const conns: NatsConnection[] = [];
  const readers: ConsumerMessages[] = [];
  try {
    const admin = await connect({ servers: server.url });
    conns.push(admin);
    progress(`nats-server ${server.url} answers`);
    const jsm = await admin.jetstreamManager({ timeout: 30_000 });
    const stream = `SCALE_${RUN}`;
    await jsm.streams.add({ name: stream, subjects: [`scale.${RUN}.*`], storage: StorageType.File });
    progress(`JetStream stream ${stream} made`);
    const tally = new Tally(STREAMS * PER);
    const before = rssBytes(server.pid) ?? 0;
    const ids = Array.from({ length: STREAMS * PER }, (_, i) => i);
    await eachLimited(ids, 16, async (i) => {
      const nc = await connect({ servers: server.url });
      conns.push(nc);
      const consumer = await nc.jetstream().consumers.get(stream, { deliver_policy: DeliverPolicy.New, filterSubjects: `scale.${RUN}.s${Math.floor(i / PER)}` });
      readers.push(await consumer.consume({ callback: (m) => tally.receipt(i, (JSON.parse(m.string()) as { id: string }).id, performance.now()) }));
    });
    await sleep(1_000);
    progress(`${ids.length} JetStream consumers following ${STREAMS} subjects`);
    const after = rssBytes(server.pid) ?? 0;
    const js = admin.jetstream({ timeout: 30_000 });
    const streamOf = new Map<string, number>();
    const count = Math.round(RATE * SECS);
    const lag = monitorEventLoopDelay({ resolution: 10 });
    lag.enable();
    await offer(count, RATE, (i) => {
      const s = i % STREAMS;
      const op = makeOp(i, `scale-origin-${s}`);
      streamOf.set(op.id, s);
      tally.sent(op.id);
      void js.publish(`scale.${RUN}.s${s}`, op.text, { msgID: op.id });
    });
    const complete = await until('every JetStream op at every consumer', 60_000, () => tally.count((id) => streamOf.get(id)!).complete);
    lag.disable();
    progress(`JetStream: fan-out p50 ${tally.lat.length > 0 ? percentile([...tally.lat].sort((x, y) => x - y), 50).toFixed(1) : 'n/a'} ms; the bench's own loop delay max ${(lag.max / 1e6).toFixed(0)} ms, p99 ${(lag.percentile(99) / 1e6).toFixed(0)} ms, mean ${(lag.mean / 1e6).toFixed(1)} ms`);
    await jsm.streams.delete(stream).catch(() => undefined);
    const p99 = complete ? percentile([...tally.lat].sort((x, y) => x - y), 99) : null;
    progress(`JetStream: fan-out p99 ${p99?.toFixed(1) ?? 'n/a'} ms; nats-server RSS +${((after - before) / 2 ** 20).toFixed(1)} MiB for ${ids.length} consumers`);
    return { p99, rssPerConn: (after - before) / ids.length };
  } finally {
    await Promise.all(readers.map((r) => r.close().catch(() => undefined)));
    await Promise.all(conns.map((c) => c.close().catch(() => undefined)));
    await server.stop();
  }
}

const ONLY = process.env['BENCH_SCALE_ONLY'] ?? '';

async function main(): Promise<void> {
  if (ONLY !== '' && ONLY !== 'width' && ONLY !== 'failover' && ONLY !== 'age' && ONLY !== 'join') throw new Error(`BENCH_SCALE_ONLY is width, failover, age or join, not ${JSON.stringify(ONLY)}`);
  const rows: TargetRow[] = [];
  const notes: string[] = [];
  if (ONLY === '' || ONLY === 'width' || ONLY === 'failover') {
    const width = await widthRows();
    if (width === null) return;
    rows.push(...width.rows);
    notes.push(...width.notes);
  }
  if (ONLY === '' || ONLY === 'age') {
    const age = await ageRows();
    rows.push(...age.rows);
    notes.push(...age.notes);
  }
  if (ONLY === '' || ONLY === 'join') {
    const joined = await joinRows();
    rows.push(...joined.rows);
    notes.push(...joined.notes);
  }
  const table = targetsTable(rows);
  const what = ONLY === 'age' ? 'age rows' : ONLY === 'join' ? 'join rows' : `${STREAMS} streams x ${PER} nodes, ${RATE} ops/s offered${ONLY === 'failover' ? ', failover rows only' : ''}`;
  process.stdout.write(`bench:scale ${new Date().toISOString()} load ${loadavg().map((x) => x.toFixed(1)).join(' ')} (${what})\n${notes.join('\n')}\n${table.text}\n`);
  process.exit(table.failed ? 1 : 0);
}

async function widthRows(): Promise<{ rows: TargetRow[]; notes: string[] } | null> {
  const check = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 });
  try {
    await check.connect();
    await check.end();
  } catch (err) {
    progress(`PostgreSQL at ${PG_URL.replace(/\/\/[^@]*@/, '//')} did not answer (${(err as Error).message}): the width rows need it`);
    process.exitCode = 1;
    return null;
  }
  const rows: Record<'fan' | 'mem' | 'fail' | 'real', TargetRow> = {
    fan: { label: `width: fan-out p99 vs JetStream (${STREAMS * PER} nodes / ${STREAMS} streams)`, kind: 'max', target: 2, unit: 'x', runs: [] },
    mem: { label: 'width: relay RSS per connection vs nats-server', kind: 'max', target: 0.5, unit: 'x', runs: [] },
    fail: { label: 'width: failover, simulated nodes on the other instance', kind: 'max', target: 2_000, unit: 'ms', runs: [] },
    real: { label: `width: failover, ${REAL} real sync clients, first op`, kind: 'max', target: 2_000, unit: 'ms', runs: [] },
  };
  const failoverOnly = ONLY === 'failover';
  const notes: string[] = [];
  for (let r = 0; r < REPEATS; r++) {
    const ours = await relayRun(r);
    rows.fail.runs.push(ours.failoverMs);
    rows.real.runs.push(ours.realMs);
    if (failoverOnly) {
      notes.push(`run ${r + 1}: ${ours.note}`);
      continue;
    }
    const theirs = await Promise.race([
      jetStreamRun(),
      sleep(180_000).then(() => {
        progress('the JetStream reference did not finish within 180 s');
        return { p99: null, rssPerConn: null };
      }),
    ]);
    rows.fan.runs.push(ours.p99 !== null && theirs.p99 !== null && theirs.p99 > 0 ? ours.p99 / theirs.p99 : null);
    rows.mem.runs.push(ours.rssPerConn !== null && theirs.rssPerConn !== null && theirs.rssPerConn > 0 ? ours.rssPerConn / theirs.rssPerConn : null);
    notes.push(`run ${r + 1}: relay p99 ${ours.p99?.toFixed(1) ?? 'n/a'} ms vs JetStream ${theirs.p99?.toFixed(1) ?? 'n/a'} ms; RSS/conn ${((ours.rssPerConn ?? 0) / 1024).toFixed(1)} KiB vs ${((theirs.rssPerConn ?? 0) / 1024).toFixed(1)} KiB; ${ours.note}`);
  }
  return { rows: failoverOnly ? [rows.fail, rows.real] : Object.values(rows), notes };
}

main().catch((err: unknown) => {
  progress(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
