// The clock's port: the engine asks for a workspace's tick at an instant (a lease's contention deadline, a
// channel step's window, a remote persona's deadline), and whoever hosts it keeps that promise. A node
// arms timers (host/node/ticks.ts); the in-process test host's clock records the instants and a test runs
// them by moving it. The timers a scheduler arms are a port too, so a test clock can drive a node's.

/** Runs the workspace's tick at the instants asked for. */
export interface Scheduler {
  /** Asks for a tick at `at` (ms since the epoch); an instant already past is run at once. */
  schedule(at: number): void;
}

/** A cancellable timer, as `setTimeout` gives one. */
export type Timer = { cancel(): void };

/** Time and timers, as a scheduler reads and arms them: the process's own, or a test clock's. */
export interface Timers {
  now(): number;
  /** Calls `fn` once, `ms` from now; the timer never holds the process open. */
  after(ms: number, fn: () => void): Timer;
}

/** setTimeout's longest delay: a later instant is reached by arming again. */
const LONGEST = 2 ** 31 - 1;

/** The process's clock and timers (unref'd: a pending tick never keeps a process alive). */
export const realTimers: Timers = {
  now: () => Date.now(),
  after: (ms, fn) => {
    const t = setTimeout(fn, Math.max(0, Math.min(ms, LONGEST)));
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};
