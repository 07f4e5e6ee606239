// The node's clock: the engine's Scheduler for each served workspace (a tick at each instant it asked for,
// so a lease's deadlines and a step's windows pass with nobody around), and the ticker that settles dead
// turns every few seconds. Both arm their timers through the kernel's Timers port, so a test clock drives them.
import { realTimers, type Scheduler, type Timer, type Timers } from '../../kernel/index.js';

/** How close to its instant a tick may fire and still count as that instant's (timers fire a little early or late). */
const SLACK_MS = 10;

/**
 * One workspace's Scheduler on timers: the instants asked for, and one timer armed for the earliest still
 * ahead. At it, the instants due are dropped, `tick` runs, and the next is armed once it has finished.
 */
export class TickScheduler implements Scheduler {
  private readonly instants = new Set<number>();
  private timer: Timer | null = null;
  private closed = false;

  constructor(
    private readonly tick: () => Promise<unknown>,
    private readonly onError: (err: unknown) => void,
    private readonly timers: Timers = realTimers,
  ) {}

  schedule(at: number): void {
    if (this.closed) return;
    this.instants.add(at);
    this.arm();
  }

  /** The instants asked for and not yet ticked, earliest first. */
  get pending(): number[] {
    return [...this.instants].sort((a, b) => a - b);
  }

  /** Drops every instant and the timer: the workspace is no longer served here. */
  close(): void {
    this.closed = true;
    this.instants.clear();
    this.timer?.cancel();
    this.timer = null;
  }

  private arm(): void {
    this.timer?.cancel();
    this.timer = null;
    if (this.closed || this.instants.size === 0) return;
    const next = Math.min(...this.instants);
    this.timer = this.timers.after(next - this.timers.now(), () => {
      this.timer = null;
      const now = this.timers.now();
      for (const at of this.instants) if (at <= now + SLACK_MS) this.instants.delete(at);
      void this.tick()
        .catch(this.onError)
        .finally(() => this.arm());
    });
  }
}

/**
 * Every `everyMs`, runs `tick` for each workspace `ids()` names; a workspace whose previous tick has not
 * finished is skipped, so ticks never pile up in its queue.
 */
export class Ticker {
  private readonly ticking = new Set<string>();
  private timer: Timer | null = null;
  private closed = false;

  constructor(
    private readonly everyMs: number,
    private readonly ids: () => Iterable<string>,
    private readonly tick: (id: string) => Promise<unknown>,
    private readonly timers: Timers = realTimers,
  ) {
    this.arm();
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.timer = null;
  }

  private arm(): void {
    if (this.closed) return;
    this.timer = this.timers.after(this.everyMs, () => {
      for (const id of this.ids()) {
        if (this.ticking.has(id)) continue;
        this.ticking.add(id);
        // `tick` reports its own failures; one that throws anyway must not stop the ticker.
        void this.tick(id)
          .catch(() => undefined)
          .finally(() => this.ticking.delete(id));
      }
      this.arm();
    });
  }
}
