// One sync connection: hello, the backlog paged from storage, caught_up, live ops; pushes acked after commit.
import type { RawData, WebSocket } from 'ws';
import type { z } from 'zod';
import {
  FromNodeSchema,
  isPlainPush,
  rawElements,
  rawMember,
  StreamName,
  SYNC_PROTOCOL,
  syncCloseCode,
  SYNC_FEATURES,
  type AckResultSchema,
  type FetchSchema,
  type FromNode,
  type FromRelay,
  type HelloSchema,
  type Limits,
  type PushSchema,
  type SyncErrorCode,
} from '../protocol/sync.js';
import { isNexusError } from '../protocol/errors.js';
import { checkStorable } from '../protocol/storable.js';
import type { Logger } from '../infra/index.js';
import { historyFrame } from './frames.js';
import type { FeedConsumer, Hub, StreamFeed } from './hub.js';
import type { ConnectionGauge, RelayMetrics } from './metrics.js';
import type { StreamStore } from './storage/index.js';
import { tokenMatches } from './tokens.js';

type AckResult = z.infer<typeof AckResultSchema>;

/** What every connection shares. */
export type ConnectionDeps = {
  store: StreamStore;
  hub: Hub;
  limits: Limits;
  metrics: RelayMetrics;
  log: Logger;
  /** A connection that has sent no hello this long after opening is closed as HELLO_TIMEOUT. */
  helloTimeoutMs: number;
  /** Awaited before each read of history (a `fetch`): tests and benches hold the history here, never the live feed. */
  historyGate?: HistoryGate;
};

/** What a history read is about to read: `workspaces` null for every author (but those in `exclude`). */
export type HistoryRead = { stream: string; after: number; upto: number; workspaces: readonly string[] | null; exclude: readonly string[] };
/** Holds a history read until it resolves. */
export type HistoryGate = (read: HistoryRead) => Promise<void>;

/** Fetches one connection may have queued before the socket stops being read. */
const MAX_FETCHES_QUEUED = 8;

/** Frames read ahead of the one being handled before the socket stops being read. */
const MAX_QUEUED_FRAMES = 4;
/**
 * Pushes of one connection waiting for their commit at once. Several in flight let a node's pushes
 * join one group commit; past this many the socket stops being read until one is acknowledged.
 */
const MAX_PUSHES_IN_FLIGHT = 8;
/** How often a consumer over its send-buffer cap is looked at again. */
const DRAIN_POLL_MS = 20;

const OPEN = 1;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A socket's whole life on the relay. Bad input closes this connection with a coded error, never the relay. */
export class SyncConnection implements FeedConsumer, ConnectionGauge {
  stream: string | null = null;
  private state: 'hello' | 'open' | 'closed' = 'hello';
  private joined: string | null = null;
  private feed: StreamFeed | null = null;
  /** The last seq sent (or the `since` the node already held). */
  private cursor = 0;
  private welcomeHead = 0;
  /** The hash of the token this connection was admitted with: a replaced token evicts it. */
  private tokenHash: string | null = null;
  private caughtUp = false;
  private pumping = false;
  private rewake = false;
  /** Sends (the live feed's, history's) waiting for the consumer's send buffer to drain. */
  private draining = 0;
  private queue: Promise<void> = Promise.resolve();
  private queued = 0;
  /** Pushes handed to the group commit and not acknowledged yet; acks go out in push order, after this chain. */
  private pushesInFlight = 0;
  private acks: Promise<void> = Promise.resolve();
  /** History requests, answered one after another beside the live feed. */
  private history: Promise<void> = Promise.resolve();
  private fetchesQueued = 0;
  private readonly pinger: NodeJS.Timeout;
  /** Runs out unless a hello arrives first; cleared by the first hello frame. */
  private helloTimer: NodeJS.Timeout | undefined;
  private pongDeadline: NodeJS.Timeout | undefined;
  /** This connection's lines: `conn` and the peer's address, then `stream` and `node` once known. */
  private log: Logger;
  private readonly opened = Date.now();

