// `npm run bench:sync`: our relay against the local NATS JetStream, driven by the same harness with
// the same op payloads and the same in-flight window, each figure printed beside JetStream's with
// the ratio ours/JetStream. Seven parts:
//   1. acknowledged ingest (ops/s): one producer, batches in flight (PGlite; PostgreSQL too when
//      BENCH_DATABASE_URL or TEST_DATABASE_URL is set);
//   2. ack latency p50/p99 at a fixed rate, one op per push / publish;
//   3. fan-out latency from one producer to ten live subscribers;
//   4. catch-up of a backlog into a fresh node store (PGlite): wire only, applied the way SyncClient
//      applies pages (signature checks, ingestChecked -> ingestOps, cursor, one transaction per page),
//      and through the real SyncClient in a node process of its own (bench/sync-node.ts);
//   5. /healthz latency on the PGlite relay while many nodes catch up at once (ours only);
//   6. resident memory per idle connection, ours against nats-server (both read from /proc);
//   7. the PGlite relay's resident memory (a fresh relay per run): idle against a process that only
//      opens PGlite, after slow consumers were filled and closed, and at its peak during catch-ups of
//      a small and a large backlog (it must not grow with the backlog).
// Parts 1, 2, 3, 5, 6 and 7 (and part 4's SyncClient catch-up) run BENCH_REPEATS times (default 3) and end in a targets table: each target
// judged on the median of its runs, with half the runs' range as its noise margin. The bench exits 1
// when a target is missed by more than that margin.
// Ops are real signed protocol-2 ops (thread.opened + message.posted). The relay runs in a child
// process (bench/sync-relay.ts), as NATS runs in its own; every JetStream stream, PostgreSQL schema
// and temp folder made here is removed at the end, on failure, and on SIGINT/SIGTERM.
// Knobs (environment): BENCH_OPS, BENCH_BATCH, BENCH_WINDOW, BENCH_LAT_RATE, BENCH_LAT_SECS,
// BENCH_FANOUT_SUBS, BENCH_FANOUT_RATE, BENCH_FANOUT_SECS, BENCH_BACKLOG, BENCH_HZ_READERS, BENCH_HZ_OPS,
// BENCH_MEM_CONNS, BENCH_RSS_SLOW, BENCH_RSS_SLOW_OPS, BENCH_RSS_READERS, BENCH_RSS_SMALL, BENCH_RSS_BACKLOG,
// BENCH_REPEATS, BENCH_PARTS (e.g. "ingest,latency,fanout,catchup,healthz,memory,rss"), BENCH_TIMEOUT_S (per measurement), BENCH_NATS_URL,
// BENCH_DATABASE_URL, BENCH_RELAY_PROF (a folder: each relay child writes V8 CPU profiles in a folder of its own there, one per thread),
// BENCH_CLIENT_PROF (a folder: each SyncClient catch-up's node process writes V8 CPU profiles in a folder of its own there, one per thread).
// Quick run: BENCH_OPS=5000 BENCH_LAT_SECS=2 BENCH_FANOUT_SECS=2 BENCH_BACKLOG=10000 npm run bench:sync
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { AckPolicy, connect, DeliverPolicy, StorageType, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type NatsConnection } from 'nats';
import pg from 'pg';
import { WebSocket } from 'ws';
import { checkOps, opSigner, signOp, workspaceOfKey, type CheckedOp } from '../crypto/index.js';
import { newMessageId, newOpId, newThreadId } from '../protocol/ids.js';
import { OpPayloadSchema, type Op } from '../protocol/ops.js';
import { rawElements, rawMember, SYNC_PROTOCOL, syncUrl, WireOpSchema } from '../protocol/sync.js';
import { ingestChecked, type Exec } from '../node-agent/kernel/index.js';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { createStore, openStore, storeTemplate, type Db, type Store } from '../node-agent/adapters/store/index.js';
import { writePosition } from '../node-agent/host/sync/state.js';
import { percentile } from './stats.js';
import { natsServerPid, perConnection, rssPeak, settledRss } from './sync-memory.js';
import { targetsTable, type TargetKind, type TargetRow } from './targets.js';

// ---- knobs

function num(name: string, dflt: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return dflt;
  const v = Number(raw.replace(/_/g, ''));
  if (!Number.isFinite(v) || v <= 0) throw new TypeError(`${name} must be a positive number, not ${JSON.stringify(raw)}`);
  return v;
}

const OPS = Math.round(num('BENCH_OPS', 50_000));
const BATCH = Math.round(num('BENCH_BATCH', 100));
const WINDOW = Math.round(num('BENCH_WINDOW', 4));
const LAT_RATE = num('BENCH_LAT_RATE', 1_000);
const LAT_SECS = num('BENCH_LAT_SECS', 10);
const FAN_SUBS = Math.round(num('BENCH_FANOUT_SUBS', 10));
const FAN_RATE = num('BENCH_FANOUT_RATE', 200);
const FAN_SECS = num('BENCH_FANOUT_SECS', 5);
const BACKLOG = Math.round(num('BENCH_BACKLOG', 100_000));
const HZ_READERS = Math.round(num('BENCH_HZ_READERS', 20));
const HZ_OPS = Math.round(num('BENCH_HZ_OPS', 5_000));
const MEM_CONNS = Math.round(num('BENCH_MEM_CONNS', 500));
const REPEATS = Math.round(num('BENCH_REPEATS', 3));
const RSS_SLOW = Math.round(num('BENCH_RSS_SLOW', 20));
const RSS_SLOW_OPS = Math.round(num('BENCH_RSS_SLOW_OPS', 40_000));
const RSS_READERS = Math.round(num('BENCH_RSS_READERS', 10));
const RSS_SMALL = Math.round(num('BENCH_RSS_SMALL', 10_000));
const RSS_BACKLOG = Math.round(num('BENCH_RSS_BACKLOG', 100_000));
/** /healthz must answer within this while nodes catch up (a liveness probe's patience, with room). */
const HZ_TARGET_MS = 200;
/** A fresh node catching up on a backlog through the real SyncClient, verified and stored (ops/s). */
const CATCHUP_TARGET = 8_000;
const TIMEOUT_MS = num('BENCH_TIMEOUT_S', 300) * 1000;
const NATS_URL = process.env['BENCH_NATS_URL'] ?? '127.0.0.1:4222';
const PG_URL = process.env['BENCH_DATABASE_URL'] || process.env['TEST_DATABASE_URL'] || undefined;
const PARTS = new Set((process.env['BENCH_PARTS'] ?? 'ingest,latency,fanout,catchup,healthz,memory,rss').split(',').map((s) => s.trim()));
const RELAY_PROF = process.env['BENCH_RELAY_PROF'];
const CLIENT_PROF = process.env['BENCH_CLIENT_PROF'];

/** The relay's backlog page size (DEFAULT_LIMITS.page_size); JetStream pulls in batches of the same size. */
let PAGE = 500;
/** Ops per thread in the generated log: a thread.opened, then messages. */
const THREAD_LEN = 5;
const WARMUP_OPS = 2_000;

const RUN_ID = `${process.pid.toString(36)}${Date.now().toString(36)}`;

/** Cleanups of things outside this process (JetStream streams, PostgreSQL schemas), run on SIGINT/SIGTERM too. */
const external = new Map<string, () => Promise<void>>();
let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    if (interrupted) return;
    interrupted = true;
    progress(`${sig}: cleaning up`);
    void Promise.allSettled([...external.values()].map((fn) => fn())).then(() => process.exit(130));
  });
}

function progress(msg: string): void {
  process.stderr.write(`sync-bench: ${msg}\n`);
}

// ---- payloads: realistic wire ops, generated once per phase, identical for both systems

/** Ops are signed over their exact bytes by one workspace's genesis key (its sha256 is the workspace id). */
const SIGNER = opSigner(generateKeyPairSync('ed25519').privateKey);
const WORKSPACE = workspaceOfKey(SIGNER.key)!;
const WORDS = (
  'the relay keeps every stream gapless so a node that reconnects resumes from its cursor without loss; ' +
  'please look at the failing migration test in store open and tell me whether the template cache is stale; ' +
  'I rebased the branch onto main, the depth guard now refuses the thirty third hop and the fold stays pure; ' +
  'answering the commission: the working copy is clean, tests pass locally, two warnings remain in the linter'
).split(' ');
const HANDLES = ['alice', 'bob', 'carol', 'dave'];

type BenchOp = { id: string; text: string; bytes: Uint8Array };

function sentence(seed: number): string {
  // A signed op's envelope, key and signature alone take ~590 bytes: short messages keep ops at ~550-720.
  const len = 3 + (seed % 18);
  const out: string[] = [];
  for (let i = 0; i < len; i++) out.push(WORDS[(seed * 7 + i * 13) % WORDS.length]!);
  return out.join(' ');
}

