// npm start: one process runs a relay and the node on embedded defaults, with a demo workspace bound to a stream.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { REPO, runCli } from './helpers/workspace.js';

const home = mkdtempSync(join(tmpdir(), 'nexus-start-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

it('npm start serves a relay and a node, walks a commission through, and stops cleanly on SIGINT', { timeout: 180_000 }, async () => {
  const child = spawn(process.execPath, [join(REPO, 'dist', 'launcher', 'main.js')], {
    env: { ...process.env, NEXUS_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const deadline = Date.now() + 150_000;
  while (!out.includes('Ctrl-C stops') && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 200));
  expect(out, out).toContain('Ctrl-C stops');
  expect(out).toMatch(/awaiting you \(answered by \w{4}\/planner\)/);

  const dir = join(home, 'workspaces', 'demo');
  const status = await runCli('nxc', ['status', '--all', '--json'], dir, { env: { NEXUS_HOME: home } });
  expect(status.code, status.stderr).toBe(0);
  const op = status.json.operations[0];
  expect(op.finished).toBe(true);
  expect(op.threads.map((t: any) => t.to.split('/')[1])).toEqual(['planner', 'coder']);
  const sync = await runCli('nxs', ['sync', 'status', '--json'], dir, { env: { NEXUS_HOME: home } });
  expect(sync.json).toMatchObject({ bound: true, stream: 'local', connected: true, outbox: 0 });

  child.kill('SIGINT');
  expect(await exited).toBe(0);
});
