// Memory per idle connection: our relay (a child process) against nats-server, both read from /proc.
import { readdirSync, readFileSync } from 'node:fs';

/** The resident set of a process in bytes (Linux /proc), or null where it cannot be read. */
export function rssBytes(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** The pid of the one nats-server process of this machine, or null when there is none (or several). */
export function natsServerPid(): number | null {
  const found: number[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return null;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/comm`, 'utf8').trim() === 'nats-server') found.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return found.length === 1 ? found[0]! : null;
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * RSS once two readings in a row, each after `collect`, agree within 1 MiB (at most 8 readings): a
 * reading taken while a process is still giving memory back says nothing about what it holds. V8
 * resizing the relay's young generation (up to ~30 MB) made whole runs read negative, so the bench
 * starts that relay with it held at full size; readings still spread between runs, hence the median.
 */
async function steadyRss(pid: number, collect: () => Promise<void>): Promise<number | null> {
  let last: number | null = null;
  for (let i = 0; i < 8; i++) {
    await collect();
    const now = rssBytes(pid);
    if (now === null) return null;
    if (last !== null && Math.abs(now - last) < 1024 * 1024) return now;
    last = now;
  }
  return last;
}

/**
 * Bytes of resident memory `pid` gained per connection while `open(n)` connections are held idle:
 * RSS read after things settle (and `collect`, a garbage collection where the process has one to
 * ask for), before and after. `open` resolves to a closer.
 */
export async function perConnection(pid: number, n: number, collect: () => Promise<void>, open: (n: number) => Promise<() => Promise<void>>): Promise<number | null> {
  await settle(1_000);
  const before = await steadyRss(pid, collect);
  const close = await open(n);
  try {
    await settle(1_500);
    const after = await steadyRss(pid, collect);
    return before === null || after === null ? null : (after - before) / n;
  } finally {
    await close();
  }
}

/**
 * The resident set of `pid` once it has settled: a second's pause, `collect` (a full GC where the
 * process takes one), and a pause again, since WebAssembly memories a GC freed leave the process
 * only once V8 unmaps them. The same procedure for the relay and for the bare PGlite reference.
 */
export async function settledRss(pid: number, collect: () => Promise<void>): Promise<number | null> {
  await settle(1_000);
  await collect();
  await settle(500);
  await collect();
  return rssBytes(pid);
}

/** Polls the resident set of `pid` every `everyMs` until `stop()`, which returns the highest reading. */
export function rssPeak(pid: number, everyMs = 25): { stop(): number | null } {
  let peak: number | null = rssBytes(pid);
  const timer = setInterval(() => {
    const now = rssBytes(pid);
    if (now !== null && (peak === null || now > peak)) peak = now;
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const now = rssBytes(pid);
      return now !== null && (peak === null || now > peak) ? now : peak;
    },
  };
}