/** `n` wire ops as one origin writes them: threads of THREAD_LEN ops (thread.opened, then message.posted). */
function makeOps(n: number, origin = 'bench-producer'): BenchOp[] {
  const enc = new TextEncoder();
  const out: BenchOp[] = [];
  const base = Date.now();
  let thread = newThreadId();
  for (let i = 0; i < n; i++) {
    const k = i % THREAD_LEN;
    if (k === 0) thread = newThreadId();
    const author = { handle: HANDLES[(i + (k % 2)) % HANDLES.length]!, session: null };
    const body =
      k === 0
        ? { parent: null, subject: sentence(i).slice(0, 80 + (i % 60)), opener: author, target: { kind: 'person', handle: 'bob' } }
        : { message: newMessageId(), author, text: sentence(i), effect: k === 1 ? 'commission' : k % 2 === 0 ? 'answer' : 'reopen', substituted: false, refs: { working_copy: null } };
    const op = {
      id: newOpId(),
      workspace: WORKSPACE,
      origin,
      lamport: i + 1,
      ts: new Date(base + i).toISOString(),
      kind: k === 0 ? 'thread.opened' : 'message.posted',
      operation: thread,
      thread,
      session: null,
      body,
      key: SIGNER.key,
    };
    const text = signOp(op as Op, SIGNER).raw;
    out.push({ id: op.id, text, bytes: enc.encode(text) });
  }
  return out;
}

function sizeSummary(ops: BenchOp[]): string {
  const sizes = ops.map((o) => o.bytes.length).sort((a, b) => a - b);
  const mean = sizes.reduce((a, b) => a + b, 0) / Math.max(1, sizes.length);
  return `mean ${mean.toFixed(0)} B (min ${sizes[0]}, max ${sizes.at(-1)})`;
}

/** Ops valid on the wire, by kind and by signature, as the relay and the node will check them. */
async function checkPayloads(ops: BenchOp[]): Promise<void> {
  const checked = await checkOps(ops.map((o) => o.text));
  const bad = checked.find((c) => !c.ok);
  if (bad && !bad.ok) throw new Error(`a generated op does not verify: ${bad.reason} ${bad.why}`);
  for (const o of ops.slice(0, 2 * THREAD_LEN)) {
    const v = JSON.parse(o.text) as { kind: string; body: unknown };
    WireOpSchema.parse(v);
    OpPayloadSchema.parse({ kind: v.kind, body: v.body });
  }
}

function pushFrame(id: number, ops: BenchOp[]): Buffer {
  return Buffer.from(`{"type":"push","id":${id},"ops":[${ops.map((o) => o.text).join(',')}]}`, 'utf8');
}

// ---- timing helpers

