// Sync end to end: real nodes (`nxs node start`, each with its own NEXUS_HOME and store) on a real relay
// (`nxs relay serve` as a child process on a loopback port), killed, cut and restarted on purpose.
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { and, count, countDistinct, eq, gt } from 'drizzle-orm';
import { WebSocket } from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { opSigner, signOp, workspaceOfKey } from '../../crypto/index.js';
import { newMessageId, newOpId, newThreadId } from '../../protocol/ids.js';
import type { Op } from '../../protocol/ops.js';
import { SYNC_PROTOCOL, syncUrl } from '../../protocol/sync.js';
import { nodeProcessAlive } from '../../node-agent/host/node/index.js';
import { openStore, tables } from '../../node-agent/adapters/store/index.js';
import { openPgliteStore, silentLog } from '../../server/index.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import { RelayProcess, relayFolders } from '../helpers/relay.js';
import { sleep, until } from '../helpers/until.js';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';

// ---- raw protocol clients (what a node says, without a node)

type StreamRow = { seq: number; id: string };

/**
 * Opens a sync socket and says hello. `onOps` sees every op the relay sends; the promise of
 * `caughtUp` resolves at caught_up, `closed` when the socket goes (for any reason).
 */
function peer(url: string, stream: string, token: string, onOps: (rows: StreamRow[]) => void = () => undefined) {
  const ws = new WebSocket(syncUrl(url), { maxPayload: 64 * 1024 * 1024 });
  let head = -1;
  const acks = new Map<number, () => void>();
  const welcome = new Promise<number>((resolve, reject) => {
    ws.once('error', reject);
    ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', protocol: SYNC_PROTOCOL, stream, token, node: 'test-peer', since: 0 })));
    ws.on('message', (data: Buffer) => {
      const f = JSON.parse(data.toString()) as { type: string; [k: string]: any };
      if (f.type === 'welcome') resolve((head = f['head'] as number));
      else if (f.type === 'ping') ws.send(JSON.stringify({ type: 'pong', t: f['t'] }));
      else if (f.type === 'ops') onOps((f['ops'] as Array<{ seq: number; op: { id: string } }>).map((o) => ({ seq: o.seq, id: o.op.id })));
      else if (f.type === 'ack') acks.get(f['id'] as number)?.();
      else if (f.type === 'caught_up') caughtUpResolve();
      else if (f.type === 'error') reject(new Error(`relay refused: ${JSON.stringify(f)}`));
    });
  });
  let caughtUpResolve!: () => void;
  const caughtUp = new Promise<void>((r) => (caughtUpResolve = r));
  const closed = new Promise<void>((r) => ws.on('close', () => r()));
  ws.on('error', () => undefined);
  return {
    ws,
    welcome,
    caughtUp,
    closed,
    head: () => head,
    /** Pushes op texts (sent byte for byte) in batches of `size`, `window` batches in flight; resolves when all are acked. */
    async push(ops: string[], size = 500, window = 4): Promise<void> {
      await welcome;
      let next = 0;
      let id = 0;
      const inFlight = new Set<Promise<void>>();
      while (next < ops.length || inFlight.size > 0) {
        while (next < ops.length && inFlight.size < window) {
          const batch = ops.slice(next, (next += size));
          const bid = ++id;
          const acked: Promise<void> = new Promise<void>((r) => acks.set(bid, r)).then(() => void inFlight.delete(acked));
          inFlight.add(acked);
          ws.send(`{"type":"push","id":${bid},"ops":[${batch.join(',')}]}`);
        }
        await Promise.race([...inFlight, closed.then(() => Promise.reject(new Error('closed while pushing')))]);
      }
    },
    close: () => ws.close(),
  };
}

/** The whole stream read over the protocol from seq 0: (seq, op id) in the order sent. */
async function readStream(url: string, stream: string, token: string): Promise<StreamRow[]> {
  const rows: StreamRow[] = [];
  const p = peer(url, stream, token, (r) => rows.push(...r));
  await p.welcome;
  await p.caughtUp;
  p.close();
  return rows;
}

/** The stream's head now. */
async function relayHead(url: string, stream: string, token: string): Promise<number> {
  const p = peer(url, stream, token);
  const head = await p.welcome;
  p.ws.terminate();
  return head;
}