  constructor(
    private readonly ws: WebSocket,
    readonly id: number,
    private readonly deps: ConnectionDeps,
    remote?: string,
    /** Called once the connection is admitted or gone: it no longer counts against its address's pending cap. */
    private readonly released: () => void = () => undefined,
  ) {
    this.log = deps.log.child({ conn: id, ...(remote === undefined ? {} : { remote }) });
    ws.on('message', (data, isBinary) => this.onFrame(data, isBinary));
    ws.on('close', (code, reason) => {
      // 1000 is a node saying goodbye, 1001 one of the two sides going away; 1006 is a socket that just
      // went (a crash, a cut cable) and is worth a warning.
      const normal = code === 1000 || code === 1001;
      const fields = { code, normal, reason: reason.toString(), sent_seq: this.cursor, open_ms: Date.now() - this.opened };
      if (code === 1006) this.log.warn('node disconnected', fields);
      else this.log.info('node disconnected', fields);
      this.shutdown();
    });
    ws.on('error', (err: Error & { code?: string }) => {
      // ws has already closed the socket (1009 past its hard payload cap, 1007 for bad UTF-8, ...).
      const code = err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' ? 'FRAME_TOO_LARGE' : 'BAD_FRAME';
      if (this.state !== 'closed') {
        deps.metrics.rejected(code);
        this.log.warn('sync connection refused', { code, message: err.message });
      }
      this.shutdown();
    });
    this.pinger = setInterval(() => this.ping(), deps.limits.ping_interval_ms);
    this.helloTimer = setTimeout(() => this.fail('HELLO_TIMEOUT', `no hello within ${deps.helloTimeoutMs} ms of connecting`), deps.helloTimeoutMs);
    deps.metrics.connected(this);
  }

  /** The last seq sent to this connection. */
  sentSeq(): number {
    return this.cursor;
  }

  /** Closes the connection because the relay is going away. */
  stop(): void {
    if (this.state === 'closed') return;
    this.shutdown();
    if (this.ws.readyState === OPEN) this.ws.close(1001, 'relay shutting down');
  }

  admittedWith(tokenHash: string): boolean {
    return this.state !== 'open' || this.tokenHash === tokenHash;
  }

  evict(code: 'UNKNOWN_STREAM' | 'UNAUTHORIZED', message: string): void {
    this.fail(code, message);
  }

  /** The feed moved: send what this connection has not had yet. */
  wake(): void {
    if (this.state !== 'open') return;
    if (this.pumping) this.rewake = true;
    else void this.pump();
  }

  private onFrame(data: RawData, isBinary: boolean): void {
    if (this.state === 'closed') return;
    this.heard();
    const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
    if (isBinary) return this.fail('BAD_FRAME', 'frames are JSON text, not binary');
    const max = this.deps.limits.max_frame_bytes;
    if (buf.length > max) return this.fail('FRAME_TOO_LARGE', `the frame is ${buf.length} bytes; the limit is ${max}`);
    this.queued += 1;
    if (this.queued > MAX_QUEUED_FRAMES && !this.ws.isPaused) this.ws.pause();
    this.queue = this.queue
      .then(() => this.handle(buf.toString('utf8')))
      .catch((err: unknown) => this.internal(err))
      .finally(() => {
        this.queued -= 1;
        this.resumeIfRoom();
      });
  }