/** Rejects when `fn` has not settled within `ms`; whatever it holds is cleaned up by its owner's finally. */
async function bounded<T>(label: string, ms: number, fn: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      fn(),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${label}: timed out after ${Math.round(ms / 1000)} s`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The in-flight driver both systems go through: `count` sends, at most `window` unresolved at once,
 * a new one started as soon as one resolves. Resolves to the elapsed ms.
 */
function windowed(label: string, count: number, window: number, send: (i: number) => Promise<void>, opsPerSend = 1): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  let done = 0;
  let lastReport = t0;
  return new Promise<number>((resolve, reject) => {
    if (count === 0) return resolve(0);
    const launch = () => {
      while (next < count && next - done < window) {
        const i = next++;
        send(i).then(() => {
          done += 1;
          if (done === count) return resolve(performance.now() - t0);
          const now = performance.now();
          if (now - lastReport > 2_000) {
            lastReport = now;
            progress(`  ${label}: ${done * opsPerSend} of ${count * opsPerSend} ops acknowledged`);
          }
          launch();
        }, reject);
      }
    };
    launch();
  });
}

/**
 * The paced driver: send i is due at i/rate s after the start; sends are not held back by earlier
 * ones. Resolves to each send's latency (ms from the moment it was sent to its resolution).
 */
function paced(count: number, rate: number, send: (i: number) => Promise<void>): Promise<{ lat: number[]; ms: number }> {
  const lat: number[] = [];
  const t0 = performance.now();
  let next = 0;
  let settled = 0;
  return new Promise((resolve, reject) => {
    if (count === 0) return resolve({ lat, ms: 0 });
    const tick = () => {
      const due = Math.min(count, Math.floor(((performance.now() - t0) * rate) / 1000) + 1);
      while (next < due) {
        const i = next++;
        const s = performance.now();
        send(i).then(() => {
          lat.push(performance.now() - s);
          if (++settled === count) resolve({ lat, ms: performance.now() - t0 });
        }, reject);
      }
      if (next < count) setTimeout(tick, 1);
    };
    tick();
  });
}

// This process's `gc`, without --expose-gc on the command line: a context made after the flag has it.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/**
 * Collects this process's garbage before a timed phase. The clients measuring both systems run here, and a
 * collection of theirs lands on whichever system is being timed: the 10,000 frames made for a latency run
 * once cost this process a 20 ms mark-compact and some 12 ms scavenges in the first 300 ms of the run, and
 * with them 150 of its acks (1.5%: the whole p99). Each side is given the same quiet start.
 */
async function quietHere(): Promise<void> {
  collectGarbage();
  await new Promise((resolve) => setImmediate(resolve));
}

/** One send at a time: each latency is the service time with nothing queued ahead. */
async function closedLoop(count: number, send: (i: number) => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const s = performance.now();
    await send(i);
    out.push(performance.now() - s);
  }
  return out;
}

type Lat = { n: number; p50: number; p99: number; max: number };
function lat(samples: number[]): Lat {
  const s = [...samples].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p99: percentile(s, 99), max: s.at(-1) ?? NaN };
}

// ---- our relay: a child process, and a minimal client speaking the protocol

type RelayProc = { url: string; storage: string; child: ChildProcess; stop(): Promise<void> };
const OPERATOR = randomBytes(24).toString('base64url');

/** A bench child (`script` in this folder): resolves once it printed its first JSON line; `stop` ends its stdin and waits. */
async function startChild<T>(script: string, env: Record<string, string>, execArgv: string[]): Promise<{ first: T; child: ChildProcess; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [...execArgv, fileURLToPath(new URL(script, import.meta.url))], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const first = await bounded(`starting ${script}`, 60_000, async () => {
    const lines = createInterface({ input: child.stdout! });
    try {
      for await (const line of lines) return JSON.parse(line) as T;
    } finally {
      lines.close();
    }
    throw new Error(`${script} exited before it was ready (code ${child.exitCode})`);
  }).catch(async (err: unknown) => {
    child.kill('SIGKILL');
    await exited;
    throw err;
  });
  return {
    first,
    child,
    stop: async () => {
      child.stdin!.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The V8 flags `nxs` runs relays and nodes with (bin/nxs's #! line): the children measured run as deployed. */
const NXS_NODE_FLAGS = ['--single-threaded-gc'];

/**
 * CPU profiles of a child in a folder of its own under `root`, with Node's own file names: one profile
 * per thread (a fixed name had one thread's profile overwrite another's). None when `root` is unset.
 */
function profileArgs(root: string | undefined, folder: string): string[] {
  return root ? ['--cpu-prof', `--cpu-prof-dir=${join(root, folder)}`] : [];
}

async function startRelayChild(env: Record<string, string>, label: string, extraArgv: readonly string[] = []): Promise<RelayProc> {
  const execArgv = ['--expose-gc', ...NXS_NODE_FLAGS, ...extraArgv, ...profileArgs(RELAY_PROF, `relay-${label}-${RUN_ID}`)];
  const c = await startChild<{ url: string; storage: string }>('./sync-relay.js', { ...env, BENCH_RELAY_OPERATOR: OPERATOR }, execArgv);
  return { ...c.first, child: c.child, stop: c.stop };
}

async function createStream(base: string, name: string): Promise<string> {
  // A connection of its own: fetch's pool reused a kept-alive socket the relay had just closed after a
  // long catch-up ("other side closed"), and a stream cannot be asked for twice.
  const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = httpRequest(`${base}/v1/streams`, { method: 'POST', agent: false, headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify({ name }));
  });
  if (status !== 200) throw new Error(`creating stream ${name}: HTTP ${status} ${text}`);
  return (JSON.parse(text) as { token: string }).token;
}

type OpsEntry = { seq: number; op: Record<string, unknown> & { id: string } };

const OPS_PREFIX = Buffer.from('{"type":"ops"');

/** A bare protocol client: hello/welcome, push -> ack, ops pages, caught_up; answers pings. */
class RelayConn {
  head = 0;
  limits: { page_size: number } = { page_size: PAGE };
  /** Called with the receipt time (taken before parsing), the page, and the frame's text. */
  onOps: ((t: number, ops: OpsEntry[], text: string) => void) | null = null;
  /** Resolves on caught_up; rejects if the connection ends first (with the relay's error code when it sent one). */
  readonly caughtUp: Promise<number>;
  private resolveCaught!: (head: number) => void;
  private rejectCaught!: (err: Error) => void;
  private readonly pending = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  private failure: Error | null = null;
  private stalled = false;
  /** Resolves once the socket closed, whoever closed it. */
  readonly closed: Promise<void>;

  private constructor(private readonly ws: WebSocket) {
    this.caughtUp = new Promise((resolve, reject) => ((this.resolveCaught = resolve), (this.rejectCaught = reject)));
    this.caughtUp.catch(() => undefined); // observed by whoever waits for it
    this.closed = new Promise((resolve) => ws.once('close', () => resolve()));
    ws.on('error', (err) => this.fail(err));
    ws.on('close', (code, reason) => this.fail(new Error(`relay connection closed ${code} ${reason.toString()}`)));
  }

  static async open(base: string, stream: string, token: string, since: number, node = 'bench-node'): Promise<RelayConn> {
    const ws = new WebSocket(syncUrl(base), { maxPayload: 64 * 1024 * 1024, perMessageDeflate: false });
    const conn = new RelayConn(ws);
    await new Promise<void>((resolve, reject) => {
      ws.on('message', (data: Buffer) => {
        const t = performance.now();
        // A connection that does not read ops (a producer: the relay sends it its own ops back) skips parsing them.
        if (conn.onOps === null && data.subarray(0, OPS_PREFIX.length).equals(OPS_PREFIX)) return;
        const text = data.toString('utf8');
        const f = JSON.parse(text) as { type: string; [k: string]: unknown };
        switch (f.type) {
          case 'welcome':
            conn.head = f['head'] as number;
            conn.limits = f['limits'] as { page_size: number };
            resolve();
            break;
          case 'ack': {
            const p = conn.pending.get(f['id'] as number);
            conn.pending.delete(f['id'] as number);
            p?.resolve();
            break;
          }
          case 'ops':
            conn.onOps?.(t, f['ops'] as OpsEntry[], text);
            break;
          case 'caught_up':
            conn.resolveCaught(f['head'] as number);
            break;
          case 'ping':
            ws.send(JSON.stringify({ type: 'pong', t: f['t'] }));
            break;
          case 'error':
            conn.fail(new Error(`relay error ${String(f['code'])}: ${String(f['message'])}`));
            reject(conn.failure!);
            break;
        }
      });
      ws.once('open', () => ws.send(JSON.stringify({ type: 'hello', protocol: SYNC_PROTOCOL, stream, token, node, since })));
      ws.once('error', reject);
      ws.once('close', () => reject(conn.failure ?? new Error('closed before welcome')));
    });
    return conn;
  }

  /** Sends a prebuilt push frame; resolves on its ack. */
  push(id: number, frame: Buffer): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(frame, { binary: false });
    });
  }

  private fail(err: Error): void {
    this.failure ??= err;
    this.rejectCaught(this.failure);
    for (const p of this.pending.values()) p.reject(this.failure);
    this.pending.clear();
  }

  /** Stops reading the socket, as a node that stopped reading does: the relay's sends pile up in its buffers. */
  stall(): void {
    this.stalled = true;
    this.ws.pause();
  }

  async close(): Promise<void> {
    this.failure ??= new Error('closed by the bench');
    // A stalled socket would read megabytes before it saw the close handshake: cut it instead.
    if (this.stalled) this.ws.terminate();
    else if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close(1000);
    const timer = setTimeout(() => this.ws.terminate(), 2_000);
    await this.closed;
    clearTimeout(timer);
  }
}

// ---- JetStream

type Nats = { nc: NatsConnection; js: JetStreamClient; jsm: JetStreamManager; version: string };

async function natsConnect(url = NATS_URL): Promise<NatsConnection> {
  return connect({ servers: url, timeout: 3_000, maxReconnectAttempts: 0 });
}

async function openNats(url = NATS_URL): Promise<Nats | string> {
  try {
    const nc = await natsConnect(url);
    const jsm = await nc.jetstreamManager({ timeout: 5_000 });
    await jsm.getAccountInfo();
    return { nc, js: nc.jetstream({ timeout: 30_000 }), jsm, version: nc.info?.version ?? '?' };
  } catch (err) {
    return `JetStream unreachable at ${url}: ${(err as Error).message}`;
  }
}

/**
 * A nats-server of the bench's own (JetStream on a temp folder, a free loopback port; `stop` closes the
 * connection and the server), for the memory
 * reference: the shared server has grown and freed memory through the earlier parts (and earlier runs),
 * so what a batch of connections adds to its RSS can even read negative. Null when none can be started.
 */
async function privateNatsServer(): Promise<{ url: string; pid: number; nats: Nats; stop: () => Promise<void> } | null> {
  const port = await new Promise<number>((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => resolve(p));
    });
  });
  const dir = mkdtempSync(join(tmpdir(), 'nexus-bench-nats-'));
  const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const failed = new Promise<null>((resolve) => child.once('error', () => resolve(null)));
  let conn: NatsConnection | null = null;
  const stop = async () => {
    external.delete(`nats-server ${port}`);
    await conn?.close().catch(() => undefined);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
    rmSync(dir, { recursive: true, force: true });
  };
  external.set(`nats-server ${port}`, stop);
  const url = `127.0.0.1:${port}`;
  for (let i = 0; i < 50; i++) {
    const nats = await Promise.race([openNats(url), failed]);
    if (nats === null) break;
    if (typeof nats !== 'string' && child.pid !== undefined) {
      conn = nats.nc;
      return { url, pid: child.pid, nats, stop };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  return null;
}

/** A JetStream stream of its own for one measurement (file storage, like the relay's store), deleted after. */
async function withJsStream<T>(nats: Nats, label: string, fn: (stream: string, subject: string) => Promise<T>): Promise<T> {
  const stream = `NEXUS_BENCH_${label.toUpperCase()}_${RUN_ID}`;
  const subject = `nexusbench.${RUN_ID}.${label}`;
  await nats.jsm.streams.add({ name: stream, subjects: [subject], storage: StorageType.File });
  const drop = async () => {
    external.delete(stream);
    await nats.jsm.streams.delete(stream).catch((err: unknown) => progress(`could not delete JetStream stream ${stream}: ${String(err)}`));
  };
  external.set(stream, drop);
  try {
    return await fn(stream, subject);
  } finally {
    await drop();
  }
}

// ---- results

/** Every target row, filled run by run, judged at the end. */
const targets: TargetRow[] = [];
function target(label: string, kind: TargetKind, goal: number, unit: TargetRow['unit']): TargetRow {
  const row: TargetRow = { label, kind, target: goal, unit, runs: [] };
  targets.push(row);
  return row;
}

type Figure = { ours: number | null; js: number | null };
const lines: string[] = [];
const out = (s = '') => lines.push(s);

function fmtRate(x: number | null): string {
  return x === null || !Number.isFinite(x) ? 'n/a' : `${Math.round(x).toLocaleString('en-US')}/s`;
}
function fmtMs(x: number | null): string {
  if (x === null || !Number.isFinite(x)) return 'n/a';
  return x >= 100 ? `${x.toFixed(0)} ms` : x >= 10 ? `${x.toFixed(1)} ms` : `${x.toFixed(2)} ms`;
}
function ratio(f: Figure): string {
  return f.ours === null || f.js === null || !(f.js > 0) ? 'n/a' : `${(f.ours / f.js).toFixed(2)}x`;
}
function figRow(label: string, f: Figure, fmt: (x: number | null) => string, target = ''): string {
  return `  ${label.padEnd(50)} ${fmt(f.ours).padStart(12)} ${fmt(f.js).padStart(12)} ${ratio(f).padStart(8)}   ${target}`;
}
function header(title: string): void {
  out('');
  out(title);
  out(`  ${''.padEnd(50)} ${'ours'.padStart(12)} ${'JetStream'.padStart(12)} ${'ours/JS'.padStart(8)}   target`);
}
function verdict(ok: boolean | null): string {
  return ok === null ? '(n/a)' : ok ? 'met' : 'MISSED';
}

/** Runs one measurement; a failure or timeout is printed and becomes null, the bench goes on. */
async function attempt<T>(label: string, fn: () => Promise<T>): Promise<T | null> {
  try {
    return await bounded(label, TIMEOUT_MS, fn);
  } catch (err) {
    progress(`${label} FAILED: ${describeError(err)}`);
    out(`  (${label} failed: ${describeError(err)})`);
    return null;
  }
}

/** An error's message with its causes ("fetch failed" alone does not say what failed). */
function describeError(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    parts.push(e instanceof Error ? `${e.message}${(e as { code?: unknown }).code ? ` (${String((e as { code?: unknown }).code)})` : ''}` : String(e));
  }
  return parts.join(': ');
}

// ---- 1. acknowledged ingest

async function oursIngest(relay: RelayProc, label: string, ops: BenchOp[], batch: number, window: number): Promise<number> {
  const stream = `ingest-${label}-${RUN_ID}`;
  const token = await createStream(relay.url, stream);
  const conn = await RelayConn.open(relay.url, stream, token, 0, 'bench-producer');
  try {
    const frames: Buffer[] = [];
    for (let i = 0; i * batch < ops.length; i++) frames.push(pushFrame(i + 1, ops.slice(i * batch, (i + 1) * batch)));
    const ms = await windowed(`ours ${label}`, frames.length, window, (i) => conn.push(i + 1, frames[i]!), batch);
    return (ops.length / ms) * 1000;
  } finally {
    await conn.close();
  }
}

async function jsIngest(nats: Nats, ops: BenchOp[], window: number): Promise<number> {
  return withJsStream(nats, 'ingest', async (_stream, subject) => {
    const nc = await natsConnect();
    try {
      const js = nc.jetstream({ timeout: 30_000 });
      const ms = await windowed('JetStream', ops.length, window, async (i) => {
        const op = ops[i]!;
        const ack = await js.publish(subject, op.bytes, { msgID: op.id });
        if (ack.duplicate) throw new Error(`op ${op.id} acknowledged as a duplicate`);
      });
      return (ops.length / ms) * 1000;
    } finally {
      await nc.close();
    }
  });
}

// ---- 2. ack latency at a fixed rate

type AckLat = { lat: Lat; rate: number; serial: Lat };
/** Sends in a row at most this many for the closed-loop (one at a time) figure. */
const SERIAL_OPS = 1_000;

async function oursAckLatency(relay: RelayProc, label: string, count: number, rate: number): Promise<AckLat> {
  const stream = `latency-${label}-${RUN_ID}`;
  const token = await createStream(relay.url, stream);
  const conn = await RelayConn.open(relay.url, stream, token, 0, 'bench-producer');
  try {
    // Every op and frame is made before any is timed (see quietHere).
    const warm = makeOps(Math.min(WARMUP_OPS, Math.ceil(rate)));
    const serialOps = makeOps(Math.min(SERIAL_OPS, count));
    const warmPaced = makeOps(Math.min(WARMUP_OPS, Math.ceil(rate)));
    const ops = makeOps(count);
    const frames = [...warm, ...serialOps, ...warmPaced, ...ops].map((o, i) => pushFrame(i + 1, [o]));
    let id = 0;
    await closedLoop(warm.length, () => conn.push(++id, frames[id - 1]!));
    await quietHere();
    const serial = await closedLoop(serialOps.length, () => conn.push(++id, frames[id - 1]!));
    // A second of the paced load itself, untimed: pushes overlap and commits group only under it.
    const warmFirst = id + 1;
    await paced(warmPaced.length, rate, (i) => conn.push(warmFirst + i, frames[warmFirst + i - 1]!));
    await quietHere();
    const first = warmFirst + warmPaced.length;
    const r = await paced(count, rate, (i) => conn.push(first + i, frames[first + i - 1]!));
    return { lat: lat(r.lat), rate: (count / r.ms) * 1000, serial: lat(serial) };
  } finally {
    await conn.close();
  }
}

async function jsAckLatency(nats: Nats, count: number, rate: number): Promise<AckLat> {
  return withJsStream(nats, 'latency', async (_stream, subject) => {
    const nc = await natsConnect();
    try {
      const js = nc.jetstream({ timeout: 30_000 });
      const publish = async (op: BenchOp) => void (await js.publish(subject, op.bytes, { msgID: op.id }));
      const warm = makeOps(Math.min(WARMUP_OPS, Math.ceil(rate)));
      const serialOps = makeOps(Math.min(SERIAL_OPS, count));
      const warmPaced = makeOps(Math.min(WARMUP_OPS, Math.ceil(rate)));
      const ops = makeOps(count);
      await closedLoop(warm.length, (i) => publish(warm[i]!));
      await quietHere();
      const serial = await closedLoop(serialOps.length, (i) => publish(serialOps[i]!));
      await paced(warmPaced.length, rate, (i) => publish(warmPaced[i]!));
      await quietHere();
      const r = await paced(count, rate, (i) => publish(ops[i]!));
      return { lat: lat(r.lat), rate: (count / r.ms) * 1000, serial: lat(serial) };
    } finally {
      await nc.close();
    }
  });
}

// ---- 3. fan-out

/** Receipt bookkeeping shared by both systems: send time per op id, latency per receipt. */
class FanOut {
  readonly sentAt = new Map<string, number>();
  readonly lat: number[] = [];
  readonly got: number[];
  constructor(subs: number) {
    this.got = new Array<number>(subs).fill(0);
  }
  receipt(sub: number, t: number, id: string): void {
    const s = this.sentAt.get(id);
    if (s === undefined) return; // warm-up or someone else's op
    this.lat.push(t - s);
    this.got[sub]! += 1;
  }
  async allReceived(expected: number, ms = 15_000): Promise<void> {
    const deadline = performance.now() + ms;
    while (this.got.some((g) => g < expected)) {
      if (performance.now() > deadline) throw new Error(`fan-out: receipts per subscriber ${this.got.join(',')} of ${expected}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

async function oursFanout(relay: RelayProc, subs: number, count: number, rate: number, run = 1): Promise<Lat> {
  const stream = `fanout-${run}-${RUN_ID}`;
  const token = await createStream(relay.url, stream);
  const fan = new FanOut(subs);
  const conns: RelayConn[] = [];
  try {
    for (let s = 0; s < subs; s++) {
      const c = await RelayConn.open(relay.url, stream, token, 0, `bench-sub-${s}`);
      conns.push(c);
      c.onOps = (t, ops) => {
        for (const o of ops) fan.receipt(s, t, o.op.id);
      };
      await c.caughtUp;
    }
    const producer = await RelayConn.open(relay.url, stream, token, 0, 'bench-producer');
    conns.push(producer);
    const warm = makeOps(Math.min(200, count));
    await paced(warm.length, rate, (i) => producer.push(i + 1, pushFrame(i + 1, [warm[i]!])));
    const ops = makeOps(count);
    const frames = ops.map((o, i) => pushFrame(warm.length + i + 1, [o]));
    await quietHere();
    await paced(count, rate, (i) => {
      fan.sentAt.set(ops[i]!.id, performance.now());
      return producer.push(warm.length + i + 1, frames[i]!);
    });
    await fan.allReceived(count);
    return lat(fan.lat);
  } finally {
    await Promise.all(conns.map((c) => c.close()));
  }
}

async function jsFanout(nats: Nats, subs: number, count: number, rate: number): Promise<Lat> {
  return withJsStream(nats, 'fanout', async (stream, subject) => {
    const fan = new FanOut(subs);
    const conns: NatsConnection[] = [];
    const readers: ConsumerMessages[] = [];
    try {
      for (let s = 0; s < subs; s++) {
        const nc = await natsConnect();
        conns.push(nc);
        const js = nc.jetstream();
        // An ordered consumer (JetStream's replaying, gapless reader), from the next op on.
        const info = await nats.jsm.streams.info(stream);
        const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: info.state.last_seq + 1 });
        readers.push(
          await consumer.consume({
            callback: (m) => {
              const t = performance.now();
              fan.receipt(s, t, (JSON.parse(m.string()) as { id: string }).id);
            },
          }),
        );
      }
      const nc = await natsConnect();
      conns.push(nc);
      const js = nc.jetstream({ timeout: 30_000 });
      const warm = makeOps(Math.min(200, count));
      await paced(warm.length, rate, async (i) => void (await js.publish(subject, warm[i]!.bytes, { msgID: warm[i]!.id })));
      const ops = makeOps(count);
      await quietHere();
      await paced(count, rate, async (i) => {
        fan.sentAt.set(ops[i]!.id, performance.now());
        await js.publish(subject, ops[i]!.bytes, { msgID: ops[i]!.id });
      });
      await fan.allReceived(count);
      return lat(fan.lat);
    } finally {
      // Stopped before their connections close, or ordered consumers keep trying to reset.
      await Promise.all(readers.map((r) => r.close().catch(() => undefined)));
      await Promise.all(conns.map((c) => c.close().catch(() => undefined)));
    }
  });
}

