// `nxs relay ...`: serve a relay until a signal, and administer streams on a running one.
import { createLogger, parseLogLevel, storeCacheSetting, type LogLevel } from '../infra/index.js';
import { internalError, isNexusError, NexusError } from '../protocol/errors.js';
import { parse, type RelayIo } from './cli-common.js';
import { STREAM_HELP, streamCommand } from './cli-streams.js';
import { defaultRelayDataDir } from './paths.js';
import { startRelay } from './relay.js';
import { readTlsFiles } from './tls.js';
import { redactDatabaseUrl } from './storage/index.js';

export type { RelayIo } from './cli-common.js';

const HELP = `nxs relay: run a relay, and administer its streams

  nxs relay serve [--host H] [--port P] [--data-dir DIR] [--database-url URL] [--metrics-token T]
                  [--tls-cert FILE --tls-key FILE] [--hello-timeout-ms MS] [--max-pending-per-address N]
                  [--log-level L] [--verbose] [--json]
      serve until SIGINT/SIGTERM. PGlite in DIR (default $NEXUS_HOME/relay), or PostgreSQL at URL
      (or $DATABASE_URL). The operator token is $NEXUS_RELAY_TOKEN, or made on first start and shown once.
      Logs are JSON lines on stderr at --log-level (debug|info|warn|error; default $NEXUS_LOG_LEVEL, else
      info; --verbose is debug). The banner goes to stderr; --json prints one JSON object on stdout instead.
      With --metrics-token (or $NEXUS_METRICS_TOKEN), /metrics needs Authorization: Bearer T.
      With --tls-cert and --tls-key (PEM; or $NEXUS_RELAY_TLS_CERT and $NEXUS_RELAY_TLS_KEY) it serves https://
      and wss:// only, prints the certificate's pin (sha256:...) for nxs sync bind --relay-fingerprint, and reads
      both files again on SIGHUP: new connections get the new certificate, open ones are kept. Listening beyond
      loopback without TLS is allowed (a TLS proxy may sit in front) but warned about at start and in /healthz.
      A socket that sends no hello within --hello-timeout-ms (default 5000) is closed (HELLO_TIMEOUT); more than
      --max-pending-per-address (default 64) sockets from one address waiting for their hello are refused (HTTP 429).
  nxs relay stream create | list | delete | rotate-token ...
      the operator's stream commands; see nxs relay stream --help
`;

/** The port `serve` listens on when not told. */
export const DEFAULT_RELAY_PORT = 7420;

function onSighup(reload: () => void): () => void {
  process.on('SIGHUP', reload);
  return () => process.off('SIGHUP', reload);
}

