// Live fan-out: one feed per stream with connections. Its own commits' rows go straight to the cache;
// commits of other relay instances (PostgreSQL) are read once per notice. Consumers are woken either way.
import type { Logger } from '../infra/index.js';
import { GroupCommitter, type Committed, type GroupLimits } from './commit.js';
import { opsFrame, type OpsFrame } from './frames.js';
import type { OpToAppend, StoredOp, StreamStore } from './storage/index.js';

/**
 * A consumer of a feed: told to look again whenever the feed's head moves, and checked again when its
 * stream is deleted or its token replaced.
 */
export type FeedConsumer = {
  wake(): void;
  /** Whether it was admitted with the token of this hash (true while not admitted yet: its hello decides). */
  admittedWith(tokenHash: string): boolean;
  /** Closes it with a coded error. */
  evict(code: 'UNKNOWN_STREAM' | 'UNAUTHORIZED', message: string): void;
};

/** A frame built for one cursor: the head it was built under, and whether it stopped short of it. */
type SharedFrame = { head: number; built: Promise<OpsFrame | null>; short: boolean };

/** Frames a feed keeps for consumers at other cursors: readers of a backlog drift a few pages apart. */
const FRAMES_KEPT = 4;

/** Bounds of a feed's cache of recent ops, and of one group commit. */
export type FeedLimits = { pageSize: number; cacheOps: number; cacheBytes: number; group: GroupLimits };

/**
 * One stream's recent ops, read from storage once per commit and shared by every consumer of this
 * relay. `head` only moves to seqs actually read, so a stray or early notice costs a query, never a gap.
 */
export class StreamFeed {
  /** The highest seq known committed (and, once the feed started, read). */
  head = 0;
  readonly consumers = new Set<FeedConsumer>();
  private started = false;
  private early = 0;
  /** The cache holds ops from+1 .. from+rows.length, contiguous. */
  private from = 0;
  private rows: StoredOp[] = [];
  private bytes = 0;
  private filling = false;
  private again = false;
  private closed = false;
  /** The highest head heard of while a commit of ours ran: looked at once its rows are in. */
  private deferred = 0;
  /** Frames built lately, by cursor and bounds, for the consumers that ask for the same ones. */
  private readonly frames = new Map<string, SharedFrame>();
  private readonly unsubscribe: () => void;
  private readonly committer: GroupCommitter;

  constructor(
    readonly stream: string,
    private readonly store: StreamStore,
    private readonly limits: FeedLimits,
    private readonly log: Logger,
  ) {
    this.committer = new GroupCommitter(stream, store, limits.group, (rows, head) => this.committed(rows, head));
    this.unsubscribe = store.subscribe(stream, (head) => this.notice(head));
  }

  /** Appends through this relay's group commit for the stream; resolves once committed. */
  append(ops: readonly OpToAppend[]): Promise<Committed> {
    return this.committer.append(ops);
  }

  /** A head just read from the stream row: trusted. The first one starts the cache. */
  known(head: number): void {
    if (!this.started) {
      this.started = true;
      this.head = this.from = head;
    }
    // A notice that came in while the head was being read may be newer than it.
    this.notice(Math.max(head, this.early));
  }

  /** A commit notice: ops up to `head` may exist. */
  notice(head: number): void {
    if (!this.started) this.early = Math.max(this.early, head);
    // Our own commit's notice comes before its rows are handed over: no need to read them back.
    else if (this.committer.busy) this.deferred = Math.max(this.deferred, head);
    else if (head > this.head) void this.fill();
  }

  /** Rows our own commit stored: kept and sent on as they are when they follow the cache, else read. */
  private committed(rows: StoredOp[], head: number): void {
    if (this.closed || !this.started) return;
    const end = this.from + this.rows.length;
    if (rows.length > 0 && rows[0]!.seq === end + 1) {
      for (const row of rows) this.keep(row);
      this.head = this.from + this.rows.length;
      for (const c of this.consumers) c.wake();
    }
    const heard = Math.max(head, this.deferred);
    this.deferred = 0;
    if (heard > this.head) void this.fill();
  }

  /**
   * The next `ops` frame for a consumer whose cursor is `after` (null when there is nothing after it).
   * Consumers at the same cursor share one frame, built once: after a commit every live consumer asks
   * for the same rows, and catch-ups that started together ask for the same pages (one read, not one
   * per consumer), even as they drift a few pages apart. Rows once committed never change, so a frame
   * for `after` stays true; one that ended at the head it was built under is kept only while the head
   * has not moved, since a later one may hold more, and one that stopped short of it stays as it is.
   */
  frame(after: number, limit: number, maxBytes: number): Promise<OpsFrame | null> {
    const key = `${after}:${limit}:${maxBytes}`;
    const kept = this.frames.get(key);
    if (kept && (kept.head === this.head || kept.short)) return kept.built;
    const head = this.head;
    const built = this.page(after, limit, maxBytes).then((rows) => (rows.length === 0 ? null : opsFrame(rows, maxBytes)));
    const entry: SharedFrame = { head, built, short: false };
    this.frames.delete(key);
    this.frames.set(key, entry);
    if (this.frames.size > FRAMES_KEPT) this.frames.delete(this.frames.keys().next().value!);
    built.then(
      (f) => void (entry.short = f !== null && f.last < head),
      // A failed read is not kept for the next consumer: it reads again.
      () => void (this.frames.get(key) === entry && this.frames.delete(key)),
    );
    return built;
  }