// ---- 5. /healthz during catch-ups

/**
 * Polls `url` every 10 ms from a process of its own until stopped, then gives each poll's latency. Not
 * from this process: its 20 readers receive 100,000 ops, and a poller beside them measured their work.
 */
function healthzPoller(url: string): { stop(): Promise<number[]> } {
  const script = `
    let polling = true;
    const samples = [];
    process.stdin.on('end', () => (polling = false)).resume();
    (async () => {
      while (polling) {
        const s = performance.now();
        const res = await fetch(${JSON.stringify(url)});
        await res.text();
        if (res.status !== 200) throw new Error('/healthz answered ' + res.status);
        samples.push(performance.now() - s);
        await new Promise((r) => setTimeout(r, 10));
      }
      process.stdout.write(JSON.stringify(samples));
    })().catch((err) => { console.error(String(err)); process.exit(1); });`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    async stop() {
      child.stdin!.end();
      const code = await exited;
      if (code !== 0) throw new Error(`the /healthz poller exited with ${code}`);
      return JSON.parse(out) as number[];
    },
  };
}

/** `readers` bare clients catch up on `ops` at once while /healthz is polled every 10 ms; the poll latencies. */
async function oursHealthz(relay: RelayProc, readers: number, ops: BenchOp[], run = 1): Promise<{ lat: Lat; catchupMs: number }> {
  const seeded = await seedOurs(relay, ops, `healthz${run}`);
  const poller = healthzPoller(`${relay.url}/healthz`);
  // Its first polls come before the catch-up starts.
  await new Promise((r) => setTimeout(r, 300));
  const t0 = performance.now();
  const conns: RelayConn[] = [];
  let stopped: number[] | null = null;
  try {
    await Promise.all(
      Array.from({ length: readers }, async (_, i) => {
        const c = await RelayConn.open(relay.url, seeded.stream, seeded.token, 0, `bench-hz-${i}`);
        conns.push(c);
        // Pages are not parsed (onOps stays null): only caught_up is awaited.
        await c.caughtUp;
      }),
    );
    const catchupMs = performance.now() - t0;
    stopped = await poller.stop();
    return { lat: lat(stopped), catchupMs };
  } finally {
    if (stopped === null) await poller.stop().catch(() => undefined);
    await Promise.all(conns.map((c) => c.close()));
  }
}

// ---- 6. memory per idle connection

