// The node's sync client for one workspace: pushes its outbox, takes in the stream, and keeps going
// across disconnects, moving to the binding's next relay URL at once when one closes or cannot be reached
// (backoff with jitter only once every URL has failed in turn; unacknowledged ops are pushed again after
// every reconnect). A relay that goes silent is asked with a ping and dropped when it does not answer.
import WebSocket from 'ws';
import { backoffDelay, type Logger } from '../../../infra/index.js';
import { checkOps, type CheckedOp, type OpSigner } from '../../../crypto/index.js';
import {
  DEFAULT_LIMITS,
  FromRelaySchema,
  HistoryPageSchema,
  MAX_FETCH_WORKSPACES,
  OpsPageSchema,
  rawMemberOfElements,
  SYNC_ERROR_TABLE,
  SYNC_PROTOCOL,
  syncUrl,
  type FromNode,
  type Limits,
} from '../../../protocol/sync.js';
import { pendingCount, signLegacyOps, wireTextOf, type IngestReport, type Projection } from '../../kernel/index.js';
import type { Op } from '../../../protocol/ops.js';
import type { Db } from '../../adapters/store/index.js';
import { inertCounts, refusalRepeats } from '../../capabilities/threads/index.js';
import { relayUrls, type Binding } from './binding.js';
import { refusalLine, storeHistory, storePage } from './page.js';
import {
  historyComplete,
  historyReport,
  outbox,
  outboxSize,
  positionKey,
  priorityComplete,
  readPosition,
  writePosition,
  type HistoryPosition,
  type SyncPosition,
} from './state.js';
import type { SyncHistory } from '../../../protocol/commands.js';
import type { WorkspaceId } from '../../../protocol/ids.js';
import { relaySocketOptions, socketErrorWords } from './tls.js';

export type SyncStatus = {
  bound: true;
  /** The relay URL in use (or being tried). */
  relay: string;
  /** Every URL of the binding, in the order they are tried. */
  relays: string[];
  stream: string;
  connected: boolean;
  caught_up: boolean;
  cursor: number;
  head: number;
  lag: number;
  outbox: number;
  in_flight: number;
  received: number;
  pushed: number;
  /** Ops refused on arrival, by reason (malformed, bad_signature, bad_body): never stored, never folded. */
  rejected: Record<string, number>;
  /** Ops held because their signing key is not (yet) certified for their workspace (unknown_key). */
  pending: number;
  /** Ops stored but inert, by reason (capabilities/threads/fold.ts, authority). */
  inert: Record<string, number>;
  /** Commissions refused without a signed refusal (over the limit), by sending workspace. */
  refusals_unsigned: Record<string, number>;
  last_error: string | null;
  refused: boolean;
  /** A join's background history (null: this node took the stream's whole backlog in order). */
  history: SyncHistory | null;
};

export type SyncClientOptions = {
  binding: Binding;
  /** This node's origin: ops carrying it were authored here and belong in the outbox. */
  origin: string;
  /** The workspace and its current signing key: ops it wrote before signing existed are signed when first pushed. */
  workspace?: string;
  signer?: () => OpSigner;
  /** The projections ingested ops are folded into. */
  projections: readonly Projection[];
  /** Runs store work in the workspace's command queue, so sync never interleaves with a command. */
  run: <T>(fn: (db: Db) => Promise<T>) => Promise<T>;
  /** Where the client reports (the node gives a child carrying the workspace and the stream). */
  log: Logger;
  /** Called (outside the store work) with the ops each page newly stored, so the node can react to them. */
  onIngested?: (ops: Op[]) => void;
  /** Batches in flight before waiting for acks. */
  window?: number;
  /** Opens and verifies received op texts (default: checkOps, on the process's shared verification threads). */
  check?: (raws: readonly string[]) => Promise<CheckedOp[]>;
  /** The workspaces this one trusts: with it, their ops come first when joining a long stream. */
  trusted?: () => readonly string[] | Promise<readonly string[]>;
  /**
   * A node new to a stream holding at least this many ops joins at its head and takes the history in the
   * background (default {@link JOIN_MIN_OPS}; Infinity: always the whole backlog in order).
   */
  joinMinOps?: number;
  /** How a silent connection is found dead (default {@link LIVENESS}). */
  liveness?: Liveness;
};

/** A connection quiet for `quietMs` is sent a ping; one that then says nothing for `answerMs` is cut. */
export type Liveness = { quietMs: number; answerMs: number };

/**
 * A relay host that vanishes without closing (partitioned, powered off) sends no RST: without a probe of
 * our own the relay's 20 s pings would be all we wait on. Probing after 5 s of quiet finds it gone within
 * 10 s; a busy relay speaks often enough that the probe costs nothing.
 */
export const LIVENESS: Liveness = { quietMs: 5_000, answerMs: 5_000 };

