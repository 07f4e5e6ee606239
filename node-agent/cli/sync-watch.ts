// `nxs sync status --watch` and bind's follow-up: the node's sync of one workspace, followed live.
import type { Workspace } from '../adapters/workspace/index.js';
import { callNode } from '../host/rpc/client.js';
import { untilStopped, type Io } from './io.js';

export type Progress = {
  connected?: boolean;
  caught_up?: boolean;
  cursor?: number;
  head?: number;
  lag?: number;
  last_error?: string | null;
  refused?: boolean;
  history?: { from: number; through: number; complete: boolean } | null;
};

export type WatchOptions = {
  /** Rewrite one line in place (a terminal) instead of printing lines. */
  tty: boolean;
  /** Stop once caught up (bind, `--until-caught-up`); otherwise follow until `stop` resolves. */
  untilCaughtUp: boolean;
  /** How long at most (default: 30 minutes when following a catch-up, for ever otherwise). */
  limitMs?: number;
  /** Resolves when following for ever should end (default: Ctrl-C or SIGTERM). */
  stop?: Promise<void>;
  everyMs?: number;
};

/**
 * Ops per second taken in, over a window of about two seconds. Counted from the first cursor seen, not from
 * 0: a stream already caught up when the watch starts moves at 0 ops/s, however long it is.
 */
export function rateMeter(windowMs = 2_000): (cursor: number, now: number) => number {
  let from: { t: number; cursor: number } | null = null;
  let previous = 0;
  return (cursor, now) => {
    if (from === null) from = { t: now, cursor };
    else if (now - from.t >= windowMs) from = { t: now, cursor: previous };
    previous = cursor;
    return now > from.t ? Math.round(((cursor - from.cursor) * 1000) / Math.max(1, now - from.t)) : 0;
  };
}

/**
 * Follows the node's sync of `ws`: one line rewritten in place on a terminal; elsewhere a line when
 * it changes (and at most every few seconds while catching up). Ends early when sync is refused.
 */
export async function watchSync(io: Io, ws: Workspace, socket: string, opts: WatchOptions): Promise<Progress> {
  const limitMs = opts.limitMs ?? (opts.untilCaughtUp ? 30 * 60_000 : Infinity);
  const signal = opts.stop === undefined ? untilStopped() : null;
  let stopped = false;
  void (opts.stop ?? signal!.stopped).then(() => (stopped = true));
  const started = Date.now();
  let last: Progress = {};
  let lastPrint = 0;
  let lastLine = '';
  const rateOf = rateMeter();
  try {
    for (;;) {
      last = (await callNode(socket, 'sync.status', ws.id, {})) as Progress;
      const cursor = last.cursor ?? 0;
      const head = Math.max(last.head ?? 0, cursor);
      const done = last.caught_up === true && (last.lag ?? 0) === 0;
      const now = Date.now();
      const rate = rateOf(cursor, now);
      const pct = head > 0 ? Math.floor((cursor * 100) / head) : 100;
      const state = last.connected ? (done ? ' · caught up' : '') : ' · connecting';
      // A join: live from where it joined; the history before it comes in the background.
      const h = last.history;
      const history = h && !h.complete ? ` · history ${h.through} of ${h.from} in the background` : '';
      const line = `sync: ${cursor} of ${head} ops (${pct}%)${rate > 0 ? ` · ${rate} ops/s` : ''}${state}${history}${last.last_error ? ` · ${last.last_error}` : ''}`;
      if (opts.tty) io.stderr(`\r${line}\x1b[K`);
      else if (line.replace(/ · \d+ ops\/s/, '') !== lastLine.replace(/ · \d+ ops\/s/, '') || (!done && now - lastPrint >= 5_000)) {
        io.stderr(line + '\n');
        lastPrint = now;
      }
      lastLine = line;
      if ((opts.untilCaughtUp && done) || last.refused || stopped || now - started > limitMs) break;
      await new Promise((r) => setTimeout(r, opts.everyMs ?? 250));
      if (stopped) break;
    }
  } finally {
    signal?.dispose();
  }
  if (opts.tty) io.stderr('\n');
  return last;
}