/** RSS our relay child gains per connection: `count` bare clients, each past hello and caught up, then idle. */
async function oursIdleMemory(relay: RelayProc, count: number, run: number): Promise<number | null> {
  const stream = `idle-${run}-${RUN_ID}`;
  const token = await createStream(relay.url, stream);
  // A full collection in the relay before each reading: what is left is what the connections hold.
  const gc = async () => {
    relay.child.stdin!.write('gc\n');
    await new Promise((r) => setTimeout(r, 300));
  };
  return perConnection(relay.child.pid!, count, gc, async (k) => {
    const conns: RelayConn[] = [];
    for (let i = 0; i < k; i++) {
      const c = await RelayConn.open(relay.url, stream, token, 0, `bench-idle-${i}`);
      conns.push(c);
      await c.caughtUp;
    }
    return async () => void (await Promise.all(conns.map((c) => c.close())));
  });
}

/** RSS nats-server gains per connection: `count` connections, each following the stream with an ordered consumer. */
async function natsIdleMemory(nats: Nats, pid: number, count: number, url = NATS_URL): Promise<number | null> {
  return withJsStream(nats, 'idle', async (stream) =>
    perConnection(pid, count, async () => undefined, async (k) => {
      const conns: NatsConnection[] = [];
      const readers: ConsumerMessages[] = [];
      for (let i = 0; i < k; i++) {
        const nc = await natsConnect(url);
        conns.push(nc);
        const consumer = await nc.jetstream().consumers.get(stream, { deliver_policy: DeliverPolicy.New });
        readers.push(await consumer.consume({ callback: () => undefined }));
      }
      return async () => {
        await Promise.all(readers.map((r) => r.close().catch(() => undefined)));
        await Promise.all(conns.map((c) => c.close().catch(() => undefined)));
      };
    }),
  );
}

// ---- 7. the PGlite relay's resident memory

const MiB = 1024 * 1024;

/** A full GC in a bench child (the relay or the bare PGlite), given time to run. */
function childGc(child: ChildProcess): () => Promise<void> {
  return async () => {
    child.stdin!.write('gc\n');
    await new Promise((r) => setTimeout(r, 300));
  };
}

/** The settled RSS of a process that does nothing but open PGlite with its defaults on a fresh folder. */
async function bareOpenRss(dir: string): Promise<number | null> {
  const bare = await startChild<{ ready: boolean }>('./sync-bare-pglite.js', { BENCH_BARE_DATA: dir }, ['--expose-gc']);
  try {
    return await settledRss(bare.child.pid!, childGc(bare.child));
  } finally {
    await bare.stop();
  }
}

/**
 * `count` consumers that stop reading at once, on a backlog larger than the send-buffer cap: the relay
 * fills their buffers, then closes them as SLOW_CONSUMER. Resolves to the highest RSS on the way.
 */
async function oursSlowConsumers(relay: RelayProc, count: number, ops: BenchOp[], run: number): Promise<number | null> {
  const seeded = await seedOurs(relay, ops, `slow${run}`);
  const peak = rssPeak(relay.child.pid!);
  const conns: RelayConn[] = [];
  try {
    await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const c = await RelayConn.open(relay.url, seeded.stream, seeded.token, 0, `bench-slow-${i}`);
        c.stall();
        conns.push(c);
      }),
    );
    // A stalled client never reads the relay's close: the relay's own gauge says when it let them go.
    while ((await streamConnections(relay, seeded.stream)) > 0) await new Promise((r) => setTimeout(r, 250));
    return peak.stop();
  } finally {
    peak.stop();
    await Promise.all(conns.map((c) => c.close()));
  }
}

