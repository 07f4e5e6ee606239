// Joining a long stream: a new node takes the live feed from the head at once, the ops of its own
// workspace and the ones it trusts first, and the rest of the history in the background, with a
// persisted mark so a restart resumes. Real SyncClients on real PGlite stores against a real relay on a
// loopback port; the relay's history gate holds the background pass, so nothing here depends on timing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOps } from '../crypto/index.js';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { inertCounts } from '../node-agent/capabilities/threads/index.js';
import { tables, type Db, type Store } from '../node-agent/adapters/store/index.js';
import { SyncClient, type SyncStatus } from '../node-agent/host/sync/client.js';
import { positionKey, readPosition } from '../node-agent/host/sync/state.js';
import { appendOps, wireTextOf } from '../node-agent/kernel/index.js';
import { newMessageId, newThreadId } from '../protocol/ids.js';
import { SYNC_PROTOCOL, syncUrl } from '../protocol/sync.js';
import { createLogger, silentLog, startRelay, type HistoryRead, type Relay } from '../server/index.js';
import { Forger, rawPeer } from './helpers/forge.js';
import { createStream, OPERATOR, relayFolders } from './helpers/relay.js';
import { useFreshStores } from './helpers/stores.js';
import { until } from './helpers/until.js';
import WebSocket from 'ws';

const freshStore = useFreshStores('sync-join');
const clients: SyncClient[] = [];
afterAll(async () => {
  for (const c of clients) await c.stop().catch(() => undefined);
});

/** Holds the relay's unfiltered history reads (the background pass) while closed; records every read. */
class Gate {
  readonly reads: HistoryRead[] = [];
  private open: (() => void) | null = null;
  private opened: Promise<void> = Promise.resolve();
  /** Unfiltered reads let through before the gate holds them. */
  private allowance = Infinity;

  close(allowance = 0): void {
    this.allowance = allowance;
    this.opened = new Promise((resolve) => (this.open = resolve));
  }

  release(): void {
    this.allowance = Infinity;
    this.open?.();
  }

  hook = async (read: HistoryRead): Promise<void> => {
    this.reads.push(read);
    if (read.workspaces !== null) return;
    if (this.allowance > 0) {
      this.allowance -= 1;
      return;
    }
    await this.opened;
  };
}

/** One workspace's side of sync on a node: its store, its identity, the real client. */
class Joiner {
  readonly log: string[] = [];
  readonly who = new Forger();
  client: SyncClient | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  constructor(
    readonly store: Store,
    readonly origin: string,
    private readonly trusted: string[],
  ) {}

  run = <T,>(fn: (db: Db) => Promise<T>): Promise<T> => {
    const next = this.queue.then(() => fn(this.store.db));
    this.queue = next.catch(() => undefined);
    return next;
  };

  async start(relay: string, stream: string, token: string, joinMinOps = 100): Promise<void> {
    this.client = new SyncClient({
      binding: { relay, stream, token, bound_at: new Date().toISOString() },
      origin: this.origin,
      workspace: this.who.workspace,
      trusted: () => this.trusted,
      joinMinOps,
      projections: PROJECTIONS,
      run: this.run,
      log: createLogger({ component: 'sync', sink: (line) => this.log.push(line) }),
    });
    clients.push(this.client);
    await this.client.start();
  }

  async stop(): Promise<void> {
    await this.client?.stop();
    this.client = null;
  }

  status(): Promise<SyncStatus> {
    return this.client!.status();
  }

  /** Answers in thread `thread` of operation `operation` as this workspace, as a command would. */
  async answer(operation: string, thread: string): Promise<string> {
    const author = { workspace: this.who.workspace, origin: this.origin, now: () => new Date(), signer: this.who.signer, projections: PROJECTIONS };
    const [op] = await this.run((db) =>
      db.transaction((tx) =>
        appendOps(tx, author, [
          {
            operation,
            thread,
            session: null,
            kind: 'message.posted',
            body: { message: newMessageId(), author: { handle: 'bob', session: null }, text: 'done', effect: 'answer', substituted: false, refs: { working_copy: null } },
          },
        ]),
      ),
    );
    this.client?.kick();
    return op!.id;
  }