/** Seqs are exactly 1..n in order, and no op id appears twice. */
function expectGaplessAndUnique(rows: StreamRow[]): void {
  expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: rows.length }, (_, i) => i + 1));
  expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
}

// ---- nodes

type SyncStatus = {
  connected: boolean;
  cursor: number;
  head: number;
  lag: number;
  outbox: number;
  in_flight: number;
  received: number;
  rejected: Record<string, number>;
  pending?: number;
  last_error: string | null;
};

async function syncStatus(w: TestWorkspace): Promise<SyncStatus> {
  const r = await w.nxs(['sync', 'status', '--json']);
  if (r.code !== 0) throw new Error(`nxs sync status failed: ${r.stdout}${r.stderr}`);
  return r.json as SyncStatus;
}

// Every node a case starts, listed before it starts, so a case that throws mid-way still stops them all.
const started: TestWorkspace[] = [];

/**
 * A workspace with a node of its own (a real `nxs node run` process), bound to `stream` at `relayUrl`.
 * Commands reach it over its socket from this process: these cases are about sync, not the CLI's process.
 */
async function boundNode(relayUrl: string, stream: string, token: string): Promise<TestWorkspace> {
  const w = await makeWorkspace({ git: false, real: true, cliInProcess: true });
  started.push(w);
  await w.startNode();
  const r = await w.nxs(['sync', 'bind', relayUrl, '--stream', stream, '--token', token, '--json']);
  if (r.code !== 0) throw new Error(`nxs sync bind failed: ${r.stdout}${r.stderr}`);
  return w;
}

/** `n` sends to person handles from `w`, all fired at once; every one must post. */
async function sendMany(w: TestWorkspace, n: number, tag: string): Promise<void> {
  const results = await Promise.all(
    Array.from({ length: n }, (_, i) => w.nxc(['send', `@someone${i % 3}`, '--subject', `${tag} ${i}`, `message ${i} from ${tag}`, '--json'])),
  );
  for (const r of results) expect(r.code, r.stderr + r.stdout).toBe(0);
}

/**
 * Waits until every node has pushed everything (outbox 0, nothing in flight) and holds the whole
 * stream (cursor == the relay's head). Returns the head.
 */
