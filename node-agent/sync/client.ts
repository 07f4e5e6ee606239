// The node's sync client for one workspace: pushes its outbox, takes in the stream, and keeps going
// across disconnects (backoff with jitter; unacknowledged ops are pushed again after every reconnect).
import WebSocket from 'ws';
import { OpPayloadSchema, type Op } from '../../protocol/ops.js';
import {
  DEFAULT_LIMITS,
  FromRelaySchema,
  SYNC_ERROR_TABLE,
  SYNC_PROTOCOL,
  syncUrl,
  type FromNode,
  type Limits,
} from '../../protocol/sync.js';
import { ingestOps, type Exec } from '../log/index.js';
import type { Db } from '../store/index.js';
import type { Binding } from './binding.js';
import { outbox, outboxSize, positionKey, readPosition, writePosition, type SyncPosition } from './state.js';

export type SyncStatus = {
  bound: true;
  relay: string;
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
  rejected: Record<string, number>;
  last_error: string | null;
  refused: boolean;
};

export type SyncClientOptions = {
  binding: Binding;
  /** This node's origin: ops carrying it were authored here and belong in the outbox. */
  origin: string;
  /** Runs store work in the workspace's command queue, so sync never interleaves with a command. */
  run: <T>(fn: (db: Db) => Promise<T>) => Promise<T>;
  log: (line: string) => void;
  /** Batches in flight before waiting for acks. */
  window?: number;
};

const MAX_BACKOFF_MS = 30_000;

export class SyncClient {
  private ws: WebSocket | null = null;
  private stopped = false;
  private refused = false;
  private connected = false;
  private caughtUp = false;
  private attempt = 0;
  private limits: Limits = DEFAULT_LIMITS;
  private head = 0;
  private position: SyncPosition = { cursor: 0, acked: 0, rejected: {} };
  private sentUpTo = 0;
  private inFlight = new Map<number, number>(); // batch id -> highest local_seq in it
  private nextBatch = 1;
  private pumping = false;
  private ingest: Promise<void> = Promise.resolve();
  private received = 0;
  private pushed = 0;
  private lastError: string | null = null;
  private outboxCount = 0;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private silenceTimer: NodeJS.Timeout | null = null;

  private readonly key: string;

  constructor(private readonly opts: SyncClientOptions) {
    this.key = positionKey(opts.binding.relay, opts.binding.stream);
  }

  async start(): Promise<void> {
    this.position = await this.opts.run((db) => readPosition(db, this.key));
    this.sentUpTo = this.position.acked;
    this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (this.silenceTimer) clearTimeout(this.silenceTimer);
    this.ws?.terminate();
    await this.ingest;
  }

  /** Something was written locally: push it when the connection allows. */
  kick(): void {
    void this.pump();
  }

  async status(): Promise<SyncStatus> {
    this.outboxCount = await this.opts.run((db) => outboxSize(db, this.opts.origin, this.position.acked));
    return {
      bound: true,
      relay: this.opts.binding.relay,
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
      last_error: this.lastError,
      refused: this.refused,
    };
  }

  private send(frame: FromNode): void {
    this.ws?.send(JSON.stringify(frame));
  }

  private connect(): void {
    if (this.stopped || this.refused) return;
    const ws = new WebSocket(syncUrl(this.opts.binding.relay), { maxPayload: 64 * 1024 * 1024, handshakeTimeout: 10_000 });
    this.ws = ws;
    ws.on('open', () => {
      this.send({ type: 'hello', protocol: SYNC_PROTOCOL, stream: this.opts.binding.stream, token: this.opts.binding.token, node: this.opts.origin, since: this.position.cursor });
      this.armSilence();
    });
    ws.on('message', (data, isBinary) => {
      this.armSilence();
      if (isBinary) return this.fail('the relay sent a binary frame');
      this.onFrame(data.toString());
    });
    ws.on('close', (code, reason) => {
      if (this.ws !== ws) return;
      this.connected = false;
      this.caughtUp = false;
      this.inFlight.clear();
      this.sentUpTo = this.position.acked;
      if (code !== 1000 && this.lastError === null) this.lastError = `closed ${code} ${reason.toString()}`.trim();
      this.scheduleReconnect();
    });
    ws.on('error', (err) => {
      this.lastError = err.message;
    });
  }