  /** Every stored op id, with repeats (there must be none). */
  async idList(): Promise<string[]> {
    return (await this.run((db) => db.select({ id: tables.ops.id }).from(tables.ops))).map((r) => r.id);
  }

  /** Every stored op checked again from its stored text and signature. */
  async reverify(): Promise<{ ok: number; bad: string[] }> {
    const rows = await this.run((db) => db.select().from(tables.ops));
    const checked = await checkOps(rows.map((r) => wireTextOf(r) ?? ''));
    return { ok: checked.filter((c) => c.ok).length, bad: checked.flatMap((c, i) => (c.ok ? [] : [rows[i]!.id])) };
  }
}

/** Ops of `n` threads by fresh untrusted workspaces, `per` threads each: 2 ops per thread. */
function unrelated(n: number, per = 25): string[] {
  const texts: string[] = [];
  let w = new Forger();
  for (let i = 0; i < n; i++) {
    if (i % per === 0) w = new Forger();
    texts.push(...w.thread(`unrelated ${i}`).texts);
  }
  return texts;
}

const idOf = (text: string) => (JSON.parse(text) as { id: string }).id;

/** Every op id the relay holds for `stream`, in seq order, read through a plain sync socket from seq 0. */
async function relayIds(relay: string, stream: string, token: string): Promise<string[]> {
  const ws = new WebSocket(syncUrl(relay));
  const ids: string[] = [];
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject);
    ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', protocol: SYNC_PROTOCOL, stream, token, node: 'counter', since: 0 })));
    ws.on('message', (data: Buffer) => {
      const f = JSON.parse(data.toString()) as { type: string; ops?: Array<{ op: { id: string } }> };
      if (f.type === 'ops') ids.push(...f.ops!.map((o) => o.op.id));
      if (f.type === 'caught_up') resolve();
    });
  });
  ws.close();
  return ids;
}

