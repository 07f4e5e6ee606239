// The one structured logger of the relay, the node and the sync client: JSON lines, four levels, a component.

/** How loud a line is. Bad input from a peer is `warn` at most; a failure of ours is `error`. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Every level, quietest first. */
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Extra fields of a line. Errors become `{name, message, code, stack}`; bigints become strings. */
export type LogFields = Record<string, unknown>;

/** Where the relay, the node and the sync client report what happens. */
export interface Logger {
  /** Lines below this level are dropped. */
  readonly level: LogLevel;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  log(level: LogLevel, msg: string, fields?: LogFields): void;
  /** Whether a line at `level` would be written: skip building costly fields when not. */
  enabled(level: LogLevel): boolean;
  /** A logger whose lines all carry `fields` too (`component` among them changes the component). */
  child(fields: LogFields): Logger;
}

/** Options of {@link createLogger}. */
export type LoggerOptions = {
  /** What writes: `relay`, `node`, `sync`, ... Every line carries it. */
  component: string;
  /** The threshold. Default: `NEXUS_LOG_LEVEL` from `env`, else `info`. */
  level?: LogLevel;
  /** Read for `NEXUS_LOG_LEVEL` (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** Receives each line, newline included (default: stderr). */
  sink?: (line: string) => void;
  /** The clock stamping lines (default: the wall clock). */
  now?: () => Date;
  /** Fields on every line. */
  fields?: LogFields;
};

/** The level named by `raw` (case-insensitive), or null when it names none. */
export function parseLogLevel(raw: string | undefined): LogLevel | null {
  const v = raw?.trim().toLowerCase();
  return (LOG_LEVELS as readonly string[]).includes(v ?? '') ? (v as LogLevel) : null;
}

function errorFields(err: Error): Record<string, unknown> {
  const out: Record<string, unknown> = { name: err.name, message: err.message };
  const code = (err as { code?: unknown }).code;
  if (code !== undefined) out['code'] = code;
  if (err.stack) out['stack'] = err.stack;
  return out;
}

function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return errorFields(value);
  if (typeof value === 'bigint') return value.toString();
  return value;
}

const CORE_KEYS = new Set(['ts', 'level', 'component', 'msg']);

type Core = { sink: (line: string) => void; now: () => Date; threshold: number; level: LogLevel };

function make(core: Core, component: string, base: LogFields): Logger {
  const write = (level: LogLevel, msg: string, fields?: LogFields) => {
    if (RANK[level] < core.threshold) return;
    // The four core keys come first and win: a field cannot forge the level or the time.
    const rec: Record<string, unknown> = { ts: core.now().toISOString(), level, component, msg };
    for (const src of [base, fields]) {
      if (!src) continue;
      for (const k of Object.keys(src)) if (!CORE_KEYS.has(k)) rec[k] = src[k];
    }
    let line: string;
    try {
      line = JSON.stringify(rec, replacer);
    } catch (err) {
      // A circular field must not cost the line (or throw into the caller).
      line = JSON.stringify({ ts: rec['ts'], level, component, msg, log_error: `fields not serialisable: ${(err as Error).message}` });
    }
    core.sink(line + '\n');
  };
  return {
    level: core.level,
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    log: write,
    enabled: (level) => RANK[level] >= core.threshold,
    child(fields) {
      const { component: c, ...rest } = fields;
      return make(core, typeof c === 'string' ? c : component, { ...base, ...rest });
    },
  };
}

/**
 * A logger writing one JSON object per line: `{"ts","level","component","msg",...fields}`. A
 * `NEXUS_LOG_LEVEL` that names no level is reported once (as a warning) and `info` is used.
 */
export function createLogger(opts: LoggerOptions): Logger {
  if (opts.level !== undefined && parseLogLevel(opts.level) === null) throw new TypeError(`createLogger: not a log level: ${String(opts.level)}`);
  const raw = (opts.env ?? process.env)['NEXUS_LOG_LEVEL'];
  const fromEnv = raw === undefined || raw === '' ? null : parseLogLevel(raw);
  const level = opts.level ?? fromEnv ?? 'info';
  const core: Core = {
    sink: opts.sink ?? ((line) => void process.stderr.write(line)),
    now: opts.now ?? (() => new Date()),
    threshold: RANK[level],
    level,
  };
  const logger = make(core, opts.component, opts.fields ?? {});
  if (opts.level === undefined && raw !== undefined && raw !== '' && fromEnv === null) {
    logger.warn('NEXUS_LOG_LEVEL names no level; using info', { value: raw, levels: LOG_LEVELS });
  }
  return logger;
}

/** Drops everything (tests, and callers that were given no logger). */
export const silentLogger: Logger = createLogger({ component: 'silent', level: 'error', sink: () => undefined });
