// npm start: one process runs a relay and the node on embedded defaults, with a demo workspace bound to a stream.
// Never on a fixed port: the relay is asked for a port this test holds, so the fallback to a free one runs too.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, runCli } from '../helpers/workspace.js';

const home = mkdtempSync(join(tmpdir(), 'nexus-start-'));
let taken: Server;
let takenPort: number;

beforeAll(async () => {
  taken = createServer();
  taken.listen(0, '127.0.0.1');
  await once(taken, 'listening');
  takenPort = (taken.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((r) => taken.close(r));
  rmSync(home, { recursive: true, force: true });
});

type Started = { child: ChildProcess; out: () => string; exited: Promise<number | null> };

/** Starts `npm start`'s program and waits for its "ready" words (or its end). */
async function launch(): Promise<Started> {
  const child = spawn(process.execPath, [join(REPO, 'dist', 'launcher', 'main.js')], {
    env: { ...process.env, NEXUS_HOME: home, NEXUS_RELAY_PORT: String(takenPort) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const deadline = Date.now() + 150_000;
  while (!out.includes('Ctrl-C stops') && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 200));
  return { child, out: () => out, exited };
}

/** Stops it with Ctrl-C (SIGKILL when it does not go), and returns its exit code. */
async function stop(s: Started): Promise<number | null> {
  if (s.child.exitCode !== null) return s.child.exitCode;
  s.child.kill('SIGINT');
  const timer = setTimeout(() => s.child.kill('SIGKILL'), 30_000);
  try {
    return await s.exited;
  } finally {
    clearTimeout(timer);
  }
}

describe('npm start', () => {
  it('serves a relay (on a free port when the asked one is taken) and a node, walks a commission through, and stops cleanly on SIGINT', { timeout: 240_000 }, async () => {
    const first = await launch();
    try {
      const out = first.out();
      expect(out, out).toContain('Ctrl-C stops');
      expect(out).toContain(`port ${takenPort} is taken; the relay takes a free one`);
      const relayPort = Number(/relay http:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1]);
      expect(relayPort).toBeGreaterThan(0);
      expect(relayPort).not.toBe(takenPort);
      expect(out).toMatch(/the relay's operator token \(shown this once; kept in .*launcher\.json\): \S{20,}/);
      expect(out).toContain('its first start creates a PGlite store, a copy of the packaged empty one');
      // The dashboard is among the next steps; the relay's JSON lines are in their file, not in the walk-through.
      expect(out).toMatch(/dashboard: http:\/\/nxs-[0-9a-f]{20}\.localhost:\d+\/\?k=\S+/);
      expect(out).toContain(`relay log: ${join(home, 'relay.log')}`);
      expect(out.split('\n').filter((l) => l.startsWith('{"ts"'))).toEqual([]);
      expect(readFileSync(join(home, 'relay.log'), 'utf8')).toContain('"component":"relay"');
      expect(out).toMatch(/awaiting you \(answered by \w{4}\/planner\)/);

      const dir = join(home, 'workspaces', 'demo');
      const status = await runCli('nxc', ['status', '--all', '--json'], dir, { env: { NEXUS_HOME: home } });
      expect(status.code, status.stderr).toBe(0);
      const op = status.json.operations[0];
      expect(op.finished).toBe(true);
      expect(op.threads.map((t: any) => t.to.split('/')[1])).toEqual(['planner', 'coder']);
      // The hint names a real thread: the first of the walk-through.
      expect(out).toContain(`nxc threads show ${op.threads[0].thread}`);
      const sync = await runCli('nxs', ['sync', 'status', '--json'], dir, { env: { NEXUS_HOME: home } });
      expect(sync.json).toMatchObject({ bound: true, stream: 'local', connected: true, outbox: 0 });
    } finally {
      expect(await stop(first)).toBe(0);
    }
  });

  it('says the first-run notes and the operator token only on the first run', { timeout: 180_000 }, async () => {
    const again = await launch();
    try {
      const out = again.out();
      expect(out, out).toContain('Ctrl-C stops');
      expect(out).not.toContain('operator token');
      expect(out).not.toContain('first start');
      expect(out).not.toContain('prepares a store template');
      expect(out).toContain('starting the relay...');
    } finally {
      expect(await stop(again)).toBe(0);
    }
  });
});
