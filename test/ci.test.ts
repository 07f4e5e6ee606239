// .ci/run: the browser the dashboard tests drive comes first (installed when missing, as root, with
// apt-get; otherwise the reason they will be skipped), then the install, the lint and the tests as
// before. `.ci/chromium` runs here against stand-ins for `id` and `apt-get`, never the real ones.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REPO } from './helpers/workspace.js';

const SCRIPT = join(REPO, '.ci', 'chromium');
const BASH = execFileSync('sh', ['-c', 'command -v bash'], { encoding: 'utf8' }).trim();
const CHMOD = execFileSync('sh', ['-c', 'command -v chmod'], { encoding: 'utf8' }).trim();

describe('.ci/chromium', () => {
  let dir: string;
  let bin: string;
  let browser: string;
  let log: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'nexus-ci-'));
    bin = join(dir, 'bin');
    execFileSync('mkdir', [bin]);
    browser = join(dir, 'usr-bin-chromium');
    log = join(dir, 'apt.log');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const stub = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!${BASH}\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  };
  /** `id -u` answers `uid`; apt-get (when given) logs its arguments, and `install` puts the browser in place unless told to fail. */
  const machine = (o: { uid: number; apt?: 'works' | 'fails' }) => {
    stub('id', `echo ${o.uid}`);
    if (o.apt !== undefined) {
      stub('apt-get', `echo "$*" >> '${log}'\nif [ "$1" = install ]; then ${o.apt === 'works' ? `: > '${browser}'; ${CHMOD} +x '${browser}'` : 'exit 100'}; fi`);
    }
  };
  /** Only the stand-ins are on PATH: the real apt-get is never in reach. */
  const run = (env: Record<string, string> = {}) => {
    const r = spawnSync(BASH, [SCRIPT], { env: { PATH: bin, NEXUS_CHROMIUM_CANDIDATES: browser, ...env }, encoding: 'utf8' });
    return { code: r.status, out: r.stdout + r.stderr, apt: existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [] };
  };

  it('does nothing when the browser is where the test looks, or at CHROMIUM_PATH', () => {
    machine({ uid: 0, apt: 'works' });
    writeFileSync(browser, '');
    chmodSync(browser, 0o755);
    expect(run()).toMatchObject({ code: 0, apt: [] });
    expect(run().out).toContain(`chromium: ${browser}`);
    rmSync(browser);
    const elsewhere = join(dir, 'my-chromium');
    writeFileSync(elsewhere, '');
    chmodSync(elsewhere, 0o755);
    expect(run({ CHROMIUM_PATH: elsewhere })).toMatchObject({ code: 0, apt: [] });
  });

  it('installs it with apt-get when missing, as root', () => {
    machine({ uid: 0, apt: 'works' });
    const r = run();
    expect(r.code).toBe(0);
    expect(r.apt).toEqual(['update', 'install -y chromium']);
    expect(r.out).toContain(`chromium: ${browser} installed`);
  });

  it.each([
    ['not root', { uid: 1000, apt: 'works' as const }, 'does not run as root'],
    ['no apt-get', { uid: 0 }, 'has no apt-get'],
    ['apt-get failing', { uid: 0, apt: 'fails' as const }, 'apt-get could not install it'],
  ])('says why the browser tests will be skipped, and goes on: %s', (_, m, why) => {
    machine(m);
    const r = run();
    expect(r.code).toBe(0);
    expect(r.out).toContain(why);
    expect(r.out).toContain('test/e2e/ui/dashboard.test.ts) will be skipped');
    if (m.uid !== 0) expect(r.apt).toEqual([]);
  });
});

describe('.ci/run', () => {
  it('sees to the browser first, then runs npm ci, npm run lint and npm test as before', () => {
    const steps = readFileSync(join(REPO, '.ci', 'run'), 'utf8')
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith('set ') && !l.startsWith('cd ') && !l.startsWith('export '));
    expect(steps).toEqual(['.ci/bubblewrap', '.ci/chromium', '.ci/faketime', 'npm ci', 'npm run lint', 'npm test']);
  });
});