async function converged(nodes: TestWorkspace[], relayUrl: string, stream: string, token: string, timeoutMs = 60_000): Promise<number> {
  let last: unknown;
  try {
    return await until(
      'convergence',
      async () => {
        const statuses = await Promise.all(nodes.map(syncStatus));
        last = statuses;
        if (!statuses.every((s) => s.connected && s.outbox === 0 && s.in_flight === 0)) return undefined;
        // Nothing is left to push, so the head read now is final.
        const head = await relayHead(relayUrl, stream, token);
        last = { statuses, head };
        return statuses.every((s) => s.cursor === head && s.lag === 0) ? head : undefined;
      },
      timeoutMs,
      200,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last seen: ${JSON.stringify(last)}`);
  }
}

/**
 * `nxc status --all --json` operations, sorted by operation id, less what each node says relative to itself:
 * `untrusted` (whether the workspace that opened it is one this node trusts).
 */
async function operations(w: TestWorkspace): Promise<Array<{ operation: string }>> {
  const s = (await w.status(true)) as { operations: Array<{ operation: string; untrusted?: boolean; threads: Array<{ untrusted?: boolean }> }> };
  const shared = s.operations.map(({ untrusted: _op, threads, ...op }) => ({ ...op, threads: threads.map(({ untrusted: _row, ...row }) => row) }));
  return shared.sort((a, b) => (a.operation < b.operation ? -1 : a.operation > b.operation ? 1 : 0));
}

type Stored = {
  rows: number;
  distinct: number;
  ids: Set<string>;
  /** The sync position the node left in its store (null when it never wrote one). */
  position: { cursor: number; acked: number } | null;
  /** Ops this node wrote that its stored position does not count as acknowledged. */
  unacked: number;
};

/** Stops the node and reads its ops and sync position straight from the workspace's store. */
async function storedOps(w: TestWorkspace): Promise<Stored> {
  await w.stopNode();
  const origin = readFileSync(join(w.home!, 'origin'), 'utf8').trim();
  const store = await openStore(join(w.root, '.nxs', 'store'));
  try {
    const [c] = await store.db.select({ rows: count(), distinct: countDistinct(tables.ops.id) }).from(tables.ops);
    const ids = new Set((await store.db.select({ id: tables.ops.id }).from(tables.ops)).map((r) => r.id));
    const states = await store.db.select().from(tables.syncState);
    const position = (states.find((r) => r.key.startsWith('position '))?.value ?? null) as Stored['position'];
    const [u] = await store.db
      .select({ n: count() })
      .from(tables.ops)
      .where(and(eq(tables.ops.origin, origin), gt(tables.ops.localSeq, position?.acked ?? 0)));
    return { rows: Number(c!.rows), distinct: Number(c!.distinct), ids, position, unacked: Number(u!.n) };
  } finally {
    await store.close();
  }
}

/** A node stopped after convergence left a position that re-sends and re-reads nothing on its next start. */
function expectPositionAtHead(s: Stored, head: number): void {
  expect(s.position?.cursor).toBe(head);
  expect(s.unacked).toBe(0);
}

function nodePid(w: TestWorkspace): number {
  return (JSON.parse(readFileSync(join(w.home!, 'node', 'node.json'), 'utf8')) as { pid: number }).pid;
}

function nodeLog(w: TestWorkspace): string {
  const file = join(w.home!, 'node', 'node.log');
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}

// ---- the suite

let folders: Awaited<ReturnType<typeof relayFolders>>;
/** The relay most cases share, each on a stream of its own; a case that kills its relay starts its own. */
let shared: RelayProcess;
const relays: RelayProcess[] = [];

/** A relay process on a fresh copy of the migrated folder. */
async function newRelay(): Promise<RelayProcess> {
  const relay = new RelayProcess(folders.fresh());
  relays.push(relay);
  await relay.start();
  return relay;
}

async function nodesOn(relayUrl: string, stream: string, token: string, n: number): Promise<TestWorkspace[]> {
  return Promise.all(Array.from({ length: n }, () => boundNode(relayUrl, stream, token)));
}

beforeAll(async () => {
  folders = await relayFolders();
  shared = await newRelay();
});

// Each case's nodes go with it, whatever state it threw in.
afterEach(async () => {
  const nodes = started.splice(0);
  await Promise.all(nodes.map((w) => w.cleanup().catch(() => undefined)));
});

afterAll(async () => {
  await Promise.all(started.map((w) => w.cleanup().catch(() => undefined)));
  await Promise.all(relays.map((r) => r.stop().catch(() => undefined)));
  folders?.cleanup();
});

describe('sync between real nodes through a real relay', () => {
  it('three nodes sending at once on one stream converge to identical operations', async () => {
    const relay = shared;
    const token = await relay.createStream('three');
    const nodes = await nodesOn(relay.url, 'three', token, 3);

    await Promise.all(nodes.map((w, i) => sendMany(w, 10, `node${i}`)));

    const head = await converged(nodes, relay.url, 'three', token);
    expect(head).toBe(3 * 10 * 2); // each send to a person: thread.opened + message.posted
    // The progress view follows the node until it has caught up, then reports where it stands.
    const watched = await nodes[0]!.nxs(['sync', 'status', '--until-caught-up', '--json']);
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.json).toMatchObject({ caught_up: true, lag: 0, cursor: head });
    expect(watched.stderr).toMatch(new RegExp(`sync: ${head} of ${head} ops \\(100%\\)`));
    const [a, b, c] = await Promise.all(nodes.map(operations));
    expect(a).toHaveLength(30);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    const stream = await readStream(relay.url, 'three', token);
    expectGaplessAndUnique(stream);
    for (const stored of await Promise.all(nodes.map(storedOps))) {
      expect(stored.ids).toEqual(new Set(stream.map((r) => r.id)));
      expectPositionAtHead(stored, head);
    }
  });

  it('loses and doubles nothing when the relay is SIGKILLed and restarted while nodes push', async () => {
    const relay = await newRelay();
    const token = await relay.createStream('restart');
    const nodes = await nodesOn(relay.url, 'restart', token, 2);

    // An observer holds every op the relay committed and sent out before it died.
    const observed: StreamRow[] = [];
    const observer = peer(relay.url, 'restart', token, (rows) => observed.push(...rows));
    await observer.welcome;

    let sends = 0;
    let stop = false;
    const pushers = nodes.map(async (w, i) => {
      for (let round = 0; !stop; round++) {
        await sendMany(w, 3, `n${i}r${round}`);
        sends += 3;
      }
    });

    let beforeKill: StreamRow[];
    try {
      await until('ops on the stream before the kill', async () => (observed.length >= 24 ? true : undefined));
      await relay.stop('SIGKILL');
      await observer.closed;
      beforeKill = [...observed];
      const sendsAtKill = sends;
      // Nodes keep writing while the relay is gone, then it comes back on the same port and folder.
      await until('more sends while the relay is down', async () => (sends >= sendsAtKill + 12 ? true : undefined));
      await relay.start();
      const sendsAtRestart = sends;
      await until('sends after the restart', async () => (sends >= sendsAtRestart + 12 ? true : undefined));
    } finally {
      // The senders stop however the above ended, before the nodes they send to are stopped.
      stop = true;
      await Promise.allSettled(pushers);
    }
    await Promise.all(pushers);

    const head = await converged(nodes, relay.url, 'restart', token, 90_000);
    expect(head).toBe(sends * 2);
    const [a, b] = await Promise.all(nodes.map(operations));
    expect(a).toHaveLength(sends);
    expect(b).toEqual(a);

    // Read the relay's storage itself once it has stopped.
    await relay.stop();
    const store = await openPgliteStore({ dataDir: relay.dir, log: silentLog });
    try {
      expect((await store.getStream('restart'))!.head).toBe(head);
      const rows = (await store.read('restart', 0, 1_000_000)).map((r) => ({ seq: r.seq, id: (JSON.parse(r.op) as { id: string }).id }));
      expect(rows).toHaveLength(head);
      expectGaplessAndUnique(rows);
      // Everything committed before the kill survived it, at the seq it was given.
      const bySeq = new Map(rows.map((r) => [r.seq, r.id]));
      expect(beforeKill.length).toBeGreaterThanOrEqual(24);
      for (const r of beforeKill) expect(bySeq.get(r.seq)).toBe(r.id);
    } finally {
      await store.close();
    }
    const [sa, sb] = await Promise.all([storedOps(nodes[0]!), storedOps(nodes[1]!)]);
    expect(sa.ids).toEqual(sb.ids);
    expect(sa.rows).toBe(head);
    expectPositionAtHead(sa, head);
    expectPositionAtHead(sb, head);
  });

  it('a node SIGKILLed mid catch-up resumes from its cursor and ends holding the stream once', async () => {
    const relay = shared;
    const token = await relay.createStream('backlog');
    // 3,000 valid ops of another workspace (six pages), signed by its genesis key: 30 operations of
    // one thread each, opened then talked in.
    const signer = opSigner(generateKeyPairSync('ed25519').privateKey);
    const other = workspaceOfKey(signer.key)!;
    const ops: string[] = [];
    let lamport = 0;
    const add = (op: Record<string, unknown>) => ops.push(signOp({ ...op, key: signer.key } as unknown as Op, signer).raw);
    for (let t = 0; t < 30; t++) {
      const thread = newThreadId();
      const base = { workspace: other, origin: 'backlog-node', ts: new Date().toISOString() };
      const scope = { operation: thread, thread, session: null };
      add({ id: newOpId(), ...base, lamport: ++lamport, kind: 'thread.opened', ...scope, body: { parent: null, subject: `backlog ${t}`, opener: { handle: 'carol', session: null }, target: { kind: 'person', handle: 'dave' } } });
      for (let m = 0; m < 99; m++) {
        const body = { message: newMessageId(), author: { handle: 'carol', session: null }, text: `backlog ${t}.${m}`, effect: m === 0 ? 'commission' : 'none', substituted: false, refs: { working_copy: null } };
        add({ id: newOpId(), ...base, lamport: ++lamport, kind: 'message.posted', ...scope, body });
      }
    }
    const pusher = peer(relay.url, 'backlog', token);
    await pusher.push(ops);
    pusher.ws.terminate();
    const head = await relayHead(relay.url, 'backlog', token);
    expect(head).toBe(3_000);

    // The node reads the backlog through a fault proxy that lets only a third of its bytes through (two pages),
    // so the kill lands mid-way whatever the machine's speed: the node has stored pages of the
    // backlog, and the rest has not reached it.
    const proxy = await startFaultProxy({ port: relay.port });
    try {
      proxy.pauseAfter(Math.floor(ops.reduce((n, o) => n + o.length, 0) / 3));
      const w = (await nodesOn(proxy.url, 'backlog', token, 1))[0]!;
      await until('the node to store backlog pages', async () => ((await syncStatus(w)).cursor > 0 ? true : undefined), 60_000, 20);
      const cursorAtKill = (await syncStatus(w)).cursor;
      const pid = nodePid(w);
      process.kill(pid, 'SIGKILL');
      await until('the killed node to be gone', async () => (nodeProcessAlive(pid) ? undefined : true), 10_000, 20);
      expect(cursorAtKill).toBeGreaterThan(0);
      expect(cursorAtKill).toBeLessThan(head);
      proxy.resume();

      const restarted = await w.nxs(['node', 'start', '--json']);
      expect(restarted.code, restarted.stdout + restarted.stderr + nodeLog(w).slice(-3000)).toBe(0);
      const first = await syncStatus(w);
      expect(first.cursor).toBeGreaterThanOrEqual(cursorAtKill);

      await converged([w], proxy.url, 'backlog', token, 90_000);
      const done = await syncStatus(w);
      expect(done.cursor).toBe(head);
      expect(done.rejected).toEqual({}); // every backlog op was valid and correctly signed
      expect(done.pending ?? 0).toBe(0);
      // The kill really came mid catch-up (the restarted node still had ops to take in), and this run
      // of the client took in only what was missing, not the stream from 0.
      expect(done.received).toBeGreaterThan(0);
      expect(done.received).toBeLessThanOrEqual(head - cursorAtKill);

      const stream = await readStream(relay.url, 'backlog', token);
      expectGaplessAndUnique(stream);
      const stored = await storedOps(w);
      expect(stored.rows).toBe(head);
      expect(stored.distinct).toBe(head);
      expect(stored.ids).toEqual(new Set(stream.map((r) => r.id)));
      expectPositionAtHead(stored, head);
    } finally {
      await proxy.close();
    }
  });

  it('a connection cut again and again by a fault proxy heals with nothing lost or doubled', async () => {
    const relay = shared;
    const token = await relay.createStream('faults');
    const proxy = await startFaultProxy({ port: relay.port });
    try {
      const [direct, proxied] = await Promise.all([boundNode(relay.url, 'faults', token), boundNode(proxy.url, 'faults', token)]);
      await until('the proxied node connected', async () => ((await syncStatus(proxied)).connected ? true : undefined));

      // Rounds of concurrent sends from both sides; the proxied connection is cut at random moments
      // throughout each round, while commands queue up in its node and pushes and live ops are in flight.
      const rounds = 4;
      let cuts = 0;
      for (let round = 0; round < rounds; round++) {
        let sent = false;
        const sending = Promise.all([sendMany(direct, 5, `direct r${round}`), sendMany(proxied, 5, `proxied r${round}`)]).finally(() => (sent = true));
        // Every round cuts at least once, as soon as there is a connection: on a quick machine a round's
        // sends could end before the first random moment came, or while the node was still redialling.
        cuts += await until('a proxied connection to cut', async () => proxy.cut() || undefined, 60_000, 20);
        while (!sent) {
          await sleep(150 + Math.random() * 300);
          cuts += proxy.cut();
        }
        await sending;
      }
      const sends = rounds * 10;

      const head = await converged([direct, proxied], relay.url, 'faults', token);
      expect(cuts).toBeGreaterThanOrEqual(rounds); // it really was cut, again and again...
      expect(proxy.accepted()).toBeGreaterThan(cuts); // ...and came back each time
      expect(head).toBe(sends * 2);
      const stream = await readStream(relay.url, 'faults', token);
      expectGaplessAndUnique(stream);
      const [a, b] = await Promise.all([operations(direct), operations(proxied)]);
      expect(a).toHaveLength(sends);
      expect(b).toEqual(a);
      const [sa, sb] = await Promise.all([storedOps(direct), storedOps(proxied)]);
      expect(sa.rows).toBe(head);
      expect(sb.rows).toBe(head);
      expect(sb.ids).toEqual(sa.ids);
      expect(sa.ids).toEqual(new Set(stream.map((r) => r.id)));
      expectPositionAtHead(sa, head);
      expectPositionAtHead(sb, head);
    } finally {
      await proxy.close();
    }
  });
});
