// A slow step, said once and followed on a terminal: the reason it is slow on one line, then the
// seconds counted in place (a terminal only: logs and pipes get the one line and nothing else).
import type { Io } from './io.js';

export type SlowStep = { done(summary?: string): void };

/** Says `why` on stderr; on a terminal, rewrites `  ... N s` every second until `done()`. */
export function slowStep(io: Io, why: string, everyMs = 1_000): SlowStep {
  io.stderr(why + '\n');
  if (!io.stderrIsTty) return { done: (summary) => void (summary && io.stderr(summary + '\n')) };
  const started = Date.now();
  const timer = setInterval(() => io.stderr(`\r  ... ${Math.round((Date.now() - started) / 1000)} s\x1b[K`), everyMs);
  timer.unref();
  return {
    done(summary) {
      clearInterval(timer);
      io.stderr(`\r\x1b[K${summary ? summary + '\n' : ''}`);
    },
  };
}
