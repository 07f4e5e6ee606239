// The join rows of `npm run bench:scale`: a new node binding a workspace to a stream that already holds
// many ops of other workspaces, through a relay of its own process (`nxs relay serve`, PGlite) and the
// node's real sync client on a real store (every op verified on the node's verification threads).
//   time to usable:  from the client's start until it is caught up with the live feed and holds every op of
//                    its own workspace and the one it trusts (`nxs sync status`: caught_up), then a new
//                    thread from the trusted workspace received and answered, the answer acknowledged;
//   full history:    from the start until every op before the join is here (reported, not judged);
//   in order:        the same stream taken the old way, the whole backlog before anything (reported; skipped
//                    with BENCH_SCALE_JOIN_ORDER=0).
// The stream: threads (an opening and its commission message) of 50 unrelated workspaces, 1% of them by the
// trusted workspace and 0.1% by the joining workspace itself (written from another machine), shuffled
// through. Knobs: BENCH_SCALE_OPS (100,000 ops before the join; 1,000,000 for the full-size row),
// BENCH_SCALE_JOIN_REPEATS (1).
import { generateKeyPairSync } from 'node:crypto';
import { count, countDistinct, eq } from 'drizzle-orm';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { opSigner, signOp, workspaceOfKey, type OpSigner } from '../crypto/index.js';
import { silentLogger } from '../infra/index.js';
import { newMessageId, newOpId, newThreadId } from '../protocol/ids.js';
import type { Op } from '../protocol/ops.js';
import { SYNC_PROTOCOL, syncUrl } from '../protocol/sync.js';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { createStore, openStore, tables, type Db } from '../node-agent/adapters/store/index.js';
import { SyncClient } from '../node-agent/host/sync/index.js';
import { appendOps } from '../node-agent/kernel/index.js';
import { packageRoot } from '../node-agent/paths.js';
import { openPgliteStore } from '../server/index.js';
import { hashToken, newToken } from '../server/tokens.js';
import type { TargetRow } from './targets.js';

function num(name: string, dflt: number): number {
  const v = Number(process.env[name] ?? '');
  return Number.isFinite(v) && v > 0 ? v : dflt;
}
const OPS = Math.round(num('BENCH_SCALE_OPS', 100_000));
const REPEATS = Math.round(num('BENCH_SCALE_JOIN_REPEATS', 1));
const IN_ORDER = process.env['BENCH_SCALE_JOIN_ORDER'] !== '0';
/** The target: a joining node usable within this long. */
const USABLE_MS = 10_000;

const progress = (msg: string) => process.stderr.write(`scale-bench: ${msg}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A workspace of the bench: its key, its id and its clock. */
class Writer {
  readonly signer: OpSigner = opSigner(generateKeyPairSync('ed25519').privateKey);
  readonly workspace = workspaceOfKey(this.signer.key)!;
  clock = 0;

  /** A thread opened to a person and its commission message: two signed texts. */
  thread(n: number): { thread: string; ops: Array<{ id: string; text: string; workspace: string }> } {
    const thread = newThreadId();
    const at = { operation: thread, thread, session: null };
    const opener = { handle: 'alice', session: null };
    const bodies = [
      { kind: 'thread.opened', body: { parent: null, subject: `thread ${n}`, opener, target: { kind: 'person', handle: 'bob' } } },
      { kind: 'message.posted', body: { message: newMessageId(), author: opener, text: `please look at thread ${n}: a paragraph of what is wanted, as people write them`, effect: 'commission', substituted: false, refs: { working_copy: null } } },
    ];
    return {
      thread,
      ops: bodies.map((b) => {
        const op = { id: newOpId(), workspace: this.workspace, origin: `bench-${this.workspace.slice(0, 6)}`, lamport: ++this.clock, ts: new Date().toISOString(), ...at, ...b, key: this.signer.key } as unknown as Op;
        return { id: op.id, text: signOp(op, this.signer).raw, workspace: this.workspace };
      }),
    };
  }
}

type Seeded = { dataDir: string; token: string; trusted: Writer; joining: Writer };

/** A relay data folder whose stream `join` holds OPS ops, appended through the relay's own storage. */
async function seed(): Promise<Seeded> {
  const dataDir = mkdtempSync(join(tmpdir(), 'nexus-bench-join-relay-'));
  const store = await openPgliteStore({ dataDir, log: silentLogger });
  const token = newToken();
  await store.createStream('join', hashToken(token));
  const unrelated = Array.from({ length: 50 }, () => new Writer());
  const trusted = new Writer();
  const joining = new Writer();
  const started = performance.now();
  let batch: Array<{ id: string; text: string; workspace: string }> = [];
  for (let n = 0, ops = 0; ops < OPS; n++) {
    const r = n % 1000;
    const who = r < 10 ? trusted : r === 500 ? joining : unrelated[n % unrelated.length]!;
    const t = who.thread(n);
    batch.push(...t.ops);
    ops += t.ops.length;
    if (batch.length >= 2_000 || ops >= OPS) {
      await store.append('join', batch);
      batch = [];
    }
    if (ops % 100_000 < 2) progress(`join: ${ops} ops in the stream`);
  }
  await store.close();
  progress(`join: stream of ${OPS} ops seeded in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return { dataDir, token, trusted, joining };
}