describe('joining a stream that holds many ops of other workspaces', () => {
  let relay: Relay;
  let folders: Awaited<ReturnType<typeof relayFolders>> | undefined;
  const gate = new Gate();
  beforeAll(async () => {
    folders = await relayFolders();
    // Small pages, so the history is many frames and requests.
    relay = await startRelay({ dataDir: folders.fresh(), operatorToken: OPERATOR, log: silentLog, limits: { page_size: 50 }, historyGate: gate.hook });
  });
  afterAll(async () => {
    await relay?.close();
    folders?.cleanup();
  });

  it('is usable before the history is: its own and trusted ops first, a new thread from a trusted workspace received and answered live; then every op once, each verified', async () => {
    const token = await createStream(relay.url, 'join', OPERATOR);
    const trusted = new Forger();
    const peer = await rawPeer(relay.url, 'join', token);
    const joiner = new Joiner(await freshStore(), 'node-j', [trusted.workspace]);
    // The stream before the join: unrelated workspaces' threads, with the trusted workspace's and the
    // joining workspace's own (written from another machine, say) scattered through them.
    const before = unrelated(1_500);
    const trustedBefore = trusted.thread('an old commission');
    const ownBefore = joiner.who.thread('an old thread of mine');
    before.splice(400, 0, ...trustedBefore.texts);
    before.splice(2_000, 0, ...ownBefore.texts);
    for (let i = 0; i < before.length; i += 400) await peer.push(before.slice(i, i + 400));

    gate.close();
    await joiner.start(relay.url, 'join', token);
    const usable = await until('the joining node to be usable', async () => {
      const s = await joiner.status();
      return s.caught_up && s.history?.priority_complete ? s : undefined;
    });
    expect(usable.history).toMatchObject({ from: before.length, complete: false, priority: [joiner.who.workspace, trusted.workspace].sort() });
    expect(usable.history!.through).toBeLessThan(before.length);
    expect(usable.cursor).toBe(before.length);
    let held = new Set(await joiner.idList());
    for (const t of [...trustedBefore.texts, ...ownBefore.texts]) expect(held.has(idOf(t))).toBe(true);
    // Only the first pass's ops are here; the background pass is held at the gate.
    expect(held.size).toBeLessThan(before.length);

    // A new thread from the trusted workspace, sent now: it arrives live and is answered, with the history still held.
    const commission = trusted.thread('review this, please');
    await peer.push(commission.texts);
    await until('the commission to arrive', async () => ((await joiner.idList()).includes(idOf(commission.texts[1]!)) ? true : undefined));
    const answer = await joiner.answer(commission.thread, commission.thread);
    await until('the answer to be acknowledged', async () => ((await joiner.status()).outbox === 0 ? true : undefined));
    const during = await joiner.status();
    expect(during.history!.complete).toBe(false);
    expect(during.caught_up).toBe(true);
    expect(gate.reads.some((r) => r.workspaces === null)).toBe(true);

    gate.release();
    const done = await until('the history to complete', async () => {
      const s = await joiner.status();
      return s.history?.complete ? s : undefined;
    });
    expect(done.history).toMatchObject({ through: before.length, from: before.length, priority_complete: true });
    // Every op of the relay, exactly once, each one verified from what is stored.
    const all = await relayIds(relay.url, 'join', token);
    expect(all).toContain(answer);
    const ids = await joiner.idList();
    expect(ids.length).toBe(new Set(ids).size);
    expect(new Set(ids)).toEqual(new Set(all));
    const again = await joiner.reverify();
    expect(again).toEqual({ ok: all.length, bad: [] });
    expect(done.rejected).toEqual({});
    expect(done.pending).toBe(0);
    peer.close();
    await joiner.stop();
  });

  it('a restart in the middle of the history resumes where it was: nothing lost, nothing doubled', async () => {
    const token = await createStream(relay.url, 'restart', OPERATOR);
    const peer = await rawPeer(relay.url, 'restart', token);
    const before = unrelated(2_000);
    for (let i = 0; i < before.length; i += 400) await peer.push(before.slice(i, i + 400));
    const store = await freshStore();
    const joiner = new Joiner(store, 'node-r', []);
    // Thirty pages of the full pass go through, then the gate holds.
    gate.close(30);
    await joiner.start(relay.url, 'restart', token);
    const mid = await until('part of the history', async () => {
      const s = await joiner.status();
      return s.history && s.history.through > 0 ? s : undefined;
    });
    expect(mid.history!.complete).toBe(false);
    await joiner.stop();
    const kept = (await joiner.run((db) => readPosition(db, positionKey(relay.url, 'restart')))).history!;
    expect(kept.through).toBeGreaterThan(0);
    expect(kept.through).toBeLessThan(before.length);
    expect(new Set(await joiner.idList()).size).toBeGreaterThanOrEqual(kept.through);

    // Live ops written while it was away come with the live feed, not the history.
    const later = unrelated(10);
    await peer.push(later);
    gate.release();
    const resumedAt = gate.reads.length;
    await joiner.start(relay.url, 'restart', token);
    const done = await until('the history to complete after the restart', async () => {
      const s = await joiner.status();
      return s.history?.complete && s.cursor === before.length + later.length ? s : undefined;
    });
    // The first read after the restart began where the kept mark was, not at 0.
    const firstAfter = gate.reads.slice(resumedAt).find((r) => r.workspaces === null)!;
    expect(firstAfter.after).toBe(kept.through);
    expect(done.history!.through).toBe(before.length);
    const ids = await joiner.idList();
    expect(ids.length).toBe(new Set(ids).size);
    expect(new Set(ids)).toEqual(new Set([...before, ...later].map(idOf)));
    expect(await joiner.reverify()).toEqual({ ok: ids.length, bad: [] });
    peer.close();
    await joiner.stop();
  });

  it('a badly signed op and one signed by a key its workspace never certified, in the history: refused and held, counted as in a catch-up', async () => {
    const token = await createStream(relay.url, 'forged', OPERATOR);
    const peer = await rawPeer(relay.url, 'forged', token);
    const victim = new Forger();
    const mallory = new Forger();
    const before = unrelated(300);
    // The text changed after signing: the signature no longer matches.
    const tampered = victim.thread('tampered').texts[0]!.replace('"subject":"tampered"', '"subject":"tampereD"');
    // Signed by mallory's key, claiming the victim's workspace: no key of the victim's chain.
    const t = newThreadId();
    const claimed = mallory.text({ kind: 'thread.opened', operation: t, thread: t, session: null, workspace: victim.workspace, body: { parent: null, subject: 'x', opener: { handle: 'm', session: null }, target: { kind: 'person', handle: 'bob' } } });
    before.splice(100, 0, tampered);
    before.splice(250, 0, claimed);
    for (let i = 0; i < before.length; i += 400) await peer.push(before.slice(i, i + 400));
    gate.release();
    const joiner = new Joiner(await freshStore(), 'node-f', [victim.workspace]);
    await joiner.start(relay.url, 'forged', token);
    const done = await until('the history to complete', async () => {
      const s = await joiner.status();
      return s.history?.complete ? s : undefined;
    });
    expect(done.rejected).toEqual({ bad_signature: 1 });
    expect(done.pending).toBe(1);
    const ids = new Set(await joiner.idList());
    expect(ids.has(idOf(tampered))).toBe(false);
    expect(ids.has(idOf(claimed))).toBe(false);
    expect(ids.size).toBe(before.length - 2);
    expect(await joiner.reverify()).toEqual({ ok: ids.size, bad: [] });
    peer.close();
    await joiner.stop();
  });

  it('ops of one thread split between the two passes fold as they do taken in order', async () => {
    const token = await createStream(relay.url, 'split', OPERATOR);
    const peer = await rawPeer(relay.url, 'split', token);
    const trusted = new Forger();
    const other = new Forger();
    const before = unrelated(200);
    // A thread of the untrusted workspace answered by the trusted one: the answer comes in the first pass,
    // before the thread it answers; and a thread of the trusted one that the untrusted one writes into.
    const theirs = other.thread('theirs');
    const ours = trusted.thread('ours');
    before.splice(50, 0, ...theirs.texts);
    before.splice(300, 0, trusted.message(theirs.thread, theirs.thread, 'answered', 'answer'), ...ours.texts);
    before.splice(350, 0, other.message(ours.thread, ours.thread, 'not yours to answer', 'answer'));
    for (let i = 0; i < before.length; i += 400) await peer.push(before.slice(i, i + 400));
    gate.release();
    const joiner = new Joiner(await freshStore(), 'node-split', [trusted.workspace]);
    const inOrder = new Joiner(await freshStore(), 'node-in-order', [trusted.workspace]);
    await joiner.start(relay.url, 'split', token);
    await inOrder.start(relay.url, 'split', token, Infinity);
    await until('both to hold every op', async () => {
      const [j, o] = await Promise.all([joiner.status(), inOrder.status()]);
      return j.history?.complete && o.caught_up && o.cursor === before.length ? true : undefined;
    });
    expect((await inOrder.status()).history).toBeNull();
    const folds = (n: Joiner) =>
      n.run(async (db) => (await db.select().from(tables.operations).orderBy(tables.operations.id)).map((r) => ({ id: r.id, state: r.state, finished: r.finished, shown: r.shown })));
    const [j, o] = await Promise.all([folds(joiner), folds(inOrder)]);
    expect(j).toHaveLength(before.length / 2 - 1);
    expect(j).toEqual(o);
    const [ji, oi] = await Promise.all([joiner.run((db) => inertCounts(db)), inOrder.run((db) => inertCounts(db))]);
    expect(ji).toEqual(oi);
    expect(Object.values(ji).reduce((x, y) => x + y, 0)).toBeGreaterThan(0);
    peer.close();
    await joiner.stop();
    await inOrder.stop();
  });

  it('a stream shorter than the join threshold is taken in order, as before: no history', async () => {
    const token = await createStream(relay.url, 'short', OPERATOR);
    const peer = await rawPeer(relay.url, 'short', token);
    const before = unrelated(20);
    await peer.push(before);
    const joiner = new Joiner(await freshStore(), 'node-s', []);
    await joiner.start(relay.url, 'short', token);
    const s = await until('caught up', async () => {
      const s = await joiner.status();
      return s.caught_up && s.cursor === before.length ? s : undefined;
    });
    expect(s.history).toBeNull();
    peer.close();
    await joiner.stop();
  });
});
