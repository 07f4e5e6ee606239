// What other local users may not read or change. A workspace's store and the store templates: the
// store holds every message's text, and a template another user could write would be copied into every
// workspace made afterwards (PGlite writes its files 0666, so the modes are set by us, and a template is
// checked before it is copied). The files that hold secrets: the stream token's binding, the dashboard
// secret, the node's socket. The folder a real node process keeps in NEXUS_HOME is
// test/e2e/file-modes-node.test.ts.
import { appendFileSync, chmodSync, chownSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { itLong } from './helpers/lanes.js';
import { uiSecret } from '../node-agent/host/ui/secret.js';
import { startNode } from '../node-agent/host/node/index.js';
import { silentLogger } from '../infra/index.js';
import { makeWorkspace } from './helpers/workspace.js';
import { createStore, homeTemplateDir, makeTemplate, openStore, packagedTemplateDir, templateProblem } from '../node-agent/adapters/store/index.js';
import { initWorkspace } from '../node-agent/adapters/workspace/index.js';
import { mode, modes, notPrivate } from './helpers/file-modes.js';

const base = mkdtempSync(join(tmpdir(), 'nexus-store-modes-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));


/** Sets every folder 0755 and every file 0666, as PGlite and older versions left them. */
function loosen(root: string): void {
  for (const [path, m] of modes(root)) chmodSync(path, m.startsWith('d') ? 0o755 : 0o666);
}

const LINE = "\nshared_preload_libraries = 'nothing_here'\n";

describe('a workspace store', () => {
  it('is private when nxs init makes it, and stays so after a command wrote to it', async () => {
    const root = join(base, 'fresh');
    mkdirSync(root);
    await initWorkspace(root, { name: 'fresh', home: join(base, 'home-fresh') });
    const dir = join(root, '.nxs', 'store');
    expect(modes(dir).size).toBeGreaterThan(100);
    expect(notPrivate(dir)).toEqual([]);
    const store = await openStore(dir);
    try {
      await store.pg.exec('create table written (n int); insert into written select generate_series(1, 1000); checkpoint');
      expect(notPrivate(dir)).toEqual([]);
    } finally {
      await store.close();
    }
    expect(notPrivate(dir)).toEqual([]);
  });

  it('left readable by others by an older version, is made private when it is opened', async () => {
    const root = join(base, 'older');
    mkdirSync(root);
    await initWorkspace(root, { name: 'older', home: join(base, 'home-older') });
    const dir = join(root, '.nxs', 'store');
    loosen(dir);
    expect(notPrivate(dir).length).toBe(modes(dir).size);
    const store = await openStore(dir);
    try {
      expect(notPrivate(dir)).toEqual([]);
    } finally {
      await store.close();
    }
    expect(notPrivate(dir)).toEqual([]);
  });
});

describe('the store templates', () => {
  it('the packaged one is writable by its owner alone and holds no link', () => {
    const bad = [...modes(packagedTemplateDir())].filter(([, m]) => m.startsWith('l') || (parseInt(m.slice(1), 8) & 0o022) !== 0);
    expect(bad).toEqual([]);
    expect(templateProblem(packagedTemplateDir(), { shared: true })).toBeNull();
  });

  it('says what is wrong with a template another user could change', () => {
    const dir = join(base, 'checked');
    cpSync(packagedTemplateDir(), dir, { recursive: true });
    chmodSync(dir, 0o700);
    expect(templateProblem(dir, { shared: false })).toBeNull();
    chmodSync(join(dir, 'postgresql.conf'), 0o666);
    expect(templateProblem(dir, { shared: false })).toMatch(/postgresql\.conf.*writable by others/);
    chmodSync(join(dir, 'postgresql.conf'), 0o600);
    chmodSync(join(dir, 'base'), 0o775);
    expect(templateProblem(dir, { shared: false })).toMatch(/base.*writable by others/);
    chmodSync(join(dir, 'base'), 0o700);
    symlinkSync('/dev/zero', join(dir, 'global', 'zero'));
    expect(templateProblem(dir, { shared: false })).toMatch(/zero.*not a plain file or folder/);
    rmSync(join(dir, 'global', 'zero'));
    expect(templateProblem(dir, { shared: false })).toBeNull();
  });

  it.skipIf(process.getuid?.() !== 0)('says so of a template file another user owns', () => {
    const dir = join(base, 'owned');
    cpSync(packagedTemplateDir(), dir, { recursive: true });
    chmodSync(dir, 0o700);
    chownSync(join(dir, 'PG_VERSION'), 65534, 65534);
    expect(templateProblem(dir, { shared: false })).toMatch(/PG_VERSION.*owned by uid 65534/);
  });

  itLong('a template under NEXUS_HOME/cache that others could write is not used: it is made again, private', async () => {
    const home = join(base, 'home-tampered');
    const dir = homeTemplateDir(home);
    // What an older version left: a template of folders 0755 and files 0666, which somebody then changed.
    mkdirSync(dirname(dir), { recursive: true });
    cpSync(packagedTemplateDir(), dir, { recursive: true });
    loosen(dir);
    appendFileSync(join(dir, 'postgresql.conf'), LINE);
    expect(await makeTemplate(dir)).toBe(dir);
    expect(readFileSync(join(dir, 'postgresql.conf'), 'utf8')).not.toContain('nothing_here');
    expect(notPrivate(dir)).toEqual([]);
    expect(lstatSync(dirname(dir)).mode & 0o777).toBe(0o700);
    // The remade template makes stores that open.
    const store = join(base, 'from-remade');
    await createStore(store, home);
    await (await openStore(store)).close();
  });

  itLong('a packaged template others could write is passed over for the one under NEXUS_HOME', async () => {
    const home = join(base, 'home-tampered');
    const packaged = join(base, 'packaged-loose');
    cpSync(packagedTemplateDir(), packaged, { recursive: true });
    loosen(packaged);
    appendFileSync(join(packaged, 'postgresql.conf'), LINE);
    const store = join(base, 'from-packaged-loose');
    await createStore(store, home, { packaged });
    expect(readFileSync(join(store, 'postgresql.conf'), 'utf8')).not.toContain('nothing_here');
    expect(notPrivate(store)).toEqual([]);
    expect(existsSync(join(homeTemplateDir(home), 'PG_VERSION'))).toBe(true);
  });
});

describe('files that hold secrets', () => {
  it('the dashboard secret is made 0600 in a 0700 folder, and set back to 0600 when found looser', () => {
    const dir = join(base, 'node-secret', 'node');
    const secret = uiSecret(dir);
    expect([mode(dir), mode(join(dir, 'ui-secret'))]).toEqual([0o700, 0o600]);
    chmodSync(join(dir, 'ui-secret'), 0o644);
    expect(uiSecret(dir)).toBe(secret);
    expect(mode(join(dir, 'ui-secret'))).toBe(0o600);
  });

  it('nxs sync bind writes sync.json, which holds the stream token, 0600 inside the 0700 .nxs', async () => {
    const ws = await makeWorkspace();
    try {
      const r = await ws.nxs(['sync', 'bind', 'http://127.0.0.1:9', '--stream', 'team', '--token', 'a-stream-token', '--offline', '--json']);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect([mode(join(ws.root, '.nxs')), mode(join(ws.root, '.nxs', 'sync.json'))]).toEqual([0o700, 0o600]);
    } finally {
      await ws.cleanup();
    }
  });

  it('the node socket is 0600, and a node folder left 0755 is made 0700 when the node starts', async () => {
    const home = join(base, 'home-socket');
    mkdirSync(join(home, 'node'), { recursive: true, mode: 0o755 });
    chmodSync(join(home, 'node'), 0o755);
    const node = await startNode({ home, ui: false, health: false, log: silentLogger });
    try {
      expect(lstatSync(node.socket).mode & 0o777).toBe(0o600);
      expect(lstatSync(join(home, 'node')).mode & 0o777).toBe(0o700);
    } finally {
      await node.close();
    }
  });
});
