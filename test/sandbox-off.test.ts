// The declarations the sandbox cannot honour are refused. Where no sandbox can be had at all (sessions refused
// with how to get one, unless the workspace declares `sandbox: off`) is test/e2e/sandbox-off-cli.test.ts.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isNexusError } from '../protocol/errors.js';
import { bwrapArgv, bwrapWorks, sandboxPolicy, type PolicyInput } from '../node-agent/adapters/sandbox/index.js';

describe('what a sandbox declaration may ask for', () => {
  let dir: string;
  let base: PolicyInput;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'nexus-policy-'));
    for (const d of ['copy/.nxs', 'other/.nxs', 'home', 'nexus-home', 'cache']) mkdirSync(join(dir, d), { recursive: true });
    base = {
      copy: join(dir, 'copy'),
      nexusHome: join(dir, 'nexus-home'),
      userHome: join(dir, 'home'),
      privateHome: join(dir, 'private'),
      writable: true,
      network: undefined,
      defaultNetwork: 'none',
      write: [],
      hide: [],
      socket: null,
    };
  });
  const after: Array<() => void> = [];
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
    for (const f of after) f();
  });

  const code = (input: Partial<PolicyInput>) => {
    try {
      sandboxPolicy({ ...base, ...input });
      return 'allowed';
    } catch (err) {
      return isNexusError(err) ? err.code : String(err);
    }
  };

  it.each([
    ['the workspace store', () => join(dir, 'copy', '.nxs')],
    ['NEXUS_HOME', () => join(dir, 'nexus-home')],
    ['a folder holding NEXUS_HOME', () => dir],
    ['another workspace', () => join(dir, 'other')],
    ['a path inside another workspace', () => join(dir, 'other', 'src')],
  ])('refuses a write path that would open %s', (_what, path) => {
    expect(code({ write: [path()] })).toBe('SANDBOX_REFUSED');
  });

  it('grants a build cache, and hides the secrets whatever is written', () => {
    const p = sandboxPolicy({ ...base, write: [join(dir, 'cache')] });
    expect(p.write).toEqual([join(dir, 'cache')]);
    expect(p.hide).toEqual(expect.arrayContaining([join(dir, 'copy', '.nxs'), join(dir, 'nexus-home'), join(dir, 'other', '.nxs'), join(dir, 'home', '.ssh')]));
  });

  it('keeps Nexus and Node readable when they were unpacked under /tmp, which the sandbox lays empty; a secret there stays hidden', () => {
    // Under /tmp itself (the suite's TMPDIR may lie elsewhere), as a checkout tried out there is: its `nxc` and
    // the demo's agent.
    const pkg = mkdtempSync('/tmp/nexus-unpacked-');
    after.push(() => rmSync(pkg, { recursive: true, force: true }));
    mkdirSync(join(pkg, 'dist'), { recursive: true });
    writeFileSync(join(pkg, 'dist', 'agent.js'), 'the demo agent\n');
    writeFileSync(join(pkg, 'secret.txt'), 'not for sessions\n');
    const p = sandboxPolicy({ ...base, read: [pkg, '/usr/bin'], hide: [join(pkg, 'secret.txt')] });
    // Only what the fresh /tmp or /run would hide is bound again: the rest is there already.
    expect(p.read).toEqual([pkg]);
    mkdirSync(base.privateHome, { recursive: true });
    const works = bwrapWorks();
    if (!works.ok) {
      console.log(`skipped the run in bubblewrap: ${works.why}`);
      return;
    }
    const cat = (policy: typeof p, file: string) => {
      const [program, ...args] = bwrapArgv(policy, ['cat', file], join(dir, 'copy'));
      return spawnSync(program!, args, { encoding: 'utf8' });
    };
    const seen = cat(p, join(pkg, 'dist', 'agent.js'));
    expect(seen.stdout, seen.stderr).toBe('the demo agent\n');
    expect(cat(p, join(pkg, 'secret.txt')).stdout).toBe('');
    // Without it, the folder is not there inside at all.
    expect(cat({ ...p, read: [] }, join(pkg, 'dist', 'agent.js')).status).not.toBe(0);
  });

  it('keeps a copy that lies inside NEXUS_HOME (as npm start makes it) and hides everything else there', () => {
    for (const d of ['nexus-home/node', 'nexus-home/relay', 'nexus-home/workspaces/demo/.nxs', 'nexus-home/workspaces/other/.nxs']) mkdirSync(join(dir, d), { recursive: true });
    const copy = join(dir, 'nexus-home', 'workspaces', 'demo');
    const p = sandboxPolicy({ ...base, copy });
    // Nothing that holds the copy is hidden, or the copy would vanish with it.
    expect(p.hide.filter((h) => copy.startsWith(h + '/') || copy === h)).toEqual([]);
    expect(p.hide).toEqual(
      expect.arrayContaining([join(dir, 'nexus-home', 'node'), join(dir, 'nexus-home', 'relay'), join(dir, 'nexus-home', 'workspaces', 'other'), join(copy, '.nxs')]),
    );
  });

  it('keeps a host list for the proxy that enforces it (none started yet), and takes none and all', () => {
    expect(sandboxPolicy({ ...base, network: ['api.example.com', '*.example.org:443'] })).toMatchObject({ network: ['api.example.com', '*.example.org:443'], proxy: null });
    expect(sandboxPolicy({ ...base, network: 'all' }).network).toBe('all');
    expect(sandboxPolicy({ ...base }).network).toBe('none');
  });
});