/**
 * The delay before the connection attempt that follows `failures` failed or closed ones in a row (from 1)
 * over `urls` URLs: none while some URL of the current pass is still untried, so a node whose instance
 * died goes to the next one at once; after each full pass that failed, the backoff grows one step.
 */
export function reconnectDelay(failures: number, urls: number, random: () => number = Math.random): number {
  if (failures % urls !== 0) return 0;
  return backoffDelay(failures / urls - 1, RECONNECT_BACKOFF, random);
}

/**
 * From how many ops a new node joins a stream at its head instead of taking the backlog in order: about a
 * second of verifying and storing, below which the backlog costs less than being partly there.
 */
export const JOIN_MIN_OPS = 10_000;
/** Seqs per history request of the full pass, and requests of it asked for ahead of the one being stored. */
const HISTORY_CHUNK = 4_000;
const HISTORY_AHEAD = 3;
/** Most history ops in one transaction. */
const MAX_HISTORY_OPS_PER_STORE = 2_000;

/**
 * Reconnect delays: from 200 ms, doubling, never past 10 s. A relay back after a restart is found
 * within 10 s (with 30 s and the old 1.5x jitter a node waited up to 45 s); the jitter spreads many
 * nodes reconnecting together.
 */
const RECONNECT_BACKOFF = { baseMs: 200, maxMs: 10_000 } as const;
/** How long a stopping node waits for the relay to answer its close before cutting the socket. */
const GOODBYE_MS = 1_000;
/** Pages received but not yet stored before the socket stops being read. */
const MAX_WAITING_PAGES = 8;
/**
 * Pages that queued up while one was stored go into the next transaction together, up to this many
 * ops: a catch-up then pays one commit, one cursor write and one look at the key chain and the
 * operations per batch instead of per page (measured 4-9% of the storing time on PGlite).
 */
const MAX_OPS_PER_STORE = 2_000;

/**
 * A received page on its way to the store; `results` once its signatures are checked, `taken` once a batch
 * holds it. `history` for a page of history: how far its request is answered, and which pass it belongs to.
 */
type WaitingPage = {
  first: number;
  last: number;
  /** Settles once `results` is set. */
  checked: Promise<unknown>;
  ws: WebSocket | null;
  results: CheckedOp[] | null;
  taken: boolean;
  history: { through: number; priority: boolean; done: boolean } | null;
};

