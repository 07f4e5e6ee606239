// docker-compose.yml, checked by reading it (no Docker needed): the services, one image built once, a
// healthcheck each that the slim image can run, the operator token from .env (never baked into the image),
// start order by health, and the node's dashboard started by its own command line. Where a Docker engine
// answers, the stack is started and two relays serve one stream. (That the node's command line, run as it
// is, serves the dashboard: test/e2e/compose-node.test.ts.)
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Script } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { COMPOSE_TEXT, compose, entrypoint, flagValue, nxsCommand, portMapping } from './helpers/compose.js';
import { REPO } from './helpers/workspace.js';
import { until } from './helpers/until.js';

const services = compose.services;
const NEXUS = ['relay-1', 'relay-2', 'node'];
const RELAYS = ['relay-1', 'relay-2'];

describe('docker-compose.yml, by reading', () => {
  it('runs PostgreSQL, two relay instances, one address in front of them, and a node', () => {
    expect(Object.keys(services).sort()).toEqual(['node', 'postgres', 'relay', 'relay-1', 'relay-2']);
    expect(Object.keys(compose.volumes).sort()).toEqual(['nodehome', 'pgdata']);
  });

  it('builds one named image once, which every Nexus service runs and none pulls', () => {
    const building = Object.entries(services).filter(([, s]) => s.build !== undefined).map(([n]) => n);
    expect(building).toEqual(['relay-1']);
    for (const name of NEXUS) expect(services[name]!.image, name).toBe('nexus:local');
    for (const name of NEXUS.filter((n) => n !== 'relay-1')) expect(services[name]!.pull_policy, name).toBe('never');
  });

  it('runs the node as a user, not root, and publishes its dashboard and metrics on the host loopback only', () => {
    const node = services['node']!;
    expect(node.user).toBe('${NEXUS_UID:-1000}:${NEXUS_GID:-1000}');
    expect(node.ports).toEqual(['127.0.0.1:${NEXUS_UI_PUBLISH:-7430}:7430', '127.0.0.1:${NEXUS_METRICS_PUBLISH:-9464}:9464']);
    for (const p of node.ports!) expect(portMapping(p).hostIp).toBe('127.0.0.1');
    // The image gives that user its state folder, which a named volume starts from.
    expect(readFileSync(join(REPO, 'Dockerfile'), 'utf8')).toMatch(/chown node:node \/data/);
    // Where binding a workspace runs is said beside the node, and in the README.
    expect(COMPOSE_TEXT).toContain('docker compose exec -w /workspaces/<name> node nxs sync bind');
    expect(readFileSync(join(REPO, 'README.md'), 'utf8')).toContain('docker compose exec -w /workspaces/<name> node nxs sync bind http://relay:7420');
  });

  it('starts the dashboard with the node, by a verb and flags nxs knows, on every container address at the port published to 127.0.0.1', () => {
    const node = services['node']!;
    // The image runs `nxs <command>`: the command is an nxs command line.
    expect(entrypoint()).toEqual(['nxs']);
    const { verb, args } = nxsCommand(node.command!);
    expect(verb.path).toEqual(['node', 'run']);
    // Both flags are in the verb's table (a flag it did not know would have thrown USAGE above).
    expect(Object.keys(verb.flags ?? {})).toEqual(expect.arrayContaining(['ui-host', 'ui-port', 'metrics-host', 'metrics-port']));
    expect(args.values).toMatchObject({ 'ui-host': '0.0.0.0', 'ui-port': '7430', 'metrics-host': '0.0.0.0', 'metrics-port': '9464' });
    // What listens inside is what is published, and published on the host's loopback alone.
    const published = node.ports!.map(portMapping);
    expect(published.map((p) => p.containerPort).sort()).toEqual([Number(flagValue(node.command!, '--ui-port')), Number(flagValue(node.command!, '--metrics-port'))].sort());
    expect(published.every((p) => p.hostIp === '127.0.0.1')).toBe(true);
  });

  it('keeps the dashboard secret out of the file, the environment and the image, and says where it is and how to read it', () => {
    const node = services['node']!;
    expect(Object.keys(node.environment ?? {})).toEqual(['NEXUS_HOME']);
    expect(node.command!.join(' ')).not.toMatch(/secret|\?k=/i);
    // The secret lives in the node's state volume, and the commented way to read it is a command nxs knows.
    expect(COMPOSE_TEXT).toContain('/data/node/ui-secret');
    const shown = /docker compose exec node (nxs ui[^\n(]*)/.exec(COMPOSE_TEXT)![1]!.trim().split(/\s+/).slice(1);
    expect(nxsCommand(shown).verb.path).toEqual(['ui']);
    expect(readFileSync(join(REPO, '.dockerignore'), 'utf8').split('\n')).toContain('workspaces');
  });

  it('gives every service a healthcheck the slim image can run (node itself, never curl)', () => {
    for (const [name, s] of Object.entries(services)) {
      expect(s.healthcheck?.test, name).toBeDefined();
      expect(s.healthcheck!.test.join(' '), name).not.toMatch(/\bcurl\b/);
    }
    for (const name of RELAYS) {
      const [kind, program, flag, script] = services[name]!.healthcheck!.test;
      expect([kind, program, flag]).toEqual(['CMD', 'node', '-e']);
      expect(script).toContain('/healthz');
      expect(() => new Script(script!)).not.toThrow();
    }
    const node = services['node']!.healthcheck!.test;
    expect(node[0]).toBe('CMD-SHELL');
    expect(node[1]).toContain('nxs node status --json');
    // The inline program after `node -e`, unquoted as the shell would, is valid JavaScript.
    const inline = /node -e "(.*)"$/.exec(node[1]!)![1]!.replace(/\\"/g, '"');
    expect(() => new Script(inline)).not.toThrow();
  });

  it('takes the operator token from .env, refusing to start without it, and keeps .env out of the image', () => {
    for (const name of RELAYS) {
      expect(services[name]!.environment!['NEXUS_RELAY_TOKEN']).toMatch(/^\$\{NEXUS_RELAY_TOKEN:\?[^}]*\.env[^}]*\}$/);
      expect(services[name]!.command).toEqual(expect.arrayContaining(['relay', 'serve', '--database-url']));
    }
    expect(readFileSync(join(REPO, '.dockerignore'), 'utf8').split('\n')).toContain('.env');
    expect(readFileSync(join(REPO, '.gitignore'), 'utf8').split('\n')).toContain('.env');
    expect(readFileSync(join(REPO, 'docs', 'sync.md'), 'utf8')).toMatch(/NEXUS_RELAY_TOKEN=.*> \.env/);
  });

  it('starts each service once what it needs is healthy', () => {
    for (const name of RELAYS) expect(services[name]!.depends_on!['postgres']).toEqual({ condition: 'service_healthy' });
    expect(services['relay']!.depends_on).toEqual({ 'relay-1': { condition: 'service_healthy' }, 'relay-2': { condition: 'service_healthy' } });
    expect(services['node']!.depends_on!['relay']).toEqual({ condition: 'service_healthy' });
  });

  it('publishes one address, on a port that can be moved, balanced over exactly the relay services', () => {
    expect(services['relay']!.ports).toEqual(['${NEXUS_RELAY_PUBLISH:-7420}:7420']);
    // The relays only behind it; the node's ports are its dashboard and metrics, on the host loopback.
    for (const name of RELAYS) expect(services[name]!.ports, name).toBeUndefined();
    for (const p of services['node']!.ports ?? []) expect(p).toMatch(/^127\.0\.0\.1:/);
    const conf = services['relay']!.volumes!.find((v) => v.includes('nginx.conf'))!.split(':')[0]!;
    const nginx = readFileSync(join(REPO, conf), 'utf8');
    expect([...nginx.matchAll(/server (relay-\d+):7420;/g)].map((m) => m[1])).toEqual(RELAYS);
  });

  it('serves TLS from certificates in a mounted folder when .env names them, passed through nginx untouched', () => {
    for (const name of RELAYS) {
      const s = services[name]!;
      expect(s.environment!['NEXUS_RELAY_TLS_CERT'], name).toBe('${NEXUS_RELAY_TLS_CERT:-}');
      expect(s.environment!['NEXUS_RELAY_TLS_KEY'], name).toBe('${NEXUS_RELAY_TLS_KEY:-}');
      expect(s.volumes, name).toContain('./certs:/certs:ro');
      expect(s.healthcheck!.test[3], name).toContain('NEXUS_RELAY_TLS_CERT');
    }
    const conf = services['relay']!.volumes!.find((v) => v.includes('nginx.conf'))!.split(':')[0]!;
    const nginx = readFileSync(join(REPO, conf), 'utf8');
    // A stream (TCP) proxy: nginx holds no key, and a client's pin is the relays' own certificate.
    expect(nginx).toMatch(/^stream \{/m);
    expect(nginx).not.toMatch(/^http \{/m);
  });

  it('gives the node its home volume and the workspaces folder', () => {
    expect(services['node']!.command!.slice(0, 2)).toEqual(['node', 'run']);
    expect(services['node']!.volumes).toEqual(['nodehome:/data', './workspaces:/workspaces']);
    expect(services['node']!.environment).toEqual({ NEXUS_HOME: '/data' });
  });
});

/** Whether a Docker engine answers here, and why not when it does not. */
function engine(): { ok: true } | { ok: false; why: string } {
  const r = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 20_000 });
  if (r.error) return { ok: false, why: `no docker command (${(r.error as NodeJS.ErrnoException).code ?? r.error.message})` };
  if (r.status !== 0) return { ok: false, why: `no Docker engine answers: ${(r.stderr || r.stdout).trim().split('\n')[0]}` };
  return { ok: true };
}