  private async handle(text: string): Promise<void> {
    if (this.state === 'closed') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return this.fail('BAD_FRAME', 'the frame is not JSON');
    }
    const type = isRecord(value) ? value['type'] : undefined;
    if (this.state === 'hello' && type !== 'hello') return this.fail('NOT_HELLO', 'the first frame must be hello');
    if (type === 'hello') {
      clearTimeout(this.helloTimer);
      this.helloTimer = undefined;
    }
    const max = this.deps.limits.max_ops_per_push;
    if (type === 'push' && isRecord(value) && Array.isArray(value['ops']) && value['ops'].length > max) {
      return this.fail('TOO_MANY_OPS', `the push holds ${value['ops'].length} ops; the limit is ${max}`);
    }
    // Pushes as nodes write them pass a check that costs a fraction of the schema's; anything else is
    // judged by the schema, which also says what is wrong.
    let frame: FromNode;
    if (isPlainPush(value)) frame = value;
    else {
      const parsed = FromNodeSchema.safeParse(value);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return this.fail('BAD_FRAME', issue ? `${issue.path.join('.') || '(frame)'}: ${issue.message}` : 'not a valid frame');
      }
      frame = parsed.data;
    }
    switch (frame.type) {
      case 'hello':
        return this.state === 'hello' ? this.hello(frame) : this.fail('BAD_FRAME', 'hello was already received');
      case 'push':
        return this.push(frame, text, (value as { ops: unknown[] }).ops);
      case 'fetch':
        return this.fetch(frame);
      case 'ping':
        return this.send({ type: 'pong', t: frame.t });
      case 'pong':
        return;
    }
  }

  private async hello(h: z.infer<typeof HelloSchema>): Promise<void> {
    if (h.protocol !== SYNC_PROTOCOL) return this.fail('PROTOCOL_VERSION', `this relay speaks protocol ${SYNC_PROTOCOL}, not ${h.protocol}`);
    const name = StreamName.safeParse(h.stream);
    if (!name.success) return this.fail('UNKNOWN_STREAM', `no stream ${JSON.stringify(h.stream)}`);
    // Join before reading the head, so a commit between the two is not missed.
    this.joined = name.data;
    const feed = (this.feed = this.deps.hub.join(name.data, this));
    const row = await this.deps.store.getStream(name.data);
    if (this.state === 'closed') return;
    if (!row) return this.fail('UNKNOWN_STREAM', `no stream ${JSON.stringify(h.stream)}`);
    if (!tokenMatches(h.token, row.tokenHash)) return this.fail('UNAUTHORIZED', 'the stream token is not valid');
    if (h.since > row.head) return this.fail('BAD_CURSOR', `since ${h.since} is past the stream head ${row.head}`, row.head);
    feed.known(row.head);
    this.state = 'open';
    this.released();
    this.stream = row.name;
    this.tokenHash = row.tokenHash;
    // A joining node takes the live feed from the head on and fetches what came before as history.
    const join = h.join !== undefined && row.head > h.since && row.head - h.since >= h.join;
    this.cursor = join ? row.head : h.since;
    this.welcomeHead = row.head;
    this.send({ type: 'welcome', protocol: SYNC_PROTOCOL, stream: row.name, head: row.head, limits: this.deps.limits, features: [...SYNC_FEATURES], ...(join ? { from: row.head } : {}) });
    this.log = this.log.child({ stream: row.name, node: h.node });
    this.log.info('node connected', { since: h.since, head: row.head, ...(join ? { join: true } : {}) });
    this.wake();
  }

  /** `parsed` is each op as JSON.parse gave it (before zod), checked for what no store can keep. */
  private async push(p: z.infer<typeof PushSchema>, text: string, parsed: unknown[]): Promise<void> {
    const stream = this.stream!;
    // The exact text of each op, as pushed: it is stored and forwarded byte for byte.
    const raw = rawElements(rawMember(text, 'ops') ?? '');
    if (!raw || raw.length !== p.ops.length) throw new Error('the op texts could not be located in the push frame');
    const max = this.deps.limits.max_op_bytes;
    for (const [i, op] of p.ops.entries()) {
      const bytes = Buffer.byteLength(raw[i]!);
      if (bytes > max) return this.fail('OP_TOO_LARGE', `op ${op.id} is ${bytes} bytes; the limit is ${max}`);
    }
    // An op no store can keep costs only itself: a coded result in the ack, never stored or sent on.
    const results: AckResult[] = new Array(p.ops.length);
    const toAppend: Array<{ id: string; text: string; workspace: string }> = [];
    const slots: number[] = [];
    const refused: Record<string, number> = {};
    for (const [i, op] of p.ops.entries()) {
      const verdict = checkStorable(parsed[i]);
      if (verdict.ok) {
        toAppend.push({ id: op.id, text: raw[i]!, workspace: op.workspace });
        slots.push(i);
      } else {
        results[i] = { op: op.id, seq: 0, duplicate: false, refused: verdict.reason };
        refused[verdict.reason] = (refused[verdict.reason] ?? 0) + 1;
        this.deps.metrics.refusedOp(verdict.reason);
      }
    }
    if (slots.length < p.ops.length) this.log.warn('ops refused as not storable', { push: p.id, refused });
    // Not awaited here: the next frame is read while this push waits for its group commit. Acks still
    // go out in push order (a node moves its acknowledged mark to the highest ack it has seen).
    const committed = toAppend.length > 0 ? this.feed!.append(toAppend) : null;
    this.pushesInFlight += 1;
    if (this.pushesInFlight >= MAX_PUSHES_IN_FLIGHT && !this.ws.isPaused) this.ws.pause();
    const ack = async () => {
      let head = this.feed?.head ?? 0;
      if (committed) {
        const out = await committed;
        out.results.forEach((r, j) => (results[slots[j]!] = r));
        head = out.head;
        const duplicates = out.results.filter((r) => r.duplicate).length;
        this.deps.metrics.pushed(stream, out.results.length - duplicates, duplicates);
      }
      this.send({ type: 'ack', id: p.id, results, head });
    };
    this.acks = this.acks
      .then(ack)
      .catch((err: unknown) => {
        if (isNexusError(err) && err.code === 'UNKNOWN_STREAM') return this.fail('UNKNOWN_STREAM', `stream ${stream} was deleted`);
        this.internal(err);
      })
      .finally(() => {
        this.pushesInFlight -= 1;
        this.resumeIfRoom();
      });
  }

  /**
   * A request for history: answered after the ones before it, in frames of at most a page each, sent only
   * while the send buffer has room, so the live feed (its own pump) is never queued behind a long history.
   */
  private fetch(f: z.infer<typeof FetchSchema>): void {
    this.fetchesQueued += 1;
    if (this.fetchesQueued >= MAX_FETCHES_QUEUED && !this.ws.isPaused) this.ws.pause();
    this.history = this.history
      .then(() => this.answerFetch(f))
      .catch((err: unknown) => {
        if (isNexusError(err) && err.code === 'UNKNOWN_STREAM') return this.fail('UNKNOWN_STREAM', `stream ${this.stream ?? ''} was deleted`);
        this.internal(err);
      })
      .finally(() => {
        this.fetchesQueued -= 1;
        this.resumeIfRoom();
      });
  }

  private async answerFetch(f: z.infer<typeof FetchSchema>): Promise<void> {
    const stream = this.stream!;
    const { page_size, max_frame_bytes, max_op_bytes } = this.deps.limits;
    const workspaces = f.workspaces ?? null;
    const exclude = f.exclude ?? [];
    const filter = { ...(workspaces === null ? {} : { only: workspaces }), exclude };
    // Room for the frame's own text around the ops' texts.
    const budget = max_frame_bytes - 64 * page_size - 256;
    let after = f.after;
    for (;;) {
      if (this.state !== 'open') return;
      await this.deps.historyGate?.({ stream, after, upto: f.upto, workspaces, exclude });
      if (this.state !== 'open') return;
      const rows = after >= f.upto ? [] : await this.deps.store.readHistory(stream, after, f.upto, filter, page_size, budget);
      let bytes = 0;
      for (const r of rows) bytes += Buffer.byteLength(r.op);
      // The read stopped short of neither its limit nor its byte budget: nothing more matches up to `upto`.
      const whole = rows.length === 0 || (rows.length < page_size && bytes + max_op_bytes <= budget);
      const last = rows.length === 0 ? after : rows[rows.length - 1]!.seq;
      const built = historyFrame(f.id, rows, max_frame_bytes, whole || last >= f.upto ? { through: Math.max(f.upto, after), done: true } : { through: last, done: false });
      if (this.state !== 'open' || !(await this.room(built.frame.length))) return;
      this.ws.send(built.frame, { binary: false });
      if (built.count > 0) this.deps.metrics.sent(stream, built.count);
      if (built.done) return;
      after = built.last;
    }
  }

  /** Reads the socket again once frames, pushes and fetches in flight are below their bounds. */
  private resumeIfRoom(): void {
    if (this.ws.isPaused && this.queued <= 1 && this.pushesInFlight < MAX_PUSHES_IN_FLIGHT && this.fetchesQueued < MAX_FETCHES_QUEUED && this.state !== 'closed') this.ws.resume();
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    const { page_size, max_frame_bytes } = this.deps.limits;
    try {
      do {
        this.rewake = false;
        while (this.state === 'open') {
          if (!this.caughtUp && this.cursor >= this.welcomeHead) {
            this.caughtUp = true;
            this.send({ type: 'caught_up', head: this.cursor });
          }
          const feed = this.feed!;
          if (this.cursor >= feed.head) break;
          const built = await feed.frame(this.cursor, page_size, max_frame_bytes);
          if (this.state !== 'open' || built === null) break;
          const { frame, count, last } = built;
          if (!(await this.room(frame.length))) return;
          // The bytes are shared with every consumer at the same cursor: sent as text, not copied.
          this.ws.send(frame, { binary: false });
          this.cursor = last;
          this.deps.metrics.sent(this.stream!, count);
        }
      } while (this.rewake && this.state === 'open');
    } catch (err) {
      this.internal(err);
    } finally {
      this.pumping = false;
    }
  }

  /**
   * Waits until `bytes` more fit under the send-buffer cap. A consumer that stays over it for
   * `slow_consumer_ms` is closed as SLOW_CONSUMER, told the last seq it was sent.
   */
  private async room(bytes: number): Promise<boolean> {
    const { send_buffer_bytes: cap, slow_consumer_ms } = this.deps.limits;
    const fits = () => this.ws.bufferedAmount === 0 || this.ws.bufferedAmount + bytes <= cap;
    const deadline = Date.now() + slow_consumer_ms;
    this.draining += 1;
    try {
      while (this.state === 'open' && !fits()) {
        if (Date.now() >= deadline) {
          this.fail('SLOW_CONSUMER', `more than ${cap} bytes stayed unread for ${slow_consumer_ms} ms`, this.cursor);
          return false;
        }
        await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
      }
    } finally {
      this.draining -= 1;
    }
    return this.state === 'open';
  }

  private ping(): void {
    if (this.state === 'closed') return;
    this.pongDeadline ??= setTimeout(() => {
      this.pongDeadline = undefined;
      // Frames still being worked through mean it is not silent; a full send buffer (our ping
      // queued behind it) is SLOW_CONSUMER's call, not this one.
      if (this.queued === 0 && this.pushesInFlight === 0 && this.draining === 0) this.fail('PING_TIMEOUT', `nothing arrived within ${this.deps.limits.ping_timeout_ms} ms of a ping`);
    }, this.deps.limits.ping_timeout_ms);
    this.send({ type: 'ping', t: Date.now() });
  }

  private heard(): void {
    clearTimeout(this.pongDeadline);
    this.pongDeadline = undefined;
  }

  private send(frame: FromRelay): void {
    if (this.ws.readyState === OPEN) this.ws.send(JSON.stringify(frame));
  }

  private internal(err: unknown): void {
    if (this.state === 'closed') return; // the relay is closing under it, or the socket went first
    this.log.error('sync connection failed', { error: err });
    this.fail('INTERNAL', 'the relay failed; try again');
  }

  /** Sends a coded error and closes with the code's close code. */
  private fail(code: SyncErrorCode, message: string, resumeFrom?: number): void {
    if (this.state === 'closed') return;
    this.deps.metrics.rejected(code);
    this.log.warn('sync connection refused', { code, message, ...(resumeFrom === undefined ? {} : { resume_from: resumeFrom }) });
    this.send(resumeFrom === undefined ? { type: 'error', code, message } : { type: 'error', code, message, resume_from: resumeFrom });
    if (this.ws.readyState === OPEN) this.ws.close(syncCloseCode(code), code);
    this.shutdown();
  }

  private shutdown(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.released();
    clearInterval(this.pinger);
    clearTimeout(this.helloTimer);
    this.heard();
    if (this.ws.isPaused) this.ws.resume();
    if (this.joined !== null) this.deps.hub.leave(this.joined, this);
    this.deps.metrics.disconnected(this);
  }
}
