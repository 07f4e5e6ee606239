// PGlite on a thread of its own: the relay's event loop stays free while a query runs.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { pgliteWasmModule } from '../../infra/pglite-wasm.js';
import { NexusError } from '../../protocol/errors.js';
import type { ThreadData, ThreadReply, ThreadRequest } from './pglite-worker.js';
import type { ExecOrOutcome, FirstTry, Sql, SqlDb } from './sql.js';

// PGlite runs its queries as synchronous WebAssembly. On the relay's own thread, every commit and every
// page read held up the sockets: parsing the next pushes, writing acks and frames, answering /healthz. On a
// thread of its own (pglite-worker.ts), the relay's JavaScript and PostgreSQL's work run side by side on two
// cores, and the event loop only ever waits for a message. Everything above the `SqlDb` interface (the
// append, migrations, transactions of several statements) stays on the relay's thread and sends its
// statements over.

/**
 * Where the process exposes `gc` (node --expose-gc, as the benchmarks run the relay), a message on
 * this channel has each database thread run a full collection, so memory can be read settled: a
 * collection on the relay's own thread never reaches a worker's heap.
 */
export const COLLECT_GARBAGE_CHANNEL = 'nexus:collect-garbage';

/**
 * The thread's file: beside this module, compiled (dist/server/storage/) or bundled (dist/bin/, where the
 * build puts it beside the chunks). Run from the sources (the test runner), this module is a .ts file and
 * Node starts no .ts file on a thread: the compiled one under dist/ is used (the suite builds dist/ first).
 */
function workerFile(): URL {
  return import.meta.url.endsWith('.ts') ? new URL('../../dist/server/storage/pglite-worker.js', import.meta.url) : new URL('./pglite-worker.js', import.meta.url);
}

/** A request to the thread before it is given its id. */
type Message = ThreadRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

type Pending = { resolve: (value: unknown) => void; reject: (err: unknown) => void };

/** An error from the database thread: its message, and PostgreSQL's SQLSTATE as `code` when it had one. */
class DatabaseError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'DatabaseError';
  }
}

/**
 * One PGlite database served by a worker thread, seen as a {@link SqlDb}. Calls may be made concurrently:
 * the thread runs one top-level statement (or one whole transaction) at a time, in the order asked. The
 * worker is referenced only while it has work, so a store left open never holds a process open.
 */
export class PgliteThread implements SqlDb {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private next = 1;
  private broken: Error | null = null;
  private closing = false;

  private constructor(wasmModule: WebAssembly.Module, private readonly onBroken?: (err: Error) => void) {
    const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    // A young generation of 4 MB, not V8's default of up to 16 MB per semi-space: the thread's garbage is
    // short-lived (statements and their results), and a fresh relay's RSS grew by ~20 MB as 500 nodes
    // said hello, for no measured gain in speed.
    // The process's compiled PostgreSQL (infra/pglite-wasm.ts): the thread shares its code instead of compiling its own.
    const data: ThreadData = { entry, collectChannel: COLLECT_GARBAGE_CHANNEL, wasmModule };
    this.worker = new Worker(workerFile(), {
      workerData: data,
      resourceLimits: { maxYoungGenerationSizeMb: 4 },
    });
    this.worker.unref();
    this.worker.on('message', (m: ThreadReply) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) this.worker.unref();
      if (m.ok) p.resolve(m.value);
      else p.reject(new DatabaseError(m.error.message, m.error.code));
    });
    const fail = (err: Error) => {
      if (this.broken === null && !this.closing) this.onBroken?.(err);
      this.broken ??= err;
      for (const p of this.pending.values()) p.reject(this.broken);
      this.pending.clear();
    };
    this.worker.on('error', (err) => fail(new NexusError('STORE_FAILED', `the relay's database thread failed: ${err.message}`)));
    this.worker.on('exit', (code) => fail(new NexusError('STORE_FAILED', `the relay's database thread ended (exit code ${code})`)));
  }

  /**
   * Opens (creating on first use) the PGlite database in `dataDir` on a new thread. Creating one runs
   * PostgreSQL's initdb in a WebAssembly instance of its own, whose memory (about 350 MB here) stays
   * resident until that thread's heap is next collected, which an idle relay may never get to. So a
   * new database is made by a thread that then ends, giving all of it back at once, and opened again
   * by the thread that serves it (one more open, ~0.7 s, on a relay's first start only). `onBroken`
   * hears once if the serving thread fails or ends other than by `close()`.
   */
  static async open(dataDir: string, settings: readonly string[], onBroken?: (err: Error) => void): Promise<PgliteThread> {
    if (!existsSync(join(dataDir, 'PG_VERSION'))) await (await PgliteThread.start(dataDir, settings)).close();
    return PgliteThread.start(dataDir, settings, onBroken);
  }

  private static async start(dataDir: string, settings: readonly string[], onBroken?: (err: Error) => void): Promise<PgliteThread> {
    const thread = new PgliteThread(await pgliteWasmModule(), onBroken);
    try {
      await thread.call({ op: 'open', dataDir, startParams: settings.flatMap((s) => ['-c', s]) });
      return thread;
    } catch (err) {
      await thread.worker.terminate();
      throw err;
    }
  }

  private call(message: Message, id = this.next++): Promise<unknown> {
    if (this.broken) return Promise.reject(this.broken);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) this.worker.ref();
      const request = { ...message, id } as ThreadRequest;
      this.worker.postMessage(request);
    });
  }

  private on(tx: number | undefined): Sql {
    return {
      query: async <T>(text: string, params?: unknown[]) => (await this.call({ op: 'query', text, params, tx })) as T[],
      exec: async (script: string) => (await this.call({ op: 'exec', script, tx })) as unknown[][],
    };
  }

  /** Statements outside any transaction: made once, not per call. */
  private readonly direct: Sql = this.on(undefined);

  query<T>(text: string, params?: unknown[]): Promise<T[]> {
    return this.direct.query<T>(text, params);
  }

  exec(script: string): Promise<unknown[][]> {
    return this.direct.exec(script);
  }

  async execOr(first: FirstTry, fallback: () => string): Promise<ExecOrOutcome> {
    const id = this.next++;
    const tried = (await this.call({ op: 'execOr', first }, id)) as ExecOrOutcome;
    if (!tried.fellBack) return tried;
    let text: string | null = null;
    let failure: unknown;
    try {
      text = fallback();
    } catch (err) {
      failure = err;
    }
    // The thread holds its queue until it hears back, so it always gets an answer: a script or none.
    const results = this.call({ op: 'fallback', of: id, script: text });
    if (text === null) {
      results.catch(() => undefined);
      throw failure;
    }
    return { fellBack: true, results: (await results) as unknown[][] };
  }

  async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    const tx = (await this.call({ op: 'begin' })) as number;
    let value: T;
    try {
      value = await fn(this.on(tx));
    } catch (err) {
      await this.call({ op: 'rollback', tx }).catch(() => undefined);
      throw err;
    }
    await this.call({ op: 'commit', tx });
    return value;
  }

  /** Closes the database, then ends the thread. */
  async close(): Promise<void> {
    this.closing = true;
    try {
      if (!this.broken) await this.call({ op: 'close' });
    } finally {
      await this.worker.terminate();
    }
  }
}
