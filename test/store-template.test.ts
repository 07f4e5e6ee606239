// The migrated store template ships in the package (dist/, made by `npm run build`): a new workspace on a
// machine that never made one is a copy away, and nxs init says nothing about a slow first run.
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createStore, openStore, packagedTemplateDir, storeTemplate, storeTemplateReady, storeTemplateVersion } from '../node-agent/adapters/store/index.js';
import { pgliteVersion } from '../infra/index.js';
import { main as nxsMain } from '../node-agent/cli/nxs.js';
import type { Io } from '../node-agent/cli/io.js';
import { slowStep } from '../node-agent/cli/progress.js';
import { allocatedBytes } from './helpers/file-modes.js';

const base = mkdtempSync(join(tmpdir(), 'nexus-template-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function io(cwd: string, env: NodeJS.ProcessEnv, tty = false) {
  const out = { stdout: '', stderr: '' };
  const value: Io = {
    argv: [],
    env,
    cwd,
    stdout: (s) => void (out.stdout += s),
    stderr: (s) => void (out.stderr += s),
    readStdin: async () => '',
    stdinIsTty: false,
    stderrIsTty: tty,
  };
  return { io: value, out };
}

describe('the packaged store template', () => {
  it('is there after the build, and a machine with an empty NEXUS_HOME uses it without making its own', async () => {
    const home = join(base, 'empty-home');
    expect(existsSync(join(packagedTemplateDir(), 'PG_VERSION'))).toBe(true);
    expect(storeTemplateReady(home)).toBe(true);
    expect(await storeTemplate(home)).toBe(packagedTemplateDir());
    expect(existsSync(join(home, 'cache'))).toBe(false);
  });

  it('nxs init on a fresh machine creates the workspace from it, with no first-run note', async () => {
    const home = join(base, 'fresh-home');
    const dir = join(base, 'project');
    mkdirSync(dir);
    const { io: cli, out } = io(dir, { NEXUS_HOME: home }, true);
    cli.argv = ['init', '--name', 'project', '--json'];
    expect(await nxsMain(cli), out.stdout + out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toMatchObject({ created: true, name: 'project' });
    expect(out.stderr).toBe('');
    expect(existsSync(join(home, 'cache'))).toBe(false);
  });
});

describe("the store template's name", () => {
  it('changes with the PGlite that makes it, so a store is never copied from a data folder of another PGlite', () => {
    const installed = pgliteVersion();
    expect(installed).toMatch(/^\d+\.\d+\.\d+/);
    expect(packagedTemplateDir().endsWith(`store-template-${storeTemplateVersion(installed)}`)).toBe(true);
    expect(storeTemplateVersion('0.2.17')).not.toBe(storeTemplateVersion(installed));
    expect(storeTemplateVersion(installed)).toBe(storeTemplateVersion());
  });
});

describe('a store copied from the template', () => {
  it('has one WAL segment, left sparse: the copy takes under 12 MB on disk where a whole segment alone is 16, and takes writes', async () => {
    const dir = join(base, 'sparse-store');
    await createStore(dir, join(base, 'sparse-home'));
    const segments = readdirSync(join(dir, 'pg_wal')).filter((name) => /^[0-9A-F]{24}$/.test(name));
    expect(segments).toHaveLength(1);
    const segment = join(dir, 'pg_wal', segments[0]!);
    expect(lstatSync(segment).size).toBe(16 * 2 ** 20);
    expect(allocatedBytes(segment)).toBeLessThan(2 ** 20);
    expect(allocatedBytes(dir)).toBeLessThan(12 * 2 ** 20);
    let store = await openStore(dir);
    await store.pg.exec('create table probe (n int); insert into probe values (41), (42)');
    await store.close();
    store = await openStore(dir);
    try {
      expect((await store.pg.query<{ n: number }>('select n from probe order by n')).rows).toEqual([{ n: 41 }, { n: 42 }]);
    } finally {
      await store.close();
    }
  });
});

describe('a slow step', () => {
  it('says why once; without a terminal nothing else, and the summary when done', () => {
    const { io: cli, out } = io(base, {});
    const step = slowStep(cli, 'preparing something (once per machine)');
    step.done('ready');
    expect(out.stderr).toBe('preparing something (once per machine)\nready\n');
  });

  it('on a terminal counts seconds in place and clears the line when done', async () => {
    const { io: cli, out } = io(base, {}, true);
    const step = slowStep(cli, 'preparing something', 20);
    await new Promise((r) => setTimeout(r, 120));
    step.done();
    expect(out.stderr.startsWith('preparing something\n\r  ... ')).toBe(true);
    expect(out.stderr.endsWith('\r\x1b[K')).toBe(true);
  });
});
