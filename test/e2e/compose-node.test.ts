// The node container's command line from docker-compose.yml, run as it is but outside Docker (no engine
// is needed): `nxs` (the image's ENTRYPOINT) with the service's `command`, the environment the compose
// file gives it, a NEXUS_HOME of its own in place of the /data volume, and free ports in place of the
// container's. It must serve the dashboard by itself, to the secret the node keeps, which `nxs ui` reads.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compose, entrypoint, flagValue, portMapping } from '../helpers/compose.js';
import { until } from '../helpers/until.js';
import { REPO, runCli } from '../helpers/workspace.js';
import { unusedPort } from '../helpers/ports.js';

const node = compose.services['node']!;
let home: string;
let child: ChildProcess;
let output = '';
let uiPort: number;
let metricsPort: number;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'nexus-compose-node-'));
  // The container's ports, as the compose file publishes them, each moved to a free one here.
  const containerPorts = new Map<string, string>();
  for (const p of node.ports!) containerPorts.set(String(portMapping(p).containerPort), String(await unusedPort()));
  const argv = node.command!.map((word) => containerPorts.get(word) ?? word);
  uiPort = Number(flagValue(argv, '--ui-port'));
  metricsPort = Number(flagValue(argv, '--metrics-port'));
  // The environment the compose file sets, its NEXUS_HOME (the /data volume) a folder of this test's.
  const env: NodeJS.ProcessEnv = { ...process.env, ...node.environment, NEXUS_HOME: home };
  expect(entrypoint()).toEqual(['nxs']);
  child = spawn(process.execPath, [join(REPO, 'bin', 'nxs'), ...argv], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
});

afterAll(async () => {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    await exited;
  }
  rmSync(home, { recursive: true, force: true });
});

describe("the compose node's command line, run outside Docker", () => {
  it('serves the dashboard page over HTTP by itself, to the secret the node keeps and nxs ui prints', { timeout: 120_000 }, async () => {
    expect(Number.isInteger(uiPort), 'the command names the dashboard port (--ui-port)').toBe(true);
    const page = `http://127.0.0.1:${uiPort}/`;
    // The node made its secret at start, in its home (the volume, in the container).
    // A node that exits (a flag it does not know, a port it cannot have) fails the test at once, saying why.
    const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`the node exited (${code}): ${output}`))));
    exited.catch(() => undefined);
    const secret = await Promise.race([until('the node to make its dashboard secret', async () => readFileSync(join(home, 'node', 'ui-secret'), 'utf8').trim() || undefined, 60_000), exited]);
    // Without the secret: refused, on this address as on any.
    const refused = await until('the dashboard to listen', async () => fetch(page), 60_000);
    expect(refused.status).toBe(403);

    // The documented way to read the URL: `nxs ui --no-open` in the same home, which leaves the listener where it is.
    const ui = await runCli('nxs', ['ui', '--no-open', '--json'], home, { env: { NEXUS_HOME: home } });
    expect(ui.code, ui.stdout + ui.stderr).toBe(0);
    expect(ui.json).toMatchObject({ host: '0.0.0.0', port: uiPort, loopback: false, opened: false });
    expect(ui.json.url).toContain(`?k=${secret}`);

    // A browser opening http://127.0.0.1:PORT/?k=<secret>: the secret moves into a cookie, then the page.
    const first = await fetch(`${page}?k=${encodeURIComponent(secret)}`, { redirect: 'manual' });
    expect(first.status).toBe(303);
    const cookie = first.headers.get('set-cookie')!.split(';')[0]!;
    expect(cookie).toBe(`nxs_ui_${uiPort}=${secret}`);
    const shown = await fetch(page, { headers: { cookie } });
    expect(shown.status).toBe(200);
    expect(shown.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await shown.text()).toContain('Needs you');

    // The metrics the same command line serves.
    expect((await fetch(`http://127.0.0.1:${metricsPort}/healthz`)).status).toBe(200);
    expect(child.exitCode).toBeNull();
  });

  it('does not start when the dashboard port it names is taken, saying ADDRESS_IN_USE', { timeout: 120_000 }, async () => {
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '0.0.0.0', r));
    const taken = (holder.address() as { port: number }).port;
    const other = mkdtempSync(join(tmpdir(), 'nexus-compose-node-'));
    try {
      // The same command line, its metrics on any free port and its dashboard on the taken one.
      const argv = [...node.command!];
      argv[argv.indexOf('--metrics-port') + 1] = '0';
      argv[argv.indexOf('--ui-port') + 1] = String(taken);
      const r = spawnSync(process.execPath, [join(REPO, 'bin', 'nxs'), ...argv], { env: { ...process.env, ...node.environment, NEXUS_HOME: other }, encoding: 'utf8', timeout: 60_000 });
      expect(r.status, r.stdout + r.stderr).not.toBe(0);
      expect(r.stdout + r.stderr).toContain('ADDRESS_IN_USE');
    } finally {
      await new Promise<void>((r) => holder.close(() => r()));
      rmSync(other, { recursive: true, force: true });
    }
  });
});
