// `nxs node ...`: run, start, stop, status, register and unregister the per-machine node.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { NexusError } from '../../protocol/errors.js';
import { addToRegistry, nodePaths, nodeProcessAlive, readRegistry, removeFromRegistry, runningNode } from '../host/node/files.js';
import { packageRoot } from '../paths.js';
import { isUnreachable, rpc } from '../host/rpc/client.js';
import { findWorkspace } from '../adapters/workspace/index.js';
import { parse, printJson, type Io } from './io.js';

const USAGE = 'nxs node run | start [--tick-ms N] | stop | status | register | unregister [--json]';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function homeOf(io: Io) {
  return nodePaths(io.env['NEXUS_HOME'] ? io.env['NEXUS_HOME'] : undefined);
}

async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(100);
  }
  return false;
}

async function run(io: Io, tickMs: number | undefined): Promise<void> {
  const { startNode } = await import('../host/node/index.js');
  const node = await startNode({
    home: homeOf(io).home,
    log: (l) => io.stderr(`${new Date().toISOString()} ${l}\n`),
    ...(tickMs === undefined ? {} : { tickMs }),
  });
  const stop = () => void node.close();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  io.stdout(`node ${node.pid} running; socket ${node.socket}\n`);
  await node.closed;
}

async function start(io: Io, json: boolean, tickMs: number | undefined): Promise<void> {
  const paths = homeOf(io);
  const first = runningNode(paths);
  if (first) throw new NexusError('NODE_RUNNING', `a node already runs for ${paths.home}: pid ${first.pid}, socket ${first.socket}`, { pid: first.pid });
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  const logFd = openSync(paths.log, 'a', 0o600);
  const runArgs = tickMs === undefined ? [] : ['--tick-ms', String(tickMs)];
  const child = spawn(process.execPath, [join(packageRoot(), 'bin', 'nxs'), 'node', 'run', ...runArgs], {
    detached: true,
    stdio: ['ignore', logFd, logFd],
    env: { ...io.env, NEXUS_HOME: paths.home },
  });
  closeSync(logFd);
  child.unref();
  const up = await waitFor(async () => {
    const info = runningNode(paths);
    if (!info) return child.exitCode !== null ? Promise.reject(new NexusError('INTERNAL', `the node exited at start; see ${paths.log}`)) : false;
    return rpc(info.socket, 'GET', '/v1/node').then(
      () => true,
      () => false,
    );
  }, 30_000);
  if (!up) throw new NexusError('INTERNAL', `the node did not come up within 30 s; see ${paths.log}`);
  const info = runningNode(paths)!;
  if (json) printJson(io, { running: true, pid: info.pid, socket: info.socket, log: paths.log });
  else io.stdout(`node started: pid ${info.pid}, socket ${info.socket}, log ${paths.log}\n`);
}

async function stop(io: Io, json: boolean): Promise<void> {
  const paths = homeOf(io);
  const info = runningNode(paths);
  if (!info) {
    if (json) printJson(io, { stopped: false, running: false });
    else io.stdout('no node was running\n');
    return;
  }
  await rpc(info.socket, 'POST', '/v1/shutdown', {}).catch((err: unknown) => {
    if (!isUnreachable(err)) throw err;
    process.kill(info.pid, 'SIGTERM');
  });
  if (!(await waitFor(() => !nodeProcessAlive(info.pid), 20_000))) {
    process.kill(info.pid, 'SIGKILL');
  }
  if (json) printJson(io, { stopped: true, pid: info.pid });
  else io.stdout(`node ${info.pid} stopped\n`);
}

async function status(io: Io, json: boolean): Promise<void> {
  const paths = homeOf(io);
  const info = runningNode(paths);
  const registered = readRegistry(paths).workspaces;
  const live = info ? await rpc<{ workspaces: unknown[] }>(info.socket, 'GET', '/v1/node').catch(() => null) : null;
  const report = { running: info !== null, pid: info?.pid ?? null, socket: info?.socket ?? null, home: paths.home, registered, serving: live?.workspaces ?? [] };
  if (json) return printJson(io, report);
  io.stdout(info ? `node running: pid ${info.pid}, socket ${info.socket}\n` : `no node running for ${paths.home} (start one with \`nxs node start\`)\n`);
  for (const w of registered) io.stdout(`  registered ${w.id} ${w.root}\n`);
}

async function register(io: Io, json: boolean, on: boolean): Promise<void> {
  const paths = homeOf(io);
  const ws = findWorkspace(io.cwd, io.env);
  const changed = on ? addToRegistry(paths, ws.id, ws.paths.root) : removeFromRegistry(paths, ws.id);
  const info = runningNode(paths);
  if (info) {
    if (on) await rpc(info.socket, 'POST', '/v1/workspaces', { root: ws.paths.root });
    else await rpc(info.socket, 'DELETE', `/v1/workspaces/${ws.id}`);
  }
  const out = { workspace: ws.id, registered: on, changed, node_running: info !== null };
  if (json) return printJson(io, out);
  io.stdout(
    `${ws.id} ${on ? 'registered' : 'unregistered'}${changed ? '' : ' (it already was)'}` +
      (on && !info ? '; no node is running: start one with `nxs node start`' : '') +
      '\n',
  );
}

/** `--tick-ms N`: how often the node's ticker settles dead turns (default 30 s). Only for run and start. */
function tickOption(raw: string | undefined, verb: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  if (verb !== 'run' && verb !== 'start') throw new NexusError('USAGE', `--tick-ms applies to \`nxs node run\` and \`nxs node start\` only\nusage: ${USAGE}`);
  const ms = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(ms) || ms < 10) throw new NexusError('USAGE', `--tick-ms needs a whole number of milliseconds, at least 10 (got ${JSON.stringify(raw)})`);
  return ms;
}

export async function nodeCommand(io: Io, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' }, 'tick-ms': { type: 'string' } }, USAGE);
  const json = values.json ?? false;
  const [verb, ...rest] = positionals;
  if (rest.length > 0) throw new NexusError('USAGE', `usage: ${USAGE}`);
  const tickMs = tickOption(values['tick-ms'], verb);
  switch (verb) {
    case 'run':
      return run(io, tickMs);
    case 'start':
      return start(io, json, tickMs);
    case 'stop':
      return stop(io, json);
    case 'status':
      return status(io, json);
    case 'register':
      return register(io, json, true);
    case 'unregister':
      return register(io, json, false);
    default:
      throw new NexusError('USAGE', `usage: ${USAGE}`);
  }
}