  /** A connection that has said nothing for two ping intervals is dead: drop it and reconnect. */
  private armSilence(): void {
    if (this.silenceTimer) clearTimeout(this.silenceTimer);
    this.silenceTimer = setTimeout(() => this.ws?.terminate(), this.limits.ping_interval_ms + this.limits.ping_timeout_ms + 5_000);
    this.silenceTimer.unref();
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.refused) return;
    const base = Math.min(MAX_BACKOFF_MS, 200 * 2 ** Math.min(this.attempt, 8));
    this.attempt++;
    const delay = base * (0.5 + Math.random());
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
    this.reconnectTimer.unref();
  }

  private fail(message: string): void {
    this.lastError = message;
    this.ws?.terminate();
  }

  private onFrame(text: string): void {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return this.fail('the relay sent a frame that is not JSON');
    }
    const parsed = FromRelaySchema.safeParse(json);
    if (!parsed.success) return this.fail(`the relay sent an invalid frame: ${parsed.error.issues[0]?.message ?? ''}`);
    const frame = parsed.data;
    switch (frame.type) {
      case 'welcome':
        this.connected = true;
        this.attempt = 0;
        this.lastError = null;
        this.limits = frame.limits;
        this.head = frame.head;
        void this.pump();
        break;
      case 'ops': {
        const ops = frame.ops;
        if (ops.length === 0) break;
        this.head = Math.max(this.head, ops[ops.length - 1]!.seq);
        this.ingest = this.ingest.then(() => this.take(ops.map((o) => ({ seq: o.seq, op: o.op as unknown as Op })))).catch((err: unknown) => {
          this.fail(`storing ops failed: ${String(err)}`);
        });
        break;
      }
      case 'caught_up':
        this.head = Math.max(this.head, frame.head);
        void this.ingest.then(() => {
          this.caughtUp = true;
        });
        break;
      case 'ack': {
        const upTo = this.inFlight.get(frame.id);
        this.inFlight.delete(frame.id);
        this.head = Math.max(this.head, frame.head);
        if (upTo !== undefined && upTo > this.position.acked) {
          this.position = { ...this.position, acked: upTo };
          const pos = this.position;
          void this.opts.run((db) => writePosition(db, this.key, pos)).then(() => this.pump());
        } else void this.pump();
        break;
      }
      case 'error': {
        this.lastError = `${frame.code}: ${frame.message}`;
        if (!SYNC_ERROR_TABLE[frame.code].retry) {
          this.refused = true;
          this.opts.log(`sync refused by the relay: ${this.lastError}`);
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

  /** Stores a page of stream ops and moves the cursor past them, in one transaction. */
  private async take(page: Array<{ seq: number; op: Op }>): Promise<void> {
    const rejected = { ...this.position.rejected };
    const good: Op[] = [];
    for (const { op } of page) {
      const payload = OpPayloadSchema.safeParse({ kind: op.kind, body: op.body });
      // Kinds newer than this node are kept (inert in folds); a known kind with a bad body is refused.
      const known = OpPayloadSchema.options.some((o) => o.shape.kind.value === op.kind);
      if (known && !payload.success) {
        rejected['bad_body'] = (rejected['bad_body'] ?? 0) + 1;
        continue;
      }
      good.push({ id: op.id, workspace: op.workspace, origin: op.origin, lamport: op.lamport, ts: op.ts, kind: op.kind, operation: op.operation, thread: op.thread, session: op.session, body: op.body } as Op);
    }
    const cursor = page[page.length - 1]!.seq;
    const next: SyncPosition = { ...this.position, cursor: Math.max(cursor, this.position.cursor), rejected };
    await this.opts.run((db) =>
      db.transaction(async (tx: Exec) => {
        await ingestOps(tx, good);
        await writePosition(tx, this.key, next);
      }),
    );
    this.position = { ...next, acked: this.position.acked };
    this.received += page.length;
    if (this.received % 10_000 < page.length) this.opts.log(`sync ${this.opts.binding.stream}: ${this.received} ops taken in, cursor ${this.position.cursor} of ${this.head}`);
  }

  /** Sends outbox batches while the window allows. */
  private async pump(): Promise<void> {
    if (this.pumping || !this.connected || this.stopped) return;
    this.pumping = true;
    try {
      const window = this.opts.window ?? 4;
      while (this.connected && this.inFlight.size < window) {
        const rows = await this.opts.run((db) => outbox(db, this.opts.origin, this.sentUpTo, this.limits.max_ops_per_push));
        if (rows.length === 0) break;
        const ops: unknown[] = [];
        let bytes = 64;
        let last = this.sentUpTo;
        for (const r of rows) {
          const op = { id: r.id, workspace: r.workspace, origin: r.origin, lamport: r.lamport, ts: r.ts, kind: r.kind, operation: r.operation, thread: r.thread, session: r.session, body: r.body, ...(r.sig ? { sig: r.sig } : {}) };
          const size = Buffer.byteLength(JSON.stringify(op)) + 1;
          if (ops.length > 0 && bytes + size > this.limits.max_frame_bytes - 1024) break;
          ops.push(op);
          bytes += size;
          last = r.localSeq;
        }
        const id = this.nextBatch++;
        this.inFlight.set(id, last);
        this.sentUpTo = last;
        this.ws?.send(JSON.stringify({ type: 'push', id, ops }));
        this.pushed += ops.length;
      }
    } finally {
      this.pumping = false;
    }
  }
}