/** A positive whole number of a flag, or undefined when not given. */
function positiveInt(values: Record<string, unknown>, flag: string): number | undefined {
  const raw = values[flag];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new NexusError('USAGE', `--${flag} ${String(raw)} is not a positive whole number`);
  return n;
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

/** A PostgreSQL URL, checked before anything connects; a bad one is named (password hidden). */
function checkDatabaseUrl(url: string): string {
  let scheme: string;
  try {
    scheme = new URL(url).protocol;
  } catch {
    throw new NexusError('USAGE', `--database-url ${redactDatabaseUrl(url)} is not a URL (postgres://user:password@host:5432/db)`);
  }
  if (scheme !== 'postgres:' && scheme !== 'postgresql:') {
    throw new NexusError('USAGE', `--database-url ${redactDatabaseUrl(url)} is not a postgres:// or postgresql:// URL`);
  }
  return url;
}

/** The options of `nxs relay serve` (the docs' commands are checked against them). */
export const SERVE_OPTIONS = {
  host: { type: 'string' },
  port: { type: 'string' },
  'data-dir': { type: 'string' },
  'database-url': { type: 'string' },
  verbose: { type: 'boolean' },
  'log-level': { type: 'string' },
  'metrics-token': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'hello-timeout-ms': { type: 'string' },
  'max-pending-per-address': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

async function serveCommand(io: RelayIo, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, SERVE_OPTIONS, HELP);
  if (values.help) return io.stdout(HELP);
  if (positionals.length > 0) throw new NexusError('USAGE', `unexpected argument "${positionals[0]}"\n${HELP}`);
  const port = values.port === undefined ? DEFAULT_RELAY_PORT : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new NexusError('USAGE', `--port ${values.port} is not a port number`);
  if (values['data-dir'] !== undefined && values['database-url'] !== undefined) {
    throw new NexusError('USAGE', 'give --data-dir or --database-url, not both');
  }
  const rawUrl = values['database-url'] ?? (values['data-dir'] === undefined ? io.env['DATABASE_URL'] || undefined : undefined);
  const databaseUrl = rawUrl === undefined ? undefined : checkDatabaseUrl(rawUrl);
  const dataDir = databaseUrl === undefined ? (values['data-dir'] ?? defaultRelayDataDir(io.env)) : undefined;
  // A relay on PGlite sizes its store's cache from the environment: a bad value is refused before anything is made.
  if (dataDir !== undefined) storeCacheSetting(io.env);
  const token = io.env['NEXUS_RELAY_TOKEN'] || undefined;
  const metricsToken = values['metrics-token'] ?? (io.env['NEXUS_METRICS_TOKEN'] || undefined);
  if (metricsToken !== undefined && metricsToken.length < 16) throw new NexusError('USAGE', 'the metrics token must be at least 16 characters');
  const certFile = values['tls-cert'] ?? (io.env['NEXUS_RELAY_TLS_CERT'] || undefined);
  const keyFile = values['tls-key'] ?? (io.env['NEXUS_RELAY_TLS_KEY'] || undefined);
  if ((certFile === undefined) !== (keyFile === undefined)) throw new NexusError('USAGE', 'give --tls-cert and --tls-key together');
  const tls = certFile === undefined ? undefined : readTlsFiles(certFile, keyFile!);
  const helloTimeoutMs = positiveInt(values, 'hello-timeout-ms');
  const maxPendingPerAddress = positiveInt(values, 'max-pending-per-address');
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
    ...(tls === undefined ? {} : { tls }),
    ...(helloTimeoutMs === undefined ? {} : { helloTimeoutMs }),
    ...(maxPendingPerAddress === undefined ? {} : { maxPendingPerAddress }),
    // The port is held by now; making the store is the slow part of a first start, so it is said.
    onCreatingStore: (dir) => io.stderr(`creating the relay's store in ${dir} (first start: a copy of the packaged empty database, or PGlite's initdb where there is none, which can take a minute)...\n`),
  });
  // A certificate renewed on disk is served from the next handshake on; a file that does not read keeps the old one.
  const unsubscribe =
    tls === undefined
      ? () => undefined
      : (io.onReload ?? onSighup)(() => {
          try {
            const pin = relay.reloadTls(readTlsFiles(certFile!, keyFile!));
            if (!values.json) io.stderr(`certificate reloaded; its pin: ${pin}\n`);
          } catch (err) {
            log.error('tls certificate not reloaded; the previous one is still served', { error: err });
          }
        });
  try {
    if (values.json) {
      io.stdout(
        JSON.stringify({
          url: relay.url,
          storage: relay.storage,
          data_dir: dataDir ?? null,
          operator_token: relay.operatorToken ?? null,
          fingerprint: relay.fingerprint ?? null,
          warnings: relay.warnings,
        }) + '\n',
      );
    } else {
      // The banner is for a person at a terminal; stdout stays free for --json. The token is never a log line.
      io.stderr(`relay listening on ${relay.url} (${relay.storage}${dataDir === undefined ? '' : ` in ${dataDir}`})\n`);
      if (relay.fingerprint !== undefined) io.stderr(`certificate pin (for nxs sync bind --relay-fingerprint): ${relay.fingerprint}\n`);
      for (const w of relay.warnings) io.stderr(`warning: ${w}\n`);
      if (relay.operatorToken !== undefined) {
        io.stderr(`operator token (shown this once; stored hashed): ${relay.operatorToken}\n`);
      }
    }
    await (io.untilStopped ?? untilSignal)();
  } finally {
    unsubscribe();
    await relay.close();
  }
}

/**
 * `nxs relay <serve|stream ...> ...`. `argv` is what follows `relay` (a leading `relay` is
 * skipped too). Resolves to the exit code: 0, 2 for bad input, 1 for failures of ours (or of the OS).
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
    const e = internalError(err);
    if (!isNexusError(err) && io.env['NEXUS_DEBUG']) io.stderr(`${(err as Error).stack ?? String(err)}\n`);
    if (json) io.stdout(JSON.stringify({ ok: false, error: { code: e.code, message: e.message } }) + '\n');
    else io.stderr(`error ${e.code}: ${e.message}\n`);
    return e.exitCode;
  }
}

export { STREAM_HELP, STREAM_OPTIONS, STREAM_VERBS } from './cli-streams.js';