/** Resolves in the check phase of the next event-loop turn, after its I/O phase. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export class SyncClient {
  private ws: WebSocket | null = null;
  private stopped = false;
  private refused = false;
  private connected = false;
  private caughtUp = false;
  /** Connections that closed or failed in a row since the last welcome. */
  private failures = 0;
  private limits: Limits = DEFAULT_LIMITS;
  private head = 0;
  private position: SyncPosition = { cursor: 0, acked: 0, rejected: {} };
  private sentUpTo = 0;
  private inFlight = new Map<number, number>(); // batch id -> highest local_seq in it
  private nextBatch = 1;
  private pumping = false;
  private pumpAgain = false;
  /** Counts connections closed: a pump that sees it move knows its connection went while it read. */
  private epoch = 0;
  private ingest: Promise<void> = Promise.resolve();
  /** Pages received and not yet stored, in arrival order. */
  private readonly waiting: WaitingPage[] = [];
  private received = 0;
  private pushed = 0;
  /** Kept until sync makes progress (a page stored, an ack, caught up): a welcome alone clears nothing. */
  private lastError: string | null = null;
  private lastLogged: string | null = null;
  /**
   * Connections one of whose pages failed to store: they are closing, their later pages are not stored
   * (the cursor would move past the failed one) and nothing they say means progress.
   */
  private readonly failedSockets = new WeakSet<WebSocket>();
  private outboxCount = 0;
  private reconnectTimer: NodeJS.Timeout | null = null;
  /** What the relay of this connection can do beyond the protocol (welcome's `features`). */
  private features: readonly string[] = [];
  /** History requests of this connection not answered in full yet. */
  private readonly fetches = new Map<number, { priority: boolean; upto: number }>();
  private nextFetch = 1;
  /** On this connection: the priority pass was asked for; the full pass was asked for up to this seq. */
  private priorityAsked = false;
  private historyAsked = 0;
  private livenessTimer: NodeJS.Timeout | null = null;
  /** performance.now() of the last frame heard, and of the ping that is waiting for an answer (or null). */
  private heardAt = 0;
  private pingedAt: number | null = null;
  /** performance.now() when this connection's hello went out; null until it has. */
  private helloAt: number | null = null;

  private readonly key: string;
  /** The binding's relay URLs; `at` is the one in use. Every instance behind them serves the same stream. */
  private readonly urls: string[];
  private at = 0;

  constructor(private readonly opts: SyncClientOptions) {
    // One position for the stream whichever URL serves it: instances sharing a database give the same seqs.
    this.key = positionKey(opts.binding.relay, opts.binding.stream);
    this.urls = relayUrls(opts.binding);
  }

  private get joinMinOps(): number {
    return this.opts.joinMinOps ?? JOIN_MIN_OPS;
  }

  private get url(): string {
    return this.urls[this.at]!;
  }

  async start(): Promise<void> {
    this.position = await this.opts.run((db) => readPosition(db, this.key));
    this.sentUpTo = this.position.acked;
    this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (this.livenessTimer) clearTimeout(this.livenessTimer);
    await this.goodbye();
    await this.ingest;
  }

  /**
   * Ends the connection with a normal close (1000), so the relay logs a node that left rather than one
   * that vanished; a relay that does not answer the close within a second is cut.
   */
  private async goodbye(): Promise<void> {
    const ws = this.ws;
    if (ws === null || ws.readyState === WebSocket.CLOSED) return;
    if (ws.readyState !== WebSocket.OPEN) return void ws.terminate();
    const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
    ws.close(1000, 'node stopping');
    const cut = setTimeout(() => ws.terminate(), GOODBYE_MS);
    await closed;
    clearTimeout(cut);
  }

  /** Something was written locally: push it when the connection allows. */
  kick(): void {
    void this.pump();
  }

  /** Not connected, after a failure or a refusal: what is written here waits in the outbox. */
  get unreachable(): boolean {
    return !this.connected && (this.lastError !== null || this.refused);
  }

  async status(): Promise<SyncStatus> {
    const [outboxCount, pending, inert, refusalsUnsigned] = await this.opts.run(
      async (db) => [await outboxSize(db, this.opts.origin, this.position.acked), await pendingCount(db), await inertCounts(db), await refusalRepeats(db)] as const,
    );
    this.outboxCount = outboxCount;
    return {
      bound: true,
      relay: this.url,
      relays: this.urls,
      stream: this.opts.binding.stream,
      connected: this.connected,
      // Usable: the live feed is caught up and every op of this workspace and the ones it trusts is here.
      caught_up: this.caughtUp && (this.position.history === undefined || priorityComplete(this.position.history)),
      cursor: this.position.cursor,
      head: Math.max(this.head, this.position.cursor),
      lag: Math.max(0, this.head - this.position.cursor),
      outbox: this.outboxCount,
      in_flight: this.inFlight.size,
      received: this.received,
      pushed: this.pushed,
      rejected: this.position.rejected,
      pending,
      inert,
      refusals_unsigned: refusalsUnsigned,
      last_error: this.lastError,
      refused: this.refused,
      history: historyReport(this.position.history),
    };
  }

  private send(frame: FromNode): void {
    this.ws?.send(JSON.stringify(frame));
  }

  private connect(): void {
    if (this.stopped || this.refused) return;
    let tls: WebSocket.ClientOptions;
    try {
      tls = relaySocketOptions({ ...this.opts.binding, relay: this.url });
    } catch (err) {
      // The CA file went missing: said in status, and tried again with the usual backoff.
      this.setError(socketErrorWords(err as Error));
      this.nextUrl();
      return this.scheduleReconnect();
    }
    const url = this.url;
    const ws = new WebSocket(syncUrl(url), { maxPayload: 64 * 1024 * 1024, handshakeTimeout: 10_000, ...tls });
    this.ws = ws;
    ws.on('open', () => {
      this.heardAt = performance.now();
      this.pingedAt = null;
      this.helloAt = null;
      this.watch(ws, this.liveness.quietMs);
      // Pages of the previous connection may still be being stored: hello names the cursor they end at.
      void this.ingest.then(() => {
        if (this.ws !== ws || ws.readyState !== WebSocket.OPEN) return;
        // New to the stream: a long one is joined at its head, with its history fetched in the background.
        const join = this.position.cursor === 0 && this.position.history === undefined && Number.isFinite(this.joinMinOps) ? { join: this.joinMinOps } : {};
        this.send({ type: 'hello', protocol: SYNC_PROTOCOL, stream: this.opts.binding.stream, token: this.opts.binding.token, node: this.opts.origin, since: this.position.cursor, ...join });
        this.helloAt = performance.now();
      });
    });
    ws.on('message', (data, isBinary) => {
      this.heardAt = performance.now();
      if (isBinary) return this.fail('the relay sent a binary frame');
      this.onFrame(data.toString());
    });
    ws.on('close', (code, reason) => {
      if (this.ws !== ws) return;
      if (this.livenessTimer) clearTimeout(this.livenessTimer);
      this.epoch++;
      this.connected = false;
      this.caughtUp = false;
      this.inFlight.clear();
      this.fetches.clear();
      this.priorityAsked = false;
      this.historyAsked = 0;
      this.sentUpTo = this.position.acked;
      if (code !== 1000 && this.lastError === null) this.setError(`${url}: closed ${code} ${reason.toString()}`.trim());
      this.nextUrl();
      this.scheduleReconnect();
    });
    // Named with the relay's address: "connect ECONNREFUSED" alone does not say which relay.
    ws.on('error', (err) => this.setError(`${url}: ${socketErrorWords(err)}`));
  }

  /**
   * Records a failure for `nxs sync status` and logs it. A connection failure repeated while the relay
   * stays away is logged once; a failed page or a refusal (`always`) every time.
   */
  private setError(message: string, always = false): void {
    this.lastError = message;
    if (always || message !== this.lastLogged) this.opts.log.warn(message);
    this.lastLogged = message;
  }

  private progressed(): void {
    this.lastError = null;
    this.lastLogged = null;
  }

  /**
   * The relay's stream ends before what this node holds: it lost its tail (restored from a backup, say).
   * Follow it from its head, and push every op of ours again: the lost ones are among them, and the relay
   * drops by id the ones it still has. In memory at once (acks of batches sent before are ignored from
   * now on), then stored in the ingest queue, so a page stored meanwhile never writes the old position back.
   */
  private resume(head: number, why: string): void {
    this.position = { ...this.position, cursor: Math.min(head, this.position.cursor), acked: 0, acked_seq: 0 };
    this.sentUpTo = 0;
    this.inFlight.clear();
    this.opts.log.warn(`${why}; following the relay from seq ${this.position.cursor} and pushing this node's ops again`, { cursor: this.position.cursor });
    this.ingest = this.ingest
      .then(async () => {
        const pos = this.position;
        await this.opts.run((db) => writePosition(db, this.key, pos));
      })
      .catch((err: unknown) => this.setError(`storing the sync position failed: ${String(err)}`));
  }

  private get liveness(): Liveness {
    return this.opts.liveness ?? LIVENESS;
  }

  private watch(ws: WebSocket, ms: number): void {
    if (this.livenessTimer) clearTimeout(this.livenessTimer);
    // The check waits for the I/O phase after the timer: a loop that lagged reads what arrived first.
    this.livenessTimer = setTimeout(() => setImmediate(() => this.checkAlive(ws)), Math.max(1, ms));
    this.livenessTimer.unref();
  }

  /**
   * Quiet for `quietMs`: ping. No frame within `answerMs` of the ping: the connection is dead (the host may
   * be gone without a word), so it is cut and the next URL tried. While this client has stopped reading
   * the socket (pages waiting to be stored), or has not yet said hello (the last connection's pages are
   * still being stored), its quiet is its own and counts for nothing. Before the welcome no ping is sent
   * (the relay takes nothing before hello): the hello is the probe, and no answer to it within both
   * spans cuts the connection.
   */
  private checkAlive(ws: WebSocket): void {
    if (this.ws !== ws || ws.readyState !== WebSocket.OPEN) return;
    const { quietMs, answerMs } = this.liveness;
    const now = performance.now();
    if (ws.isPaused || this.helloAt === null) {
      this.pingedAt = null;
      return this.watch(ws, quietMs);
    }
    if (!this.connected) {
      const waited = now - Math.max(this.helloAt, this.heardAt);
      if (waited < quietMs + answerMs) return this.watch(ws, quietMs + answerMs - waited);
      this.setError(`${this.url}: no answer to hello within ${quietMs + answerMs} ms`, true);
      return void ws.terminate();
    }
    if (this.pingedAt !== null && this.heardAt < this.pingedAt) {
      if (now - this.pingedAt < answerMs) return this.watch(ws, answerMs - (now - this.pingedAt));
      this.setError(`${this.url}: no answer to a ping within ${answerMs} ms`, true);
      return void ws.terminate();
    }
    this.pingedAt = null;
    const quiet = now - this.heardAt;
    if (quiet < quietMs) return this.watch(ws, quietMs - quiet);
    this.pingedAt = now;
    this.send({ type: 'ping', t: Date.now() });
    this.watch(ws, answerMs);
  }

  /**
   * A connection to one URL ended or never came: the next one is tried. Any instance serves the stream
   * from the same database, so the cursor and the outbox mark carry over; ops in flight are pushed again
   * and the relay drops by id the ones it already holds.
   */
  private nextUrl(): void {
    if (this.urls.length > 1) this.at = (this.at + 1) % this.urls.length;
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.refused) return;
    this.failures++;
    const delay = reconnectDelay(this.failures, this.urls.length);
    if (this.opts.log.enabled('debug')) this.opts.log.debug(`connecting to ${this.url} in ${delay} ms`, { relay: this.url, delay_ms: delay, failures: this.failures });
    if (delay === 0) return this.connect();
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
    this.reconnectTimer.unref();
  }

  private fail(message: string): void {
    this.setError(message, true);
    this.ws?.terminate();
  }

  private onFrame(text: string): void {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return this.fail('the relay sent a frame that is not JSON');
    }
    const type = typeof json === 'object' && json !== null ? (json as { type?: unknown }).type : undefined;
    if (type === 'ops') return this.onOps(text, json);
    if (type === 'history') return this.onHistory(text, json);
    const parsed = FromRelaySchema.safeParse(json);
    if (!parsed.success) return this.fail(`the relay sent an invalid frame: ${parsed.error.issues[0]?.message ?? ''}`);
    const frame = parsed.data;
    switch (frame.type) {
      case 'welcome':
        this.connected = true;
        this.failures = 0;
        this.limits = frame.limits;
        this.head = frame.head;
        this.features = frame.features ?? [];
        if (frame.from !== undefined && this.position.cursor === 0 && this.position.history === undefined) this.joined(frame.from);
        if (frame.head < (this.position.acked_seq ?? 0)) this.resume(frame.head, `the relay's head ${frame.head} is below seq ${this.position.acked_seq}, which it acknowledged for an op of ours`);
        void this.pump();
        this.startHistory();
        break;
      case 'ops':
      case 'history':
        break; // handled by onOps and onHistory
      case 'caught_up': {
        this.head = Math.max(this.head, frame.head);
        const epoch = this.epoch;
        const ws = this.ws;
        void this.ingest.then(() => {
          // A page that failed closed the connection: that is not caught up.
          if (this.epoch !== epoch || (ws !== null && this.failedSockets.has(ws))) return;
          this.caughtUp = true;
          this.progressed();
        });
        break;
      }
      case 'ack': {
        const upTo = this.inFlight.get(frame.id);
        this.inFlight.delete(frame.id);
        this.head = Math.max(this.head, frame.head);
        this.logAckRefusals(json);
        if (upTo !== undefined && upTo > this.position.acked) {
          const seqs = frame.results.map((r) => r.seq);
          this.position = { ...this.position, acked: upTo, acked_seq: Math.max(this.position.acked_seq ?? 0, ...seqs) };
          this.progressed();
          const pos = this.position;
          void this.opts.run((db) => writePosition(db, this.key, pos)).then(() => this.pump());
        } else void this.pump();
        break;
      }
      case 'error': {
        this.setError(`${frame.code}: ${frame.message}${frame.resume_from === undefined ? '' : ` (resume from ${frame.resume_from})`}`, true);
        if (frame.code === 'BAD_CURSOR' && frame.resume_from !== undefined) this.resume(frame.resume_from, `the relay's stream ends at seq ${frame.resume_from}, before this node's cursor ${this.position.cursor}`);
        else if (!SYNC_ERROR_TABLE[frame.code].retry) {
          this.refused = true;
          this.opts.log.error(`refused by the relay for good: ${this.lastError}`, { code: frame.code });
        }
        break;
      }
      case 'ping':
        this.send({ type: 'pong', t: frame.t });
        break;
      case 'pong':
        break;
    }
  }

  /**
   * An `ops` frame: each op's exact text is taken from the frame text (never re-serialised) and its
   * signature checked at once on a worker thread, while earlier pages are still being stored; the
   * page is then stored in arrival order. A bad op costs only itself, never the page or the connection.
   */
  private onOps(text: string, json: unknown): void {
    const parsed = OpsPageSchema.safeParse(json);
    if (!parsed.success) return this.fail(`the relay sent an invalid ops frame: ${parsed.error.issues[0]?.message ?? ''}`);
    const rows = parsed.data.ops;
    if (rows.length === 0) return;
    const texts = this.opTexts(text, rows.length);
    if (texts === null) return this.fail('the op texts could not be located in an ops frame');
    const last = rows[rows.length - 1]!.seq;
    this.head = Math.max(this.head, last);
    this.enqueue(texts, rows[0]!.seq, last, null);
  }

  /**
   * A `history` frame: a page of a join's background history (or the end of a request, with no ops),
   * checked and stored like a page of the live feed, in arrival order with it, but moving the history's
   * marks instead of the cursor. A request answered in full makes room for the next.
   */
  private onHistory(text: string, json: unknown): void {
    const parsed = HistoryPageSchema.safeParse(json);
    if (!parsed.success) return this.fail(`the relay sent an invalid history frame: ${parsed.error.issues[0]?.message ?? ''}`);
    const { id, ops: rows, through, done } = parsed.data;
    const request = this.fetches.get(id);
    if (request === undefined) return this.fail(`the relay sent history for request ${id}, which this node did not make`);
    const texts = rows.length === 0 ? [] : this.opTexts(text, rows.length);
    if (texts === null) return this.fail('the op texts could not be located in a history frame');
    if (rows.some((r) => r.seq > request.upto) || through > request.upto) return this.fail(`the relay sent history past seq ${request.upto}, which request ${id} asked for`);
    if (done) this.fetches.delete(id);
    this.enqueue(texts, rows[0]?.seq ?? through, rows[rows.length - 1]?.seq ?? through, { through: done ? request.upto : through, priority: request.priority, done });
    // The full pass keeps a request or two asked for ahead of the one being stored.
    if (done && !request.priority) this.askHistory();
  }

  /** The exact text of each op of an `ops` or `history` frame, or null when they cannot be located. */
  private opTexts(text: string, count: number): string[] | null {
    const texts = rawMemberOfElements(text, 'ops', 'op');
    if (!texts || texts.length !== count || texts.some((t) => t === undefined)) return null;
    return texts as string[];
  }

  /**
   * Checks a page's op texts at once on a worker thread, while earlier pages are still being stored, and
   * stores it in arrival order. A bad op costs only itself, never the page or the connection.
   */
  private enqueue(texts: string[], first: number, last: number, history: WaitingPage['history']): void {
    // Backpressure: with enough pages waiting to be stored, stop reading the socket. The relay's
    // own send buffer then fills and it stops paging, so a long catch-up never sits in memory whole.
    const ws = this.ws;
    const page: WaitingPage = { first, last, ws, results: null, taken: false, history, checked: Promise.resolve() };
    page.checked = texts.length === 0 ? Promise.resolve((page.results = [])) : (this.opts.check ?? checkOps)(texts).then((results) => (page.results = results));
    this.waiting.push(page);
    if (this.waiting.length >= MAX_WAITING_PAGES && ws && !ws.isPaused) ws.pause();
    // Each page adds one step, and each step stores one batch of the pages still waiting (not
    // necessarily its own): so every page is stored, live ones first.
    let current: WaitingPage | null = null;
    let upTo = last;
    this.ingest = this.ingest
      .then(async () => {
        await page.checked;
        // PGlite runs in this thread and its queries settle as microtasks: pages stored back to back would
        // never let the event loop reach its I/O phase, so status, the dashboard and the relay's pings
        // would wait for the whole catch-up. One batch per event-loop turn.
        await nextTurn();
        const pick = this.nextToStore();
        if (pick === null) return;
        current = pick;
        await pick.checked;
        const batch = this.batchFrom(pick);
        for (const p of batch) this.waiting.splice(this.waiting.indexOf(p), 1);
        upTo = batch[batch.length - 1]!.last;
        const results = batch.length === 1 ? pick.results! : batch.flatMap((p) => p.results!);
        if (pick.history === null) await this.take(upTo, results);
        else await this.takeHistory(batch[batch.length - 1]!.history!, results);
      })
      .catch((err: unknown) => {
        const failed = current ?? page;
        if (failed.ws !== null) this.failedSockets.add(failed.ws);
        const message = `storing the ${failed.history === null ? 'page' : 'history page'} of seqs ${failed.first}..${upTo} failed: ${String(err)}`;
        if (failed.ws === this.ws) this.fail(message);
        else this.setError(message, true);
      })
      .finally(() => {
        if (this.waiting.length <= MAX_WAITING_PAGES / 2 && ws?.isPaused) ws.resume();
      });
  }

  /**
   * The page to store next: the oldest live page once it is checked, before history that arrived
   * earlier (the two move different marks, so their order between them does not matter, and a live op
   * then never waits behind the background history); else the oldest page. Pages of a connection whose
   * page failed are dropped: its cursor would move past the failed one.
   */
  private nextToStore(): WaitingPage | null {
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      const p = this.waiting[i]!;
      if (p.ws !== null && this.failedSockets.has(p.ws)) {
        p.taken = true;
        this.waiting.splice(i, 1);
      }
    }
    const live = this.waiting.find((p) => !p.taken && p.history === null);
    if (live !== undefined && live.results !== null) return live;
    return this.waiting.find((p) => !p.taken) ?? null;
  }

  /**
   * `page` and the pages right after it that are checked already and came on the same connection, up to
   * MAX_OPS_PER_STORE ops: stored in one transaction, in order, with the cursor moved past the last.
   */
  private batchFrom(page: WaitingPage): WaitingPage[] {
    const batch = [page];
    page.taken = true;
    let ops = page.results!.length;
    // History goes in smaller transactions: a command (or a live page) waits for at most one of them.
    const max = page.history === null ? MAX_OPS_PER_STORE : MAX_HISTORY_OPS_PER_STORE;
    for (let i = this.waiting.indexOf(page) + 1; i < this.waiting.length; i++) {
      const next = this.waiting[i]!;
      if (next.ws !== page.ws || next.results === null || ops + next.results.length > max) break;
      // Live pages and each history pass move different marks: a batch holds one kind.
      if ((next.history === null) !== (page.history === null) || next.history?.priority !== page.history?.priority) break;
      next.taken = true;
      batch.push(next);
      ops += next.results.length;
    }
    return batch;
  }

  /** Stores checked stream ops (one page or several) and moves the cursor past them, in one transaction. */
  private async take(lastSeq: number, checked: CheckedOp[]): Promise<void> {
    const before = this.position;
    const { next, report } = await this.opts.run((db) => storePage(db, this.key, before, lastSeq, checked, this.opts.projections));
    // Acks may have moved the outbox mark meanwhile; the page owns only the cursor and the counts.
    this.position = { ...next, acked: this.position.acked, acked_seq: this.position.acked_seq ?? 0 };
    this.received += checked.length;
    if (next.cursor > before.cursor) this.progressed();
    if (report.fresh.length > 0) this.opts.onIngested?.(report.fresh);
    const line = refusalLine(report);
    if (line !== null) this.opts.log.warn(line, { refused: report.refusals.length - report.held, held: report.held });
    if (report.released > 0) this.opts.log.info(`${report.released} pending op(s) taken in after a key rotation`, { released: report.released });
    if (this.received % 10_000 < checked.length) {
      this.opts.log.info(`${this.received} ops taken in, cursor ${this.position.cursor} of ${this.head}`, { received: this.received, cursor: this.position.cursor, head: this.head });
    }
  }

  /**
   * Stores checked ops of the history and moves the mark of their pass to `end.through`, in one
   * transaction. The priority pass ending makes the workspace usable; the full pass ending, complete.
   */
  private async takeHistory(end: { through: number; priority: boolean }, checked: CheckedOp[]): Promise<void> {
    const before = this.position;
    const move = (h: HistoryPosition): HistoryPosition => {
      if (!end.priority) return { ...h, through: Math.max(h.through, end.through) };
      const through = Math.max(h.priority_through, end.through);
      return through >= h.from ? { ...h, priority_through: through, priority_done: [...h.priority] } : { ...h, priority_through: through };
    };
    const { next, report } = await this.opts.run((db) => storeHistory(db, this.key, before, move, checked, this.opts.projections));
    // The live cursor and the outbox mark are not the history's to move.
    this.position = { ...next, cursor: this.position.cursor, acked: this.position.acked, acked_seq: this.position.acked_seq ?? 0 };
    this.progressed();
    if (report.fresh.length > 0) this.opts.onIngested?.(report.fresh);
    const line = refusalLine(report);
    if (line !== null) this.opts.log.warn(line, { refused: report.refusals.length - report.held, held: report.held });
    if (report.released > 0) this.opts.log.info(`${report.released} pending op(s) taken in after a key rotation`, { released: report.released });
    const h = next.history!;
    if (!priorityComplete(before.history!) && priorityComplete(h)) {
      this.opts.log.info(`the ops of this workspace and the ones it trusts are here (to seq ${h.from}); the rest of the history follows in the background`, { from: h.from, fetched: h.fetched });
    }
    if (!historyComplete(before.history!) && historyComplete(h)) {
      this.opts.log.info(`the stream's history is here: every op to seq ${h.from}`, { from: h.from, fetched: h.fetched });
    } else if (!end.priority && Math.floor(h.through / 10_000) > Math.floor(before.history!.through / 10_000)) {
      this.opts.log.info(`history: ${h.through} of ${h.from} seqs here`, { through: h.through, from: h.from });
    }
    if (end.priority && priorityComplete(h)) this.askHistory();
  }

  /**
   * The relay started the live feed after seq `from` for this new node: the history is fetched in the
   * background, so the position says so before any page of the live feed is stored (in the ingest queue,
   * where those pages go after it).
   */
  private joined(from: number): void {
    this.position = { ...this.position, cursor: from, history: { from, priority: [], priority_done: [], priority_through: 0, through: 0, fetched: 0 } };
    this.opts.log.info(`joined the stream at seq ${from}: live from here; the ops of this workspace and the ones it trusts come first, the rest of the history in the background`, { from });
    this.ingest = this.ingest
      .then(async () => {
        const pos = this.position;
        await this.opts.run((db) => writePosition(db, this.key, pos));
      })
      .catch((err: unknown) => this.setError(`storing the sync position failed: ${String(err)}`));
  }

  /**
   * On a new connection with history still to fetch: settles which workspaces come first (this one and
   * the ones it trusts now; a workspace trusted since the priority pass began starts it again, and ops
   * already here are not stored twice), then asks for the history. After the pages in the ingest queue.
   */
  private startHistory(): void {
    const epoch = this.epoch;
    this.ingest = this.ingest
      .then(async () => {
        const h = this.position.history;
        if (this.epoch !== epoch || h === undefined || historyComplete(h)) return;
        if (!this.features.includes('history')) {
          this.opts.log.warn(`this relay serves no history: the stream's ops before seq ${h.from} are not fetched until a relay that does answers`, { from: h.from });
          return;
        }
        const wanted = [...new Set([...(this.opts.workspace === undefined ? [] : [this.opts.workspace]), ...((await this.opts.trusted?.()) ?? [])])].sort();
        if (wanted.some((w) => !h.priority.includes(w))) {
          // Everything up to the full pass's mark is here already: the new ones are fetched from there.
          this.position = { ...this.position, history: { ...h, priority: wanted, priority_through: h.through } };
          const pos = this.position;
          await this.opts.run((db) => writePosition(db, this.key, pos));
        }
        if (this.epoch === epoch) this.askHistory();
      })
      .catch((err: unknown) => this.setError(`starting the history failed: ${String(err)}`));
  }

  /**
   * Asks for what the history still needs on this connection: the priority pass (the ops of this workspace
   * and the ones it trusts, in one request), then the full pass in requests of HISTORY_CHUNK seqs, a few
   * ahead of the one being stored, so the live feed never waits behind more than those.
   */
  private askHistory(): void {
    const h = this.position.history;
    if (h === undefined || !this.connected || historyComplete(h)) return;
    const fetch = (after: number, upto: number, filter: { workspaces: string[] } | { exclude: string[] }) => {
      const id = this.nextFetch++;
      this.fetches.set(id, { priority: 'workspaces' in filter, upto });
      const named = 'workspaces' in filter ? { workspaces: filter.workspaces as WorkspaceId[] } : filter.exclude.length > 0 ? { exclude: filter.exclude as WorkspaceId[] } : {};
      this.send({ type: 'fetch', id, after, upto, ...named });
    };
    // Past MAX_FETCH_WORKSPACES trusted workspaces, the full pass alone completes them.
    const rest = h.priority.filter((w) => !h.priority_done.includes(w));
    if (rest.length > 0 && rest.length <= MAX_FETCH_WORKSPACES && !priorityComplete(h)) {
      if (!this.priorityAsked) fetch(Math.max(h.priority_through, h.through), h.from, { workspaces: rest });
      this.priorityAsked = true;
      return;
    }
    // The full pass leaves out the workspaces whose ops are all here already.
    const exclude = h.priority_done.length <= MAX_FETCH_WORKSPACES ? h.priority_done : [];
    let next = Math.max(this.historyAsked, h.through);
    while (next < h.from && [...this.fetches.values()].filter((f) => !f.priority).length < HISTORY_AHEAD) {
      const upto = Math.min(h.from, next + HISTORY_CHUNK);
      fetch(next, upto, { exclude });
      next = upto;
    }
    this.historyAsked = next;
  }

  /** A relay that refuses single ops of a push (ops no store could keep) says so per op: each one is logged. */
  private logAckRefusals(json: unknown): void {
    const results = (json as { results?: unknown }).results;
    if (!Array.isArray(results)) return;
    for (const r of results as Array<{ op?: unknown; refused?: unknown }>) {
      if (typeof r?.refused === 'string') this.opts.log.warn(`the relay refused op ${String(r.op)}: ${r.refused}`, { op: String(r.op) });
    }
  }

  /**
   * Sends outbox batches while the window allows. One pump runs at a time; a call that finds one
   * running makes it go round again, so rows written (or a connection opened) meanwhile never wait
   * for the next command.
   */
  private async pump(): Promise<void> {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    if (!this.connected || this.stopped) return;
    this.pumping = true;
    try {
      const window = this.opts.window ?? 4;
      while (this.connected && this.inFlight.size < window) {
        const epoch = this.epoch;
        const after = this.sentUpTo;
        const rows = await this.opts.run(async (db) => {
          const rows = (await outbox(db, this.opts.origin, after, this.limits.max_ops_per_push)).map((r) => ({ localSeq: r.localSeq, id: r.id, raw: wireTextOf(r) }));
          const unsigned = rows.filter((r) => r.raw === null).map((r) => r.id);
          if (unsigned.length > 0 && this.opts.signer && this.opts.workspace) {
            const texts = await signLegacyOps(db, this.opts.workspace, this.opts.signer(), unsigned);
            for (const r of rows) if (r.raw === null) r.raw = texts.get(r.id) ?? null;
          }
          return rows;
        });
        // The connection dropped while the outbox was read (and may be back already): these rows belong
        // to no connection. Marking them sent would skip them on the next one, so read again from its mark.
        if (this.epoch !== epoch || this.sentUpTo !== after) continue;
        if (rows.length === 0) break;
        // Each op goes out as the exact text it was signed as (rebuilt from its row): the frame is built around them.
        const texts: string[] = [];
        let bytes = 64;
        let last = this.sentUpTo;
        for (const r of rows) {
          if (r.raw === null) {
            // Not signed and not ours to sign: no receiver would take it in, so it is never pushed.
            this.opts.log.warn(`op ${r.id} has no signed text; not pushed`, { op: r.id });
            last = r.localSeq;
            continue;
          }
          const size = Buffer.byteLength(r.raw) + 1;
          if (texts.length > 0 && bytes + size > this.limits.max_frame_bytes - 1024) break;
          texts.push(r.raw);
          bytes += size;
          last = r.localSeq;
        }
        const id = this.nextBatch++;
        this.inFlight.set(id, last);
        this.sentUpTo = last;
        this.ws?.send(`{"type":"push","id":${id},"ops":[${texts.join(',')}]}`);
        this.pushed += texts.length;
      }
    } finally {
      this.pumping = false;
      if (this.pumpAgain) {
        this.pumpAgain = false;
        void this.pump();
      }
    }
  }
}
