// The relay's logger: one function taking a level, a message and fields; the default writes JSON lines to stderr.

/** How loud a log line is. Bad input from a client is `debug`; a failure of ours is `error`. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Where the relay reports what happens. */
export type RelayLog = (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;

/** Writes `warn` and `error` (and `info` when `verbose`) to stderr as JSON lines. */
export function stderrLog(verbose = false): RelayLog {
  return (level, message, fields) => {
    if (level === 'debug' || (level === 'info' && !verbose)) return;
    process.stderr.write(JSON.stringify({ t: new Date().toISOString(), level, message, ...fields }) + '\n');
  };
}

/** Drops everything. */
export const silentLog: RelayLog = () => undefined;
