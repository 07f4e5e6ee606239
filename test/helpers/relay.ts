// A real relay for tests: `nxs relay serve` as a child process (for the cases that kill it), and the
// operator's stream creation, which every relay test does the same way.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { openPgliteStore, silentLog } from '../../server/index.js';
import { REPO } from './workspace.js';

/** The operator token the test relays run with. */
export const OPERATOR = 'test-relay-operator-token-0123456789abcdef';

/** Creates stream `name` on the relay at `url` and returns its token; any answer but 200 throws. */
export async function createStream(url: string, name: string, operator = OPERATOR): Promise<string> {
  const res = await fetch(`${url}/v1/streams`, { method: 'POST', headers: { authorization: `Bearer ${operator}` }, body: JSON.stringify({ name }) });
  if (res.status !== 200) throw new Error(`creating stream ${name} answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { token: string }).token;
}

/**
 * The migrated relay folder of this run, made once under the suite's NEXUS_HOME (initdb and the
 * migrations cost seconds): two files racing to make it each make one, and the first rename wins.
 */
async function relayTemplate(): Promise<string> {
  const template = join(inject('nexusHome'), 'relay-template');
  if (existsSync(template)) return template;
  const tmp = mkdtempSync(join(tmpdir(), 'nexus-relay-template-'));
  try {
    await (await openPgliteStore({ dataDir: tmp, log: silentLog })).close();
    renameSync(tmp, template);
  } catch (err) {
    if (!existsSync(template)) throw err;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return template;
}

/** Fresh relay folders, each a copy of the migrated template; `cleanup` removes every copy. */
export async function relayFolders(): Promise<{ fresh: () => string; cleanup: () => void }> {
  const template = await relayTemplate();
  const made: string[] = [];
  return {
    fresh: () => {
      const dir = mkdtempSync(join(tmpdir(), 'nexus-relay-'));
      made.push(dir);
      cpSync(template, dir, { recursive: true });
      return dir;
    },
    cleanup: () => {
      for (const d of made) rmSync(d, { recursive: true, force: true });
    },
  };
}

/**
 * `nxs relay serve` on a PGlite folder (or a PostgreSQL database, which several may share), with a
 * stable operator token; first on a free port, restarted on the port it had.
 */
export class RelayProcess {
  private child: ChildProcess | null = null;
  port = 0;
  stderr = '';

  constructor(
    readonly dir: string,
    readonly databaseUrl?: string,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts (or restarts, on the port it had) and resolves once it listens. */
  async start(): Promise<void> {
    const child = spawn(process.execPath, [join(REPO, 'bin', 'nxs'), 'relay', 'serve', '--port', String(this.port), ...(this.databaseUrl === undefined ? ['--data-dir', this.dir] : ['--database-url', this.databaseUrl]), '--json'], {
      env: { ...process.env, NEXUS_RELAY_TOKEN: OPERATOR },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const nl = out.indexOf('\n');
        if (nl < 0) return;
        this.port = Number(new URL((JSON.parse(out.slice(0, nl)) as { url: string }).url).port);
        resolve();
      });
      child.once('exit', (code, signal) => reject(new Error(`the relay exited (${code ?? signal}) before listening: ${this.stderr}`)));
    });
  }

  /** Signals the relay and waits for it to be gone. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill(signal);
    await exited;
  }

  createStream(name: string): Promise<string> {
    return createStream(this.url, name);
  }
}