/** The relay's count of open connections on `stream`, from its /metrics. */
async function streamConnections(relay: RelayProc, stream: string): Promise<number> {
  const text = await (await fetch(`${relay.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`nexus_relay_stream_connections{stream="${stream}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

/** The highest RSS of the relay while `readers` bare clients catch up on a backlog of `ops` from seq 0. */
async function oursCatchupPeak(relay: RelayProc, readers: number, ops: BenchOp[], label: string): Promise<number | null> {
  const seeded = await seedOurs(relay, ops, label);
  await settledRss(relay.child.pid!, childGc(relay.child));
  const peak = rssPeak(relay.child.pid!);
  const conns: RelayConn[] = [];
  try {
    await Promise.all(
      Array.from({ length: readers }, async (_, i) => {
        const c = await RelayConn.open(relay.url, seeded.stream, seeded.token, 0, `bench-rss-${i}`);
        conns.push(c);
        await c.caughtUp;
      }),
    );
    return peak.stop();
  } finally {
    peak.stop();
    await Promise.all(conns.map((c) => c.close()));
  }
}

// ---- 4. catch-up

/** Where applying pages goes: waiting for signature checks, ingestChecked (key chain + ingestOps), the rest of the transaction. */
class ApplyStats {
  pages = 0;
  verifyWaitMs = 0;
  ingestMs = 0;
  txMs = 0;
  rejected = 0;
  describe(totalMs: number): string {
    const pct = (x: number) => `${((100 * x) / totalMs).toFixed(0)}%`;
    return `${this.pages} pages; of the wall time: waiting on signature checks ${pct(this.verifyWaitMs)}, ingestChecked ${pct(this.ingestMs)}, cursor write + commit ${pct(this.txMs - this.ingestMs)}`;
  }
}

/**
 * The node's apply path, as SyncClient does it: each page's op texts are checked (signatures, on the
 * thread pool) as soon as the page arrives, while earlier pages are stored; pages are stored in order,
 * each with ingestChecked (key chain, then ingestOps) and the cursor write in one transaction.
 */
class Applier {
  readonly stats = new ApplyStats();
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  constructor(
    private readonly db: Db,
    private readonly key: string,
  ) {}

  page(texts: string[], lastSeq: number): void {
    const checked = checkOps(texts);
    this.chain = this.chain.then(() => this.apply(checked, lastSeq)).catch((err: unknown) => void (this.failure ??= err));
  }

  async done(): Promise<void> {
    await this.chain;
    if (this.failure) throw this.failure instanceof Error ? this.failure : new Error(String(this.failure));
    if (this.stats.rejected > 0) throw new Error(`${this.stats.rejected} ops were refused on apply`);
  }

  private async apply(pending: Promise<CheckedOp[]>, cursor: number): Promise<void> {
    const t0 = performance.now();
    const checked = await pending;
    const t1 = performance.now();
    await this.db.transaction(async (tx: Exec) => {
      const a = performance.now();
      const report = await ingestChecked(tx, checked, { projections: PROJECTIONS });
      this.stats.ingestMs += performance.now() - a;
      this.stats.rejected += Object.values(report.rejected).reduce((x, y) => x + y, 0) + report.held;
      await writePosition(tx, this.key, { cursor, acked: 0, rejected: {} });
    });
    this.stats.pages += 1;
    this.stats.verifyWaitMs += t1 - t0;
    this.stats.txMs += performance.now() - t1;
  }
}

/** The op texts of an `ops` frame, exactly as sent (the way SyncClient finds them). */
function opTexts(frame: string): string[] {
  const texts = rawElements(rawMember(frame, 'ops') ?? '')?.map((el) => rawMember(el, 'op'));
  if (!texts || texts.some((t) => t === undefined)) throw new Error('the op texts could not be located in an ops frame');
  return texts as string[];
}

async function countOps(store: Store): Promise<number> {
  const r = await store.pg.query<{ n: number }>('select count(*)::int as n from ops');
  return r.rows[0]!.n;
}

/** Says so, loudly, when a store does not hold exactly the backlog after catching up (the figure would be meaningless). */
async function expectStored(store: Store, total: number, label: string): Promise<void> {
  const n = await countOps(store);
  if (n === total) return;
  progress(`${label}: the store holds ${n} ops after catching up, expected ${total}`);
  out(`  WARNING ${label}: the store holds ${n} ops after catching up, expected ${total}`);
}

class Stores {
  private n = 0;
  constructor(
    private readonly base: string,
    readonly home: string,
  ) {}
  /** A folder for the next store (not made yet). */
  nextDir(): string {
    return join(this.base, `node-store-${++this.n}`);
  }
  async fresh(): Promise<Store> {
    const dir = this.nextDir();
    await createStore(dir, this.home);
    // Opened as the node opens its stores: long-lived, so V8 may optimise PGlite's code (infra/wasm.ts).
    return openStore(dir, { tiering: true });
  }
}

async function seedOurs(relay: RelayProc, ops: BenchOp[], label = 'catchup'): Promise<{ stream: string; token: string; rate: number }> {
  const stream = `${label}-${RUN_ID}`;
  const token = await createStream(relay.url, stream);
  const conn = await RelayConn.open(relay.url, stream, token, 0, 'bench-producer');
  try {
    const frames: Buffer[] = [];
    for (let i = 0; i * PAGE < ops.length; i++) frames.push(pushFrame(i + 1, ops.slice(i * PAGE, (i + 1) * PAGE)));
    const ms = await windowed('seeding our backlog', frames.length, WINDOW, (i) => conn.push(i + 1, frames[i]!), PAGE);
    return { stream, token, rate: (ops.length / ms) * 1000 };
  } finally {
    await conn.close();
  }
}

/** Reads the backlog from seq 0 with the bare client; with an Applier, each page is applied as SyncClient would. */
async function oursCatchup(relay: RelayProc, stream: string, token: string, total: number, applier?: Applier): Promise<number> {
  const t0 = performance.now();
  let got = 0;
  let lastReport = t0;
  const conn = await RelayConn.open(relay.url, stream, token, 0, 'bench-reader');
  try {
    conn.onOps = (_t, ops, text) => {
      got += ops.length;
      if (applier) applier.page(opTexts(text), ops.at(-1)!.seq);
      const now = performance.now();
      if (now - lastReport > 3_000) {
        lastReport = now;
        progress(`  ours: ${got} of ${total} ops received`);
      }
    };
    await conn.caughtUp;
    await applier?.done();
    if (got !== total) throw new Error(`caught up with ${got} ops, expected ${total}`);
    return (total / (performance.now() - t0)) * 1000;
  } finally {
    await conn.close();
  }
}

/**
 * A node catching up through the real SyncClient, in a process of its own (bench/sync-node.ts) on a
 * fresh store: its rate, and a warning when it did not end holding exactly the backlog.
 */
async function oursSyncClient(relay: RelayProc, stream: string, token: string, total: number, stores: Stores, label: string): Promise<number> {
  const execArgv = [...NXS_NODE_FLAGS, ...profileArgs(CLIENT_PROF, `${label}-${RUN_ID}`)];
  const env = { BENCH_NODE_RELAY: relay.url, BENCH_NODE_STREAM: stream, BENCH_NODE_TOKEN: token, BENCH_NODE_TOTAL: String(total), BENCH_NODE_STORE: stores.nextDir(), BENCH_NODE_HOME: stores.home };
  const c = await startChild<{ rate: number; cpuMs: number; stored: number; cursor: number }>('./sync-node.js', env, execArgv);
  await c.stop();
  const r = c.first;
  progress(`  SyncClient: ${fmtRate(r.rate)}, ${(r.cpuMs / 1000).toFixed(1)} s of the node process's CPU, cursor ${r.cursor}`);
  if (r.stored !== total) out(`  WARNING ours, SyncClient: the store holds ${r.stored} ops after catching up, expected ${total}`);
  return r.rate;
}

async function seedJs(nats: Nats, subject: string, ops: BenchOp[]): Promise<number> {
  const ms = await windowed('seeding the JetStream backlog', ops.length, WINDOW * PAGE, async (i) => {
    await nats.js.publish(subject, ops[i]!.bytes, { msgID: ops[i]!.id });
  });
  return (ops.length / ms) * 1000;
}

/** A pull consumer from the first message, in batches of PAGE; with an Applier, each page of PAGE is applied as SyncClient would. */
async function jsCatchup(nats: Nats, stream: string, total: number, name: string, applier?: Applier): Promise<number> {
  await nats.jsm.consumers.add(stream, { durable_name: name, ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.All });
  const nc = await natsConnect();
  try {
    const js = nc.jetstream();
    const t0 = performance.now();
    const consumer = await js.consumers.get(stream, name);
    const msgs = await consumer.consume({ max_messages: PAGE });
    let got = 0;
    let page: string[] = [];
    let lastReport = t0;
    for await (const m of msgs) {
      const text = m.string();
      JSON.parse(text);
      page.push(text);
      got += 1;
      if (page.length === PAGE || got === total) {
        applier?.page(page, m.seq);
        page = [];
        const now = performance.now();
        if (now - lastReport > 3_000) {
          lastReport = now;
          progress(`  JetStream: ${got} of ${total} ops received`);
        }
      }
      if (got === total) break;
    }
    await applier?.done();
    const rate = (total / (performance.now() - t0)) * 1000;
    if (got !== total) throw new Error(`consumed ${got} ops, expected ${total}`);
    // Leaving the loop stops the pull; closing the iterator can wait on the server, so it is not awaited for long.
    await settleWithin(msgs.close(), 2_000);
    return rate;
  } finally {
    await settleWithin(nc.close(), 2_000);
  }
}

/** Waits for `p` (ignoring its outcome) at most `ms`. */
async function settleWithin(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.catch(() => undefined), new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}

// ---- main

async function main(): Promise<void> {
  const base = mkdtempSync(join(tmpdir(), 'nexus-sync-bench-'));
  external.set('temp dir', async () => rmSync(base, { recursive: true, force: true }));
  const cleanup: Array<() => Promise<void>> = [];
  let nats: Nats | string = 'not tried';
  try {
    nats = await openNats();
    const n = typeof nats === 'string' ? null : nats;
    if (!n) progress(String(nats));
    else {
      const natsConn = n.nc;
      cleanup.push(() => natsConn.close());
    }
    progress(`starting the relay (PGlite) in a child process...`);
    const relay = await startRelayChild({ BENCH_RELAY_DATA: join(base, 'relay') }, 'pglite');
    cleanup.push(() => relay.stop());
    const probe = makeOps(THREAD_LEN * 200);
    await checkPayloads(probe);

    out(`Nexus sync bench (node ${process.version}, ${process.platform}, ${cpus().length} CPUs): relay ${relay.url} in a child process vs ${n ? `NATS ${n.version} JetStream at ${NATS_URL} (file storage, msgID dedup)` : 'JetStream: n/a'}`);
    if (!n) out(`  ${String(nats)}: ratios are n/a`);
    out(`  ops: realistic message ops (1 in ${THREAD_LEN} thread.opened, the rest message.posted), ${sizeSummary(probe)}`);
    out(`  the same op bytes go to both; ours pushes ${BATCH} per push with ${WINDOW} pushes in flight, JetStream keeps ${BATCH * WINDOW} publishes in flight`);

    // 1. ingest (PGlite, and PostgreSQL when given), each run paired with a JetStream run
    if (PARTS.has('ingest')) {
      header(`1. acknowledged ingest: ${OPS.toLocaleString('en-US')} ops, one producer, ${REPEATS} runs (ops/s, higher is better)`);
      const warm = makeOps(Math.min(WARMUP_OPS, OPS));
      progress(`1. ingest: ${OPS} ops x ${REPEATS} runs, warm-ups first`);
      await attempt('warm-up ours', () => oursIngest(relay, 'warm', warm, BATCH, WINDOW));
      if (n) await attempt('warm-up JetStream', () => jsIngest(n, warm, BATCH * WINDOW));
      let pgRelay: RelayProc | null = null;
      const schema = `nexus_sync_bench_${RUN_ID}`;
      const dropSchema = async () => {
        external.delete(schema);
        const c = new pg.Client({ connectionString: PG_URL });
        await c.connect();
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => c.end());
      };
      if (PG_URL) {
        external.set(schema, dropSchema);
        pgRelay = await attempt('starting the relay on PostgreSQL', () => startRelayChild({ BENCH_RELAY_DB_URL: PG_URL, BENCH_RELAY_DB_SCHEMA: schema }, 'postgres'));
        if (pgRelay) await attempt('warm-up ours (PostgreSQL)', () => oursIngest(pgRelay!, 'pgwarm', warm, BATCH, WINDOW));
      }
      const rowLite = target('ingest on PGlite, ours/JetStream', 'min', 1.0, 'x');
      const rowPg = PG_URL ? target('ingest on PostgreSQL, ours/JetStream', 'min', 1.0, 'x') : null;
      try {
        for (let r = 1; r <= REPEATS; r++) {
          const ops = makeOps(OPS);
          const ours = await attempt(`ingest ours (PGlite) run ${r}`, () => oursIngest(relay, `pglite${r}`, ops, BATCH, WINDOW));
          const js = n ? await attempt(`ingest JetStream run ${r}`, () => jsIngest(n, ops, BATCH * WINDOW)) : null;
          const oursPg = pgRelay ? await attempt(`ingest ours (PostgreSQL) run ${r}`, () => oursIngest(pgRelay!, `postgres${r}`, makeOps(OPS), BATCH, WINDOW)) : null;
          progress(`  run ${r}: ours PGlite ${fmtRate(ours)}, JetStream ${fmtRate(js)}${pgRelay ? `, ours PostgreSQL ${fmtRate(oursPg)}` : ''}`);
          out(figRow(`run ${r}: relay on PGlite, ${BATCH}/push x ${WINDOW} in flight`, { ours, js }, fmtRate));
          rowLite.runs.push(ours !== null && js ? ours / js : null);
          if (rowPg) {
            out(figRow(`run ${r}: relay on PostgreSQL, same`, { ours: oursPg, js }, fmtRate));
            rowPg.runs.push(oursPg !== null && js ? oursPg / js : null);
          }
        }
        if (pgRelay && PARTS.has('latency')) {
          const count = Math.round(LAT_RATE * LAT_SECS);
          const r = await attempt('ack latency ours (PostgreSQL)', () => oursAckLatency(pgRelay!, 'postgres', count, LAT_RATE));
          if (r) {
            out(`  relay on PostgreSQL, ack latency at ${LAT_RATE}/s: p50 ${fmtMs(r.lat.p50)}, p99 ${fmtMs(r.lat.p99)}, max ${fmtMs(r.lat.max)} (${fmtRate(r.rate)} achieved);`);
            out(`    one at a time: p50 ${fmtMs(r.serial.p50)}, p99 ${fmtMs(r.serial.p99)}`);
          }
        }
      } finally {
        if (pgRelay) {
          await pgRelay.stop();
          await dropSchema();
        }
      }
      if (!PG_URL) out('  relay on PostgreSQL: skipped (set BENCH_DATABASE_URL or TEST_DATABASE_URL)');
    }

    // 2. ack latency
    if (PARTS.has('latency')) {
      const count = Math.round(LAT_RATE * LAT_SECS);
      header(`2. ack latency at ${LAT_RATE.toLocaleString('en-US')} ops/s for ${LAT_SECS} s, one op per push / publish, ${REPEATS} runs (lower is better)`);
      progress(`2. ack latency: ${count} ops at ${LAT_RATE}/s x ${REPEATS} runs`);
      const row = target(`ack latency p99 at ${LAT_RATE}/s, ours/JetStream`, 'max', 2.0, 'x');
      // Keeping up: the ops sent over the time to the last ack, against the rate offered.
      const rowRate = target(`ack latency run at ${LAT_RATE}/s, ours achieved / offered`, 'min', 0.97, 'x');
      for (let r = 1; r <= REPEATS; r++) {
        const ours = await attempt(`ack latency ours run ${r}`, () => oursAckLatency(relay, `pglite${r}`, count, LAT_RATE));
        const js = n ? await attempt(`ack latency JetStream run ${r}`, () => jsAckLatency(n, count, LAT_RATE)) : null;
        progress(`  run ${r}: ours p50 ${fmtMs(ours?.lat.p50 ?? null)} p99 ${fmtMs(ours?.lat.p99 ?? null)}; JetStream p50 ${fmtMs(js?.lat.p50 ?? null)} p99 ${fmtMs(js?.lat.p99 ?? null)}`);
        row.runs.push(ours && js ? ours.lat.p99 / js.lat.p99 : null);
        rowRate.runs.push(ours ? ours.rate / LAT_RATE : null);
        out(figRow(`run ${r}: p50`, { ours: ours?.lat.p50 ?? null, js: js?.lat.p50 ?? null }, fmtMs));
        out(figRow(`run ${r}: p99`, { ours: ours?.lat.p99 ?? null, js: js?.lat.p99 ?? null }, fmtMs));
        out(figRow(`run ${r}: max`, { ours: ours?.lat.max ?? null, js: js?.lat.max ?? null }, fmtMs));
        out(figRow(`run ${r}: rate achieved (ops sent / time to last ack)`, { ours: ours?.rate ?? null, js: js?.rate ?? null }, fmtRate));
        out(figRow(`run ${r}: closed loop, one at a time (${Math.min(SERIAL_OPS, count)}): p50`, { ours: ours?.serial.p50 ?? null, js: js?.serial.p50 ?? null }, fmtMs));
        out(figRow(`run ${r}: closed loop, one at a time: p99`, { ours: ours?.serial.p99 ?? null, js: js?.serial.p99 ?? null }, fmtMs));
      }
    }

    // 3. fan-out
    if (PARTS.has('fanout')) {
      const count = Math.round(FAN_RATE * FAN_SECS);
      header(`3. fan-out: 1 producer -> ${FAN_SUBS} live subscribers, ${FAN_RATE} ops/s for ${FAN_SECS} s, publish -> receipt, ${REPEATS} runs (lower is better)`);
      progress(`3. fan-out: ${count} ops to ${FAN_SUBS} subscribers x ${REPEATS} runs`);
      const row = target(`fan-out 1->${FAN_SUBS} at ${FAN_RATE}/s, ours p50`, 'max', 2.0, 'ms');
      const rowP99 = target(`fan-out 1->${FAN_SUBS} at ${FAN_RATE}/s, p99 ours/JetStream`, 'max', 2.0, 'x');
      for (let r = 1; r <= REPEATS; r++) {
        const ours = await attempt(`fan-out ours run ${r}`, () => oursFanout(relay, FAN_SUBS, count, FAN_RATE, r));
        const js = n ? await attempt(`fan-out JetStream run ${r}`, () => jsFanout(n, FAN_SUBS, count, FAN_RATE)) : null;
        progress(`  run ${r}: ours p50 ${fmtMs(ours?.p50 ?? null)} p99 ${fmtMs(ours?.p99 ?? null)}; JetStream p50 ${fmtMs(js?.p50 ?? null)} p99 ${fmtMs(js?.p99 ?? null)}`);
        row.runs.push(ours?.p50 ?? null);
        rowP99.runs.push(ours && js ? ours.p99 / js.p99 : null);
        out(figRow(`run ${r}: p50 (${(ours?.n ?? count * FAN_SUBS).toLocaleString('en-US')} receipts)`, { ours: ours?.p50 ?? null, js: js?.p50 ?? null }, fmtMs));
        out(figRow(`run ${r}: p99`, { ours: ours?.p99 ?? null, js: js?.p99 ?? null }, fmtMs));
        out(figRow(`run ${r}: max`, { ours: ours?.max ?? null, js: js?.max ?? null }, fmtMs));
      }
      out(`  (ours: ${FAN_SUBS} ws clients caught up and live, the producer's own connection also receives; JetStream: ${FAN_SUBS} ordered consumers, a connection each)`);
    }

    // 4. catch-up
    if (PARTS.has('catchup')) {
      header(`4. catch-up of a ${BACKLOG.toLocaleString('en-US')}-op backlog into a fresh node store (ops/s, higher is better)`);
      progress(`4. catch-up: making the node store template...`);
      const home = join(base, 'home');
      await storeTemplate(home);
      const stores = new Stores(base, home);
      const ops = makeOps(BACKLOG);
      progress(`4. catch-up: seeding ${BACKLOG} ops into our relay and JetStream`);
      const seeded = await attempt('seeding our backlog', () => seedOurs(relay, ops));
      const runJs = async <T>(fn: (stream: string) => Promise<T>): Promise<T | null> => {
        if (!n) return null;
        return withJsStream(n, 'catchup', async (stream, subject) => {
          const rate = await attempt('seeding the JetStream backlog', () => seedJs(n, subject, ops));
          out(`  (seeding, ${PAGE}/push x ${WINDOW} in flight: ours ${fmtRate(seeded?.rate ?? null)}, JetStream ${fmtRate(rate)} at ${WINDOW * PAGE} publishes in flight)`);
          return fn(stream);
        });
      };
      type Catch = { wire: number | null; loop: number | null; loopStats: string; client: number | null };
      const oursRes: Catch = { wire: null, loop: null, loopStats: '', client: null };
      const clientRow = target(`catch-up of ${BACKLOG.toLocaleString('en-US')} ops, SyncClient into PGlite`, 'min', CATCHUP_TARGET, 'ops/s');
      if (seeded) {
        progress('  ours: wire only');
        oursRes.wire = await attempt('catch-up ours, wire only', () => oursCatchup(relay, seeded.stream, seeded.token, BACKLOG));
        progress(`  ours wire only: ${fmtRate(oursRes.wire)}`);
        const store = await stores.fresh();
        try {
          const applier = new Applier(store.db, 'bench');
          const t0 = performance.now();
          progress('  ours: applied (the loop)');
          oursRes.loop = await attempt('catch-up ours, applied', () => oursCatchup(relay, seeded.stream, seeded.token, BACKLOG, applier));
          oursRes.loopStats = applier.stats.describe(performance.now() - t0);
          await expectStored(store, BACKLOG, 'ours, applied');
          progress(`  ours applied (loop): ${fmtRate(oursRes.loop)}; ${oursRes.loopStats}`);
        } finally {
          await store.close();
        }
        // The node's target is judged on the real client, several runs, each into a fresh store.
        for (let r = 1; r <= REPEATS; r++) {
          progress(`  ours: applied (SyncClient in a node process of its own), run ${r}`);
          const rate = await attempt(`catch-up ours, SyncClient run ${r}`, () => oursSyncClient(relay, seeded.stream, seeded.token, BACKLOG, stores, `syncclient-${r}`));
          clientRow.runs.push(rate);
          progress(`  ours applied (SyncClient), run ${r}: ${fmtRate(rate)}`);
        }
        const runs = clientRow.runs.filter((x): x is number => x !== null).sort((a, b) => a - b);
        oursRes.client = runs.length > 0 ? runs[Math.floor(runs.length / 2)]! : null;
      }
      const jsRes = await runJs(async (stream) => {
        const r: Catch = { wire: null, loop: null, loopStats: '', client: null };
        progress('  JetStream: wire only');
        r.wire = await attempt('catch-up JetStream, wire only', () => jsCatchup(n as Nats, stream, BACKLOG, 'wire'));
        progress(`  JetStream wire only: ${fmtRate(r.wire)}`);
        const store = await stores.fresh();
        try {
          const applier = new Applier(store.db, 'bench');
          const t0 = performance.now();
          progress('  JetStream: applied');
          r.loop = await attempt('catch-up JetStream, applied', () => jsCatchup(n as Nats, stream, BACKLOG, 'applied', applier));
          r.loopStats = applier.stats.describe(performance.now() - t0);
          await expectStored(store, BACKLOG, 'JetStream, applied');
          progress(`  JetStream applied: ${fmtRate(r.loop)}; ${r.loopStats}`);
        } finally {
          await store.close();
        }
        return r;
      });
      const goal = (x: number | null) => `ours >= ${fmtRate(CATCHUP_TARGET)}: ${verdict(x === null ? null : x >= CATCHUP_TARGET)}`;
      out(figRow('wire only (receive + JSON.parse, pages of 500)', { ours: oursRes.wire, js: jsRes?.wire ?? null }, fmtRate));
      out(figRow('applied: verify + ingestChecked + cursor, tx/page', { ours: oursRes.loop, js: jsRes?.loop ?? null }, fmtRate, goal(oursRes.loop)));
      out(figRow(`applied: SyncClient (ours, median of ${REPEATS}) vs the same loop (JS)`, { ours: oursRes.client, js: jsRes?.loop ?? null }, fmtRate, goal(oursRes.client)));
      if (oursRes.loopStats) out(`  (ours, applied: ${oursRes.loopStats})`);
      if (jsRes?.loopStats) out(`  (JetStream, applied: ${jsRes.loopStats})`);
    }

    // 5. /healthz while nodes catch up
    if (PARTS.has('healthz')) {
      header(`5. /healthz while ${HZ_READERS} nodes catch up on ${HZ_OPS.toLocaleString('en-US')} ops each at once, relay on PGlite, ${REPEATS} runs (lower is better)`);
      progress(`5. healthz: ${HZ_READERS} readers x ${HZ_OPS} ops x ${REPEATS} runs`);
      const row = target(`/healthz during ${HZ_READERS} catch-ups, max`, 'max', HZ_TARGET_MS, 'ms');
      for (let run = 1; run <= REPEATS; run++) {
        const r = await attempt(`healthz during catch-up run ${run}`, () => oursHealthz(relay, HZ_READERS, makeOps(HZ_OPS), run));
        const f = (x: number | null): Figure => ({ ours: x, js: null });
        row.runs.push(r?.lat.max ?? null);
        out(figRow(`run ${run}: p50 (${r?.lat.n ?? 0} polls, every 10 ms)`, f(r?.lat.p50 ?? null), fmtMs));
        out(figRow(`run ${run}: p99`, f(r?.lat.p99 ?? null), fmtMs));
        out(figRow(`run ${run}: max`, f(r?.lat.max ?? null), fmtMs));
        if (r) out(`  (run ${run}: all ${HZ_READERS} caught up in ${fmtMs(r.catchupMs)}: ${fmtRate((HZ_READERS * HZ_OPS * 1000) / r.catchupMs)} ops sent)`);
      }
    }

    // 6. memory per idle connection
    if (PARTS.has('memory')) {
      header(`6. resident memory per idle connection, ${MEM_CONNS} connections held, ${REPEATS} runs (lower is better)`);
      const natsPid = natsServerPid();
      progress(`6. memory: ${MEM_CONNS} idle connections x ${REPEATS} runs (nats-server pid ${natsPid ?? 'not found'})`);
      const row = target('memory per idle connection, ours/nats-server', 'max', 1.0, 'x');
      const fmtKiB = (x: number | null) => (x === null ? 'n/a' : `${(x / 1024).toFixed(1)} KiB`);
      // nats-server (Go) keeps what it freed: a second batch of connections reuses the first one's pages
      // and reads as nearly free. So each run measures the first batch of a nats-server started for it
      // (the shared one only when none can be started, measured once).
      const sharedRef = async () => (n && natsPid !== null ? attempt('memory nats-server', () => natsIdleMemory(n, natsPid, MEM_CONNS)) : null);
      let shared: Promise<number | null> | null = null;
      for (let run = 1; run <= REPEATS; run++) {
        // Ours as the reference is measured: the first batch of a relay started for the run (the main one has
        // freed memory through the earlier parts, which new connections would reuse).
        // Its young generation held at V8's largest (16 MB semi-spaces): V8 grows and shrinks it by up to
        // ~30 MB as it sees fit, which read as -57 to +41 KiB per connection over 500 connections.
        const memRelay = await attempt(`starting a relay for memory run ${run}`, () =>
          startRelayChild({ BENCH_RELAY_DATA: join(base, `mem-relay-${run}`) }, `mem${run}`, ['--min-semi-space-size=16']),
        );
        let ours: number | null = null;
        if (memRelay) {
          try {
            ours = await attempt(`memory ours run ${run}`, () => oursIdleMemory(memRelay, MEM_CONNS, run));
          } finally {
            await memRelay.stop();
          }
        }
        const own = await privateNatsServer();
        let js: number | null;
        if (own) {
          try {
            js = await attempt(`memory nats-server run ${run}`, () => natsIdleMemory(own.nats, own.pid, MEM_CONNS, own.url));
          } finally {
            await own.stop();
          }
        } else js = await (shared ??= sharedRef());
        progress(`  run ${run}: ours ${fmtKiB(ours)}, nats-server ${fmtKiB(js)} (${own ? 'a fresh nats-server, its first batch' : 'the shared nats-server, its first batch'})`);
        // A reading at or below zero is the collector's noise, not a size: that run counts as failed.
        row.runs.push(ours !== null && js !== null && ours > 0 && js > 0 ? ours / js : null);
        out(figRow(`run ${run}: RSS gained per connection`, { ours, js }, fmtKiB));
      }
      out(`  (ours: a ws sync connection after hello and caught_up, on a relay started for the run, RSS after a full GC in it; nats-server: a NATS connection with an ordered JetStream consumer on the stream, on a nats-server started for the run; RSS from /proc)`);
    }

    // 7. the PGlite relay's resident memory: idle, after slow consumers, during catch-ups
    if (PARTS.has('rss')) {
      header(`7. PGlite relay RSS: idle against a bare PGlite open, after ${RSS_SLOW} slow consumers, during catch-ups of ${RSS_READERS} nodes, ${REPEATS} runs (lower is better)`);
      progress(`7. rss: a fresh relay per run; ${RSS_SLOW} slow consumers on ${RSS_SLOW_OPS} ops; ${RSS_READERS} catch-ups of ${RSS_SMALL} then ${RSS_BACKLOG} ops`);
      const fmtMiB = (x: number | null) => (x === null ? 'n/a' : `${(x / MiB).toFixed(0)} MiB`);
      const rowIdle = target('PGlite relay idle RSS / a bare PGlite open', 'max', 1.5, 'x');
      const rowSlow = target(`RSS after ${RSS_SLOW} slow consumers / idle`, 'max', 1.2, 'x');
      const rowFlat = target(`RSS peak, catch-up of ${RSS_BACKLOG} / of ${RSS_SMALL} ops`, 'max', 1.2, 'x');
      for (let run = 1; run <= REPEATS; run++) {
        const bare = await attempt(`bare PGlite open run ${run}`, () => bareOpenRss(join(base, `bare-${run}`)));
        const fresh = await attempt(`starting a fresh relay run ${run}`, () => startRelayChild({ BENCH_RELAY_DATA: join(base, `rss-relay-${run}`) }, `rss${run}`));
        if (!fresh) continue;
        try {
          const gc = childGc(fresh.child);
          const idle = await settledRss(fresh.child.pid!, gc);
          const slowPeak = await attempt(`slow consumers run ${run}`, () => oursSlowConsumers(fresh, RSS_SLOW, makeOps(RSS_SLOW_OPS), run));
          const after = slowPeak === null ? null : await settledRss(fresh.child.pid!, gc);
          const small = await attempt(`catch-up of ${RSS_SMALL} run ${run}`, () => oursCatchupPeak(fresh, RSS_READERS, makeOps(RSS_SMALL), `rss-small${run}`));
          const big = await attempt(`catch-up of ${RSS_BACKLOG} run ${run}`, () => oursCatchupPeak(fresh, RSS_READERS, makeOps(RSS_BACKLOG), `rss-big${run}`));
          const settled = await settledRss(fresh.child.pid!, gc);
          const div = (a: number | null, b: number | null) => (a !== null && b !== null && b > 0 ? a / b : null);
          rowIdle.runs.push(div(idle, bare));
          rowSlow.runs.push(div(after, idle));
          rowFlat.runs.push(div(big, small));
          progress(`  run ${run}: bare ${fmtMiB(bare)}, idle ${fmtMiB(idle)}, slow peak ${fmtMiB(slowPeak)}, after ${fmtMiB(after)}, catch-up peaks ${fmtMiB(small)} / ${fmtMiB(big)}, settled ${fmtMiB(settled)}`);
          out(`  run ${run}: bare PGlite open ${fmtMiB(bare)}; relay idle ${fmtMiB(idle)} (${div(idle, bare)?.toFixed(2) ?? 'n/a'}x)`);
          out(`    ${RSS_SLOW} slow consumers: peak ${fmtMiB(slowPeak)}, after ${fmtMiB(after)} (${div(after, idle)?.toFixed(2) ?? 'n/a'}x idle)`);
          out(`    ${RSS_READERS} catch-ups: peak ${fmtMiB(small)} on ${RSS_SMALL.toLocaleString('en-US')} ops, ${fmtMiB(big)} on ${RSS_BACKLOG.toLocaleString('en-US')} (${div(big, small)?.toFixed(2) ?? 'n/a'}x); settled after ${fmtMiB(settled)}`);
        } finally {
          await fresh.stop();
        }
      }
      out(`  (RSS from /proc after a second's pause and full GCs; the bare reference opens PGlite with its defaults on a fresh folder, as the relay's first start does)`);
    }

    out('');
    out('Targets (the median of the runs; a miss no larger than half the runs\' range is within noise)');
    const table = targetsTable(targets);
    out(table.text);
    if (table.failed) process.exitCode = 1;
  } finally {
    for (const fn of cleanup.reverse()) await fn().catch((err: unknown) => progress(`cleanup: ${String(err)}`));
    rmSync(base, { recursive: true, force: true });
    console.log(lines.join('\n'));
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