/** `nxs relay serve` on the folder, in a process of its own; resolves with its URL. */
async function startRelay(dataDir: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--single-threaded-gc', join(packageRoot(), 'bin', 'nxs'), 'relay', 'serve', '--port', '0', '--data-dir', dataDir, '--json'], {
    env: { ...process.env, NEXUS_RELAY_TOKEN: newToken() },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve((JSON.parse(out.slice(0, nl)) as { url: string }).url);
    });
    child.once('exit', (code) => reject(new Error(`the relay exited (${code}) before listening: ${err}`)));
  });
  return { url, child };
}

/** A plain sync socket that pushes texts for the trusted workspace (another machine of it). */
async function pusher(url: string, token: string): Promise<{ push: (texts: string[]) => void; close: () => void }> {
  const ws = new WebSocket(syncUrl(url));
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject);
    ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', protocol: SYNC_PROTOCOL, stream: 'join', token, node: 'bench-trusted', since: 0, join: 1 })));
    ws.on('message', (d: Buffer) => {
      const f = JSON.parse(d.toString()) as { type: string; t?: number };
      if (f.type === 'welcome') resolve();
      if (f.type === 'ping') ws.send(JSON.stringify({ type: 'pong', t: f.t }));
    });
  });
  let id = 1;
  return { push: (texts) => ws.send(`{"type":"push","id":${id++},"ops":[${texts.join(',')}]}`), close: () => ws.close() };
}

type JoinRun = { usableMs: number | null; answeredMs: number | null; historyMs: number | null; stored: number; distinct: number; expected: number };

/**
 * One joining node: a fresh store, the real sync client, timed from its start. `joinMinOps` Infinity
 * takes the backlog in order, as before joins existed.
 */
