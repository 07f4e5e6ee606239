// Polling for a condition in tests that drive real processes: no timing is asserted, only eventual state.
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `check` every `everyMs` until it returns a value; a throw counts as "not yet". Fails with the last error after the deadline. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(everyMs);
  }
}

/** Polls `ready` until it holds (a throw counts as "not yet"); fails naming `what` after the deadline. */
export async function waitFor(what: string, ready: () => boolean | Promise<boolean>, timeoutMs = 60_000, everyMs = 100): Promise<void> {
  await until(what, async () => ((await ready()) ? true : undefined), timeoutMs, everyMs);
}
