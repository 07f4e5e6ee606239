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
  OpsPageSchema,
  rawElements,
  rawMember,
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
import { refusalLine, storePage } from './page.js';
import { outbox, outboxSize, positionKey, readPosition, writePosition, type SyncPosition } from './state.js';
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

/** A received page on its way to the store; `results` once its signatures are checked, `taken` once a batch holds it. */
type WaitingPage = { last: number; ws: WebSocket | null; results: CheckedOp[] | null; taken: boolean };

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
      caught_up: this.caughtUp,
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
        this.send({ type: 'hello', protocol: SYNC_PROTOCOL, stream: this.opts.binding.stream, token: this.opts.binding.token, node: this.opts.origin, since: this.position.cursor });
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
    if (typeof json === 'object' && json !== null && (json as { type?: unknown }).type === 'ops') return this.onOps(text, json);
    const parsed = FromRelaySchema.safeParse(json);
    if (!parsed.success) return this.fail(`the relay sent an invalid frame: ${parsed.error.issues[0]?.message ?? ''}`);
    const frame = parsed.data;
    switch (frame.type) {
      case 'welcome':
        this.connected = true;
        this.failures = 0;
        this.limits = frame.limits;
        this.head = frame.head;
        if (frame.head < (this.position.acked_seq ?? 0)) this.resume(frame.head, `the relay's head ${frame.head} is below seq ${this.position.acked_seq}, which it acknowledged for an op of ours`);
        void this.pump();
        break;
      case 'ops':
        break; // handled by onOps
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
    const texts = rawElements(rawMember(text, 'ops') ?? '')?.map((el) => rawMember(el, 'op'));
    if (!texts || texts.length !== rows.length || texts.some((t) => t === undefined)) return this.fail('the op texts could not be located in an ops frame');
    const first = rows[0]!.seq;
    const last = rows[rows.length - 1]!.seq;
    this.head = Math.max(this.head, last);
    // Backpressure: with enough pages waiting to be stored, stop reading the socket. The relay's
    // own send buffer then fills and it stops paging, so a long catch-up never sits in memory whole.
    const ws = this.ws;
    const page: WaitingPage = { last, ws, results: null, taken: false };
    const checked = (this.opts.check ?? checkOps)(texts as string[]).then((results) => (page.results = results));
    this.waiting.push(page);
    if (this.waiting.length >= MAX_WAITING_PAGES && ws && !ws.isPaused) ws.pause();
    let upTo = last;
    this.ingest = this.ingest
      .then(async () => {
        // Stored already, with the page before it.
        if (page.taken) return;
        await checked;
        // PGlite runs in this thread and its queries settle as microtasks: pages stored back to back would
        // never let the event loop reach its I/O phase, so status, the dashboard and the relay's pings
        // would wait for the whole catch-up. One batch per event-loop turn.
        await nextTurn();
        if (ws !== null && this.failedSockets.has(ws)) return;
        const batch = this.batchFrom(page);
        upTo = batch[batch.length - 1]!.last;
        await this.take(upTo, batch.length === 1 ? page.results! : batch.flatMap((p) => p.results!));
      })
      .catch((err: unknown) => {
        if (ws !== null) this.failedSockets.add(ws);
        const message = `storing the page of seqs ${first}..${upTo} failed: ${String(err)}`;
        if (ws === this.ws) this.fail(message);
        else this.setError(message, true);
      })
      .finally(() => {
        const at = this.waiting.indexOf(page);
        if (at >= 0) this.waiting.splice(at, 1);
        if (this.waiting.length <= MAX_WAITING_PAGES / 2 && ws?.isPaused) ws.resume();
      });
  }

  /**
   * `page` and the pages right after it that are checked already and came on the same connection, up to
   * MAX_OPS_PER_STORE ops: stored in one transaction, in order, with the cursor moved past the last.
   */
  private batchFrom(page: WaitingPage): WaitingPage[] {
    const batch = [page];
    page.taken = true;
    let ops = page.results!.length;
    for (let i = this.waiting.indexOf(page) + 1; i < this.waiting.length; i++) {
      const next = this.waiting[i]!;
      if (next.ws !== page.ws || next.results === null || ops + next.results.length > MAX_OPS_PER_STORE) break;
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
