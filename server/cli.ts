// `nxs relay ...`: serve a relay until a signal, and create streams on a running one.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ERROR_TABLE, isNexusError, NexusError, type ErrorCode } from '../protocol/errors.js';
import { CreateStreamResponseSchema, StreamName } from '../protocol/sync.js';
import { createLogger, parseLogLevel, type LogLevel } from '../infra/index.js';
import { defaultRelayDataDir } from './paths.js';
import { startRelay } from './relay.js';

/** What the relay commands touch. A node-agent `Io` fits. */
export type RelayIo = {
  env: NodeJS.ProcessEnv;
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /** Resolves when `serve` should stop; default: the first SIGINT or SIGTERM. */
  untilStopped?: () => Promise<void>;
};

const HELP = `nxs relay: run a relay, and make streams on it

  nxs relay serve [--host H] [--port P] [--data-dir DIR] [--database-url URL] [--metrics-token T]
                  [--log-level L] [--verbose] [--json]
      serve until SIGINT/SIGTERM. PGlite in DIR (default $NEXUS_HOME/relay), or PostgreSQL at URL
      (or $DATABASE_URL). The operator token is $NEXUS_RELAY_TOKEN, or made on first start and shown once.
      Logs are JSON lines on stderr at --log-level (debug|info|warn|error; default $NEXUS_LOG_LEVEL, else
      info; --verbose is debug). The banner goes to stderr; --json prints one JSON object on stdout instead.
      With --metrics-token (or $NEXUS_METRICS_TOKEN), /metrics needs Authorization: Bearer T.
  nxs relay stream create NAME --relay URL [--token T] [--json]
      create a stream; prints its token (shown once). The operator token is --token or $NEXUS_RELAY_TOKEN.
`;

/** The port `serve` listens on when not told. */
export const DEFAULT_RELAY_PORT = 7420;

function parse<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new NexusError('USAGE', `${(err as Error).message}\n${HELP}`);
  }
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

async function serveCommand(io: RelayIo, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, {
    host: { type: 'string' },
    port: { type: 'string' },
    'data-dir': { type: 'string' },
    'database-url': { type: 'string' },
    verbose: { type: 'boolean' },
    'log-level': { type: 'string' },
    'metrics-token': { type: 'string' },
    json: { type: 'boolean' },
  });
  if (positionals.length > 0) throw new NexusError('USAGE', `unexpected argument "${positionals[0]}"\n${HELP}`);
  const port = values.port === undefined ? DEFAULT_RELAY_PORT : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new NexusError('USAGE', `--port ${values.port} is not a port number`);
  if (values['data-dir'] !== undefined && values['database-url'] !== undefined) {
    throw new NexusError('USAGE', 'give --data-dir or --database-url, not both');
  }
  const databaseUrl = values['database-url'] ?? (values['data-dir'] === undefined ? io.env['DATABASE_URL'] || undefined : undefined);
  const dataDir = databaseUrl === undefined ? (values['data-dir'] ?? defaultRelayDataDir(io.env)) : undefined;
  const token = io.env['NEXUS_RELAY_TOKEN'] || undefined;
  const metricsToken = values['metrics-token'] ?? (io.env['NEXUS_METRICS_TOKEN'] || undefined);
  if (metricsToken !== undefined && metricsToken.length < 16) throw new NexusError('USAGE', 'the metrics token must be at least 16 characters');
  let level: LogLevel | undefined = values.verbose ? 'debug' : undefined;
  if (values['log-level'] !== undefined) {
    const parsed = parseLogLevel(values['log-level']);
    if (parsed === null) throw new NexusError('USAGE', `--log-level ${values['log-level']} is not one of debug, info, warn, error`);
    level = parsed;
  }
  const log = createLogger({ component: 'relay', env: io.env, sink: io.stderr, ...(level === undefined ? {} : { level }) });
  const relay = await startRelay({
    host: values.host ?? '127.0.0.1',
    port,
    log,
    ...(dataDir === undefined ? { databaseUrl: databaseUrl! } : { dataDir }),
    ...(token === undefined ? {} : { operatorToken: token }),
    ...(metricsToken === undefined ? {} : { metricsToken }),
  });
  try {
    if (values.json) {
      io.stdout(JSON.stringify({ url: relay.url, storage: relay.storage, data_dir: dataDir ?? null, operator_token: relay.operatorToken ?? null }) + '\n');
    } else {
      // The banner is for a person at a terminal; stdout stays free for --json. The token is never a log line.
      io.stderr(`relay listening on ${relay.url} (${relay.storage}${dataDir === undefined ? '' : ` in ${dataDir}`})\n`);
      if (relay.operatorToken !== undefined) {
        io.stderr(`operator token (shown this once; stored hashed): ${relay.operatorToken}\n`);
      }
    }
    await (io.untilStopped ?? untilSignal)();
  } finally {
    await relay.close();
  }
}

