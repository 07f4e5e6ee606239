// Inside a sandbox with a host list: the bridge from a loopback port to the filtering proxy's socket, the variables
// that point programs at it, and the host list a CLI runtime gets by default (its provider's).
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { readCappedSync } from '../../../infra/index.js';

/** Where the filtering proxy's socket is bound inside the sandbox (under the sandbox's own /run, like the session's). */
export const PROXY_SOCKET_PATH = '/run/nexus/proxy.sock';

/** The loopback port the bridge listens on inside. The sandbox's network namespace is its own, so any port is free. */
export const PROXY_PORT = 3128;

const PROXY_URL = `http://127.0.0.1:${PROXY_PORT}`;

/** What every common HTTP client reads for its proxy; NO_PROXY empty, so not even loopback goes around it. */
export function proxyEnv(): Record<string, string> {
  return { HTTP_PROXY: PROXY_URL, HTTPS_PROXY: PROXY_URL, ALL_PROXY: PROXY_URL, http_proxy: PROXY_URL, https_proxy: PROXY_URL, all_proxy: PROXY_URL, NO_PROXY: '', no_proxy: '' };
}

function onPath(program: string, path: string | undefined): string | null {
  for (const dir of (path ?? '').split(delimiter)) if (dir !== '' && existsSync(join(dir, program))) return join(dir, program);
  return null;
}

const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The bridge without socat: one Node process piping each loopback connection to the proxy's socket. */
const NODE_BRIDGE = `const n=require('net');n.createServer(c=>{const u=n.connect(${JSON.stringify(PROXY_SOCKET_PATH)});c.on('error',()=>u.destroy());u.on('error',()=>c.destroy());c.pipe(u).pipe(c)}).listen(${PROXY_PORT},'127.0.0.1')`;

/** The port as /proc/net/tcp lists a socket listening on it at 127.0.0.1. */
const LISTENING = ` 0100007F:${PROXY_PORT.toString(16).toUpperCase().padStart(4, '0')} 00000000:0000 0A`;

/**
 * `command` behind the bridge: a shell starts the bridge (socat when it is on PATH, else a small Node script), waits
 * until it listens (at most about 5 s), then becomes the command. The bridge dies with the sandbox's PID namespace.
 */
export function bridged(command: readonly string[], env: NodeJS.ProcessEnv): string[] {
  const socat = onPath('socat', env['PATH']);
  const bridge = socat !== null ? `${sh(socat)} TCP-LISTEN:${PROXY_PORT},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${PROXY_SOCKET_PATH}` : `${sh(process.execPath)} -e ${sh(NODE_BRIDGE)}`;
  const script = `${bridge} </dev/null >/dev/null 2>&1 & i=0; while ! grep -q '${LISTENING}' /proc/net/tcp && [ $i -lt 500 ]; do i=$((i+1)); sleep 0.01; done; exec "$@"`;
  return ['/bin/sh', '-c', script, 'nxs-bridge', ...command];
}

/** `host:port` of a URL, the scheme's port when it names none. */
function hostOf(url: string): string | null {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || (u.protocol === 'http:' ? '80' : '443')}`;
  } catch {
    return null;
  }
}

const CONFIG_MAX_BYTES = 1024 * 1024;

/** The provider codex is configured for, read from its config.toml: the top-level `model_provider` and that provider's `base_url`. */
function codexBaseUrl(env: NodeJS.ProcessEnv): string | null | undefined {
  // A regular file only (the sandbox keeps it read-only, turn.ts): never a link or a FIFO a session put there.
  const read = readCappedSync(join(env['CODEX_HOME'] || join(env['HOME'] || homedir(), '.codex'), 'config.toml'), CONFIG_MAX_BYTES);
  // No config: the default provider.
  const text = 'text' in read ? read.text : '';
  const top = text.split(/^\s*\[/m)[0]!;
  const provider = /^\s*model_provider\s*=\s*"([^"]+)"/m.exec(top)?.[1];
  if (provider === undefined || provider === 'openai') return undefined;
  const table = text.split(/^\s*\[/m).find((s) => s.startsWith(`model_providers.${provider}]`) || s.startsWith(`model_providers."${provider}"]`));
  return table === undefined ? null : (/^\s*base_url\s*=\s*"([^"]+)"/m.exec(table)?.[1] ?? null);
}

/**
 * The hosts a CLI that calls its model itself reaches by default: its provider's. Claude Code: ANTHROPIC_BASE_URL, else
 * api.anthropic.com. Codex: its configured provider's base_url, else OPENAI_BASE_URL, else OpenAI's API and the hosts a
 * ChatGPT sign-in uses. `all` when the provider cannot be told (a cloud platform, a provider codex knows by name only).
 */
export function providerNetwork(kind: 'claude-code' | 'codex', env: NodeJS.ProcessEnv): string[] | 'all' {
  if (kind === 'claude-code') {
    if (env['CLAUDE_CODE_USE_BEDROCK'] || env['CLAUDE_CODE_USE_VERTEX']) return 'all';
    const host = hostOf(env['ANTHROPIC_BASE_URL'] || 'https://api.anthropic.com');
    return host === null ? 'all' : [host];
  }
  const configured = codexBaseUrl(env);
  if (configured === null) return 'all';
  if (configured === undefined && !env['OPENAI_BASE_URL']) return ['api.openai.com:443', 'chatgpt.com:443', 'auth.openai.com:443'];
  const host = hostOf(configured ?? env['OPENAI_BASE_URL']!);
  return host === null ? 'all' : [host];
}
