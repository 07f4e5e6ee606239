// The declarations the sandbox cannot honour are refused. Where no sandbox can be had at all (sessions refused
// with how to get one, unless the workspace declares `sandbox: off`) is test/e2e/sandbox-off-cli.test.ts.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isNexusError } from '../protocol/errors.js';
import { sandboxPolicy, type PolicyInput } from '../node-agent/adapters/sandbox/index.js';

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
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

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
