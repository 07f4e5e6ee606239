// The one backoff: exponential with full jitter, bounded, as a pure function of the attempt number.

/** Bounds of {@link backoffDelay}. */
export type BackoffOptions = { baseMs: number; maxMs: number };

/**
 * The delay before retry number `attempt` (0 for the first retry): a random point in
 * [base*2^attempt / 2, base*2^attempt], capped at `maxMs`. Half of it is fixed so retries never
 * bunch at zero; the other half is jitter so many clients retrying together spread out.
 * `random` is injected (a number in [0, 1)) so callers and tests decide where randomness comes from.
 */
export function backoffDelay(attempt: number, opts: BackoffOptions, random: () => number = Math.random): number {
  if (!Number.isInteger(attempt) || attempt < 0) throw new TypeError(`backoffDelay: attempt must be a non-negative integer, not ${attempt}`);
  const ceiling = Math.min(opts.maxMs, opts.baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}