/** The relay's HTTP base for a URL given with an http(s) or ws(s) scheme. */
function httpBase(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new NexusError('USAGE', `--relay ${url} is not a URL`);
  }
  const scheme = { 'http:': 'http:', 'https:': 'https:', 'ws:': 'http:', 'wss:': 'https:' }[parsed.protocol];
  if (scheme === undefined) throw new NexusError('USAGE', `--relay ${url} is not an http(s) or ws(s) URL`);
  parsed.protocol = scheme;
  return parsed;
}

async function streamCommand(io: RelayIo, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { relay: { type: 'string' }, token: { type: 'string' }, json: { type: 'boolean' } });
  const [verb, name, ...rest] = positionals;
  if (verb !== 'create' || name === undefined || rest.length > 0) throw new NexusError('USAGE', `usage: nxs relay stream create NAME --relay URL\n${HELP}`);
  if (values.relay === undefined) throw new NexusError('USAGE', 'nxs relay stream create needs --relay URL');
  const token = values.token ?? (io.env['NEXUS_RELAY_TOKEN'] || undefined);
  if (token === undefined) throw new NexusError('USAGE', 'the operator token is needed: --token, or NEXUS_RELAY_TOKEN');
  if (!StreamName.safeParse(name).success) throw new NexusError('BAD_REQUEST', `stream name "${name}" must match ^[a-z0-9][a-z0-9_-]{0,63}$`);
  const base = httpBase(values.relay);
  let res: Response;
  try {
    res = await fetch(new URL('v1/streams', base.href.endsWith('/') ? base : `${base.href}/`), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (err) {
    throw new NexusError('RELAY_UNREACHABLE', `no answer from the relay at ${base.origin}: ${(err as Error).message}`);
  }
  const body = (await res.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
  if (!res.ok) {
    const code = body?.error?.code;
    if (code !== undefined && code in ERROR_TABLE) throw new NexusError(code as ErrorCode, body?.error?.message ?? `HTTP ${res.status}`);
    throw new NexusError('INTERNAL', `the relay answered HTTP ${res.status}`);
  }
  const created = CreateStreamResponseSchema.safeParse(body);
  if (!created.success) throw new NexusError('INTERNAL', 'the relay answered with something that is not a created stream');
  if (values.json) io.stdout(JSON.stringify({ name: created.data.name, token: created.data.token, relay: base.origin }) + '\n');
  else io.stdout(`stream ${created.data.name} created on ${base.origin}\nstream token (shown this once): ${created.data.token}\n`);
}

/**
 * `nxs relay <serve|stream create> ...`. `argv` is what follows `relay` (a leading `relay` is
 * skipped too). Resolves to the exit code: 0, 2 for bad input, 1 for failures of ours.
 */
export async function main(argv: string[], io: RelayIo): Promise<number> {
  const args = argv[0] === 'relay' ? argv.slice(1) : argv;
  const [command, ...rest] = args;
  const json = args.includes('--json');
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    io.stdout(HELP);
    return command === undefined ? 2 : 0;
  }
  try {
    if (command === 'serve') await serveCommand(io, rest);
    else if (command === 'stream') await streamCommand(io, rest);
    else throw new NexusError('USAGE', `unknown command "relay ${command}"\n${HELP}`);
    return 0;
  } catch (err) {
    const e = isNexusError(err) ? err : new NexusError('INTERNAL', err instanceof Error ? err.message : String(err));
    if (!isNexusError(err) && io.env['NEXUS_DEBUG']) io.stderr(`${(err as Error).stack ?? String(err)}\n`);
    if (json) io.stdout(JSON.stringify({ ok: false, error: { code: e.code, message: e.message } }) + '\n');
    else io.stderr(`error ${e.code}: ${e.message}\n`);
    return e.exitCode;
  }
}