  /** Up to `limit` ops after `after` (at most `maxBytes` of op text, at least one op), from the cache when it has them. */
  async page(after: number, limit: number, maxBytes: number): Promise<StoredOp[]> {
    const end = this.from + this.rows.length;
    if (after < this.from || after >= end) return this.store.read(this.stream, after, limit, maxBytes);
    const out: StoredOp[] = [];
    let bytes = 0;
    for (let i = after - this.from; i < this.rows.length && out.length < limit; i++) {
      const row = this.rows[i]!;
      bytes += Buffer.byteLength(row.op);
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(row);
    }
    return out;
  }

  close(): void {
    this.closed = true;
    this.unsubscribe();
    this.rows = [];
    this.frames.clear();
  }

  private async fill(): Promise<void> {
    if (this.filling) {
      this.again = true;
      return;
    }
    this.filling = true;
    try {
      do {
        this.again = false;
        for (;;) {
          const after = this.from + this.rows.length;
          const page = await this.store.read(this.stream, after, this.limits.pageSize);
          if (this.closed || page.length === 0) break;
          // Our own commit may have put rows in while this page was read: those are skipped.
          const end = this.from + this.rows.length;
          const fresh = page.filter((row) => row.seq > end);
          if (fresh.length > 0 && fresh[0]!.seq !== end + 1) throw new Error(`stream ${this.stream}: read after ${end} began at ${fresh[0]!.seq}`);
          for (const row of fresh) this.keep(row);
          this.head = this.from + this.rows.length;
          for (const c of this.consumers) c.wake();
          if (page.length < this.limits.pageSize) break;
        }
      } while (this.again && !this.closed);
    } catch (err) {
      if (!this.closed) this.log.error('feed read failed', { stream: this.stream, error: err });
    } finally {
      this.filling = false;
    }
  }

  private keep(row: StoredOp): void {
    this.rows.push(row);
    this.bytes += Buffer.byteLength(row.op);
    while (this.rows.length > 1 && (this.rows.length > this.limits.cacheOps || this.bytes > this.limits.cacheBytes)) {
      const dropped = this.rows.shift()!;
      this.bytes -= Buffer.byteLength(dropped.op);
      this.from += 1;
    }
  }
}

/** The feeds of streams that have consumers on this relay. */
export class Hub {
  private readonly feeds = new Map<string, StreamFeed>();
  private readonly unwatch: () => void;

  constructor(
    private readonly store: StreamStore,
    private readonly limits: FeedLimits,
    private readonly log: Logger,
  ) {
    this.unwatch = store.onStreamChanged((stream) => void this.recheck(stream));
  }

  /** A stream was deleted or its token replaced (here or on another instance): its consumers are checked again. */
  private async recheck(stream: string): Promise<void> {
    const feed = this.feeds.get(stream);
    if (!feed) return;
    try {
      const row = await this.store.getStream(stream);
      for (const c of [...feed.consumers]) {
        if (!row) c.evict('UNKNOWN_STREAM', `stream ${stream} was deleted`);
        else if (!c.admittedWith(row.tokenHash)) c.evict('UNAUTHORIZED', `the token of stream ${stream} was replaced`);
      }
    } catch (err) {
      this.log.error('stream recheck failed', { stream, error: err });
    }
  }

  /** Adds a consumer to the stream's feed (made on first use). Join before reading the head, so no commit slips between. */
  join(stream: string, consumer: FeedConsumer): StreamFeed {
    let feed = this.feeds.get(stream);
    if (!feed) this.feeds.set(stream, (feed = new StreamFeed(stream, this.store, this.limits, this.log)));
    feed.consumers.add(consumer);
    return feed;
  }

  /** Removes a consumer; the last one out closes the feed. */
  leave(stream: string, consumer: FeedConsumer): void {
    const feed = this.feeds.get(stream);
    if (!feed) return;
    feed.consumers.delete(consumer);
    if (feed.consumers.size === 0) {
      feed.close();
      this.feeds.delete(stream);
    }
  }

  /** The feed of a stream, if it has consumers here. */
  feed(stream: string): StreamFeed | undefined {
    return this.feeds.get(stream);
  }

  close(): void {
    this.unwatch();
    for (const feed of this.feeds.values()) feed.close();
    this.feeds.clear();
  }
}
