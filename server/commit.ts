// Group commit for one stream on this relay: pushes that arrive while a commit runs go in the next one.
import type { AppendResult, OpToAppend, StoredOp, StreamStore } from './storage/index.js';

/** One push's share of a commit: its results in order, and the stream head after the commit. */
export type Committed = { results: AppendResult[]; head: number };

/** Bounds of one group: past either, the rest waits for the next commit. */
export type GroupLimits = { maxOps: number; maxBytes: number };

type Waiting = { ops: readonly OpToAppend[]; bytes: number; resolve: (c: Committed) => void; reject: (err: unknown) => void };

/**
 * Appends for one stream. New pushes queue; each transaction takes everything queued (up to the group
 * limits), so a busy stream commits in fewer, larger transactions instead of one per push. Up to
 * `depth` transactions may be on their way at once, for a store that applies appends in the order they
 * were made ({@link StreamStore.appendDepth}): the next one is already waiting when the one before
 * commits, so the database never idles while this thread hands out acks. Each push resolves only once
 * its transaction's ops are kept (committed, or journaled: {@link StreamStore.append}); transactions settle in the order they were made, so pushes resolve in the
 * order they were queued; a failed transaction fails exactly the pushes in it. `onCommitted` receives the
 * rows each transaction stored, in commit order, before any of its pushes resolves.
 */
export class GroupCommitter {
  private readonly waiting: Waiting[] = [];
  private inFlight = 0;
  /** Settles transactions in the order they were made. */
  private settled: Promise<void> = Promise.resolve();

  constructor(
    private readonly stream: string,
    private readonly store: StreamStore,
    private readonly limits: GroupLimits,
    private readonly onCommitted: (rows: StoredOp[], head: number) => void,
  ) {}

  /** Whether a transaction is on its way (its commit notice is about to be handed over). */
  get busy(): boolean {
    return this.inFlight > 0;
  }

  append(ops: readonly OpToAppend[]): Promise<Committed> {
    let bytes = 0;
    for (const op of ops) bytes += op.text.length;
    return new Promise<Committed>((resolve, reject) => {
      this.waiting.push({ ops, bytes, resolve, reject });
      this.pump();
    });
  }

  private take(): Waiting[] {
    const group: Waiting[] = [];
    let ops = 0;
    let bytes = 0;
    while (this.waiting.length > 0) {
      const next = this.waiting[0]!;
      if (group.length > 0 && (ops + next.ops.length > this.limits.maxOps || bytes + next.bytes > this.limits.maxBytes)) break;
      group.push(this.waiting.shift()!);
      ops += next.ops.length;
      bytes += next.bytes;
    }
    return group;
  }

  private pump(): void {
    while (this.waiting.length > 0 && this.inFlight < Math.max(1, this.store.appendDepth)) {
      const group = this.take();
      this.inFlight += 1;
      const appended = this.store.append(
        this.stream,
        group.flatMap((w) => w.ops),
      );
      // Not `.catch` first: a rejection is handled below, in turn, so it is never reported as unhandled.
      appended.catch(() => undefined);
      this.settled = this.settled.then(async () => {
        let out: Awaited<typeof appended> | undefined;
        let failure: unknown;
        try {
          out = await appended;
        } catch (err) {
          failure = err;
        }
        // The next transaction goes out before this one's pushes are answered: the database works on
        // it while acks and frames are written.
        this.inFlight -= 1;
        this.pump();
        if (out === undefined) for (const w of group) w.reject(failure);
        else this.settle(group, out);
      });
    }
  }

  private settle(group: Waiting[], out: Awaited<ReturnType<StreamStore['append']>>): void {
    try {
      this.onCommitted(out.rows, out.head);
    } catch {
      // The feed re-reads from storage on its next notice; the pushes are committed either way.
    }
    let at = 0;
    for (const w of group) {
      w.resolve({ results: out.results.slice(at, at + w.ops.length), head: out.head });
      at += w.ops.length;
    }
  }
}
