// `nxs ui`: the node's web dashboard. Prints its URL (which carries the node's secret) and, on a
// desktop, opens it. --host/--port move where the node listens; nothing listens beyond loopback otherwise.
import { spawn } from 'node:child_process';
import { NexusError } from '../../protocol/errors.js';
import { nodePaths, runningNode } from '../host/node/files.js';
import { callNode } from '../host/rpc/client.js';
import { printJson, type Io } from './io.js';
import { bool, str, type Verb } from './spec.js';

/** The command that opens a URL in the desktop's browser, or null on a machine with no desktop. */
export function opener(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): string[] | null {
  if (platform === 'darwin') return ['open'];
  if (platform === 'win32') return ['cmd', '/c', 'start', '""'];
  return env['DISPLAY'] || env['WAYLAND_DISPLAY'] ? ['xdg-open'] : null;
}

function tryOpen(cmd: string[], url: string): boolean {
  try {
    const child = spawn(cmd[0]!, [...cmd.slice(1), url], { detached: true, stdio: 'ignore' });
    child.on('error', () => undefined);
    child.unref();
    return true;
  } catch {
    return false;
  }
}

function portOption(raw: string | undefined): number | null {
  if (raw === undefined) return null;
  const port = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(port >= 0 && port <= 65535)) throw new NexusError('USAGE', `--port needs a port number 0-65535 (got ${JSON.stringify(raw)})`);
  return port;
}

export const UI_VERBS: readonly Verb[] = [
  {
    path: ['ui'],
    summary: "the node's web dashboard: print its URL (and open it on a desktop)",
    flags: {
      host: { type: 'string', value: 'H', help: 'listen on H instead of loopback (the URL secret guards every request)' },
      port: { type: 'string', value: 'P', help: 'listen on port P (0: any free one)' },
      'no-open': { type: 'boolean', help: 'only print the URL' },
    },
    details: 'The URL carries a secret kept in NEXUS_HOME/node/ui-secret (mode 600); whoever holds it can read every workspace the node serves, and reply and withdraw as a person.',
    run: async (io: Io, a) => {
      const host = str(a, 'host') ?? null;
      const port = portOption(str(a, 'port'));
      if (host !== null && !/^[A-Za-z0-9.:_-]{1,253}$/.test(host)) throw new NexusError('USAGE', `--host ${JSON.stringify(host)} is not a host name or address`);
      const paths = nodePaths(io.env['NEXUS_HOME'] ? io.env['NEXUS_HOME'] : undefined);
      const node = runningNode(paths);
      if (!node) throw new NexusError('NODE_NOT_RUNNING', `no node runs for ${paths.home}: the dashboard is served by the node (start it with \`nxs node start\`)`);
      const info = await callNode(node.socket, 'node.ui', null, { host, port });
      const cmd = a.json || bool(a, 'no-open') ? null : opener(io.env);
      const opened = cmd !== null && tryOpen(cmd, info.url);
      if (a.json) return printJson(io, { ...info, node_pid: node.pid, opened });
      io.stdout(`${info.url}\n`);
      if (!info.loopback) io.stderr(`listening on ${info.host}:${info.port}, beyond loopback: anyone who can reach it needs the secret in the URL\n`);
    },
  },
];