const docker = engine();
if (!docker.ok) console.log(`[compose] skipping the docker compose run: ${docker.why}`);

describe.skipIf(!docker.ok)('docker compose up (a Docker engine answers)', () => {
  it('two relay instances serve one set of streams from PostgreSQL, behind one published address', { timeout: 900_000 }, async () => {
    const project = `nexus-test-${process.pid}`;
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const env = { ...process.env, NEXUS_RELAY_TOKEN: 'operator-token-for-the-compose-test', NEXUS_RELAY_PUBLISH: String(port) };
    const dc = (...args: string[]) =>
      spawnSync('docker', ['compose', '-p', project, '-f', join(REPO, 'docker-compose.yml'), ...args], { cwd: REPO, env, encoding: 'utf8', timeout: 600_000 });
    try {
      const up = dc('up', '-d', '--build', '--wait');
      expect(up.status, up.stderr).toBe(0);
      const made = dc('exec', '-T', 'relay-1', 'nxs', 'relay', 'stream', 'create', 'team', '--relay', 'http://127.0.0.1:7420', '--json');
      expect(made.status, made.stderr).toBe(0);
      expect(JSON.parse(made.stdout).token).toEqual(expect.any(String));
      // The other instance knows it at once: streams live in the shared database, not in an instance.
      const again = dc('exec', '-T', 'relay-2', 'nxs', 'relay', 'stream', 'create', 'team', '--relay', 'http://127.0.0.1:7420', '--json');
      expect(again.status).toBe(2);
      expect(JSON.parse(again.stdout).error.code).toBe('STREAM_EXISTS');
      const health = await until('the published address', async () => ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok ? true : undefined));
      expect(health).toBe(true);
    } finally {
      dc('down', '-v', '--remove-orphans');
    }
  });
});