async function joinOnce(s: Seeded, url: string, joinMinOps: number | undefined): Promise<JoinRun> {
  const home = mkdtempSync(join(tmpdir(), 'nexus-bench-join-node-'));
  const dir = join(home, 'store');
  await createStore(dir, home);
  const store = await openStore(dir);
  let queue: Promise<unknown> = Promise.resolve();
  const run = <T>(fn: (db: Db) => Promise<T>): Promise<T> => {
    const next = queue.then(() => fn(store.db));
    queue = next.catch(() => undefined);
    return next;
  };
  const client = new SyncClient({
    binding: { relay: url, stream: 'join', token: s.token, bound_at: new Date().toISOString() },
    origin: 'bench-joining-node',
    workspace: s.joining.workspace,
    trusted: () => [s.trusted.workspace],
    ...(joinMinOps === undefined ? {} : { joinMinOps }),
    projections: PROJECTIONS,
    run,
    log: silentLogger,
  });
  const peer = await pusher(url, s.token);
  const t0 = performance.now();
  const out: JoinRun = { usableMs: null, answeredMs: null, historyMs: null, stored: 0, distinct: 0, expected: OPS + 3 };
  try {
    await client.start();
    const deadline = t0 + 30 * 60_000;
    for (;;) {
      const st = await client.status();
      if (st.caught_up && (st.history === null || st.history.priority_complete) && st.cursor >= OPS) break;
      if (performance.now() > deadline) throw new Error('the joining node was not usable within 30 minutes');
      await sleep(20);
    }
    out.usableMs = performance.now() - t0;
    // A new thread from the trusted workspace, live: received and answered, the answer acknowledged.
    const t = s.trusted.thread(OPS);
    peer.push(t.ops.map((o) => o.text));
    const asked = t.ops[1]!.id;
    for (;;) {
      const got = await run((db) => db.select({ id: tables.ops.id }).from(tables.ops).where(eq(tables.ops.id, asked)));
      if (got.length > 0) break;
      await sleep(10);
    }
    const received = performance.now() - t0;
    const author = { workspace: s.joining.workspace, origin: 'bench-joining-node', now: () => new Date(), signer: s.joining.signer, projections: PROJECTIONS };
    await run((db) =>
      db.transaction((tx) =>
        appendOps(tx, author, [
          { operation: t.thread, thread: t.thread, session: null, kind: 'message.posted', body: { message: newMessageId(), author: { handle: 'bob', session: null }, text: 'done', effect: 'answer', substituted: false, refs: { working_copy: null } } },
        ]),
      ),
    );
    const appended = performance.now() - t0;
    client.kick();
    while ((await client.status()).outbox > 0) await sleep(10);
    out.answeredMs = performance.now() - t0;
    progress(
      `join${joinMinOps === Infinity ? ' (in order)' : ''}: usable at ${(out.usableMs / 1000).toFixed(2)} s; a trusted thread received at ${(received / 1000).toFixed(2)} s, ` +
        `answered at ${(appended / 1000).toFixed(2)} s, the answer acknowledged at ${(out.answeredMs / 1000).toFixed(2)} s`,
    );
    for (;;) {
      const st = await client.status();
      if (st.history === null || st.history.complete) break;
      if (performance.now() > deadline) throw new Error('the history did not complete within 30 minutes');
      await sleep(100);
    }
    out.historyMs = performance.now() - t0;
    // Every op of the stream here once: the OPS before, the trusted thread and the answer.
    await sleep(500);
    const [row] = await run((db) => db.select({ n: count(), d: countDistinct(tables.ops.id) }).from(tables.ops));
    out.stored = Number(row?.n ?? 0);
    out.distinct = Number(row?.d ?? 0);
    progress(`join${joinMinOps === Infinity ? ' (in order)' : ''}: every op here at ${(out.historyMs / 1000).toFixed(1)} s; ${out.stored} stored, ${out.distinct} distinct, ${out.expected} expected`);
  } finally {
    peer.close();
    await client.stop();
    await store.close();
    rmSync(home, { recursive: true, force: true });
  }
  return out;
}

/** The join rows: time to usable against its target; the full history and the old way reported. */
export async function joinRows(): Promise<{ rows: TargetRow[]; notes: string[] }> {
  const usable: TargetRow = { label: `join: usable, trusted thread answered (${OPS.toLocaleString('en-US')} ops)`, kind: 'max', target: USABLE_MS, unit: 'ms', runs: [] };
  const notes: string[] = [];
  for (let r = 0; r < REPEATS; r++) {
    const seeded = await seed();
    const relay = await startRelay(seeded.dataDir);
    try {
      const joined = await joinOnce(seeded, relay.url, undefined);
      const exact = joined.stored === joined.distinct && joined.distinct === joined.expected;
      usable.runs.push(exact ? joined.answeredMs : null);
      let line = `join run ${r + 1}: ${OPS} ops before the join; usable ${fmtS(joined.usableMs)}, trusted thread answered ${fmtS(joined.answeredMs)}, full history ${fmtS(joined.historyMs)}; ${joined.stored} ops stored, ${exact ? 'each once' : `NOT each once (${joined.distinct} distinct of ${joined.expected})`}`;
      if (IN_ORDER) {
        // The same stream taken the old way: a second fresh node, the whole backlog before anything.
        const inOrder = await joinOnce(seeded, relay.url, Infinity);
        line += `; in order (before joins): usable ${fmtS(inOrder.usableMs)}`;
      }
      notes.push(line);
    } finally {
      relay.child.kill('SIGTERM');
      await new Promise((resolve) => relay.child.once('exit', resolve));
      rmSync(seeded.dataDir, { recursive: true, force: true });
    }
  }
  return { rows: [usable], notes };
}

function fmtS(ms: number | null): string {
  return ms === null ? 'n/a' : `${(ms / 1000).toFixed(2)} s`;
}
