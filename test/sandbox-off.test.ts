// Where no sandbox can be had: sessions are refused with how to get one, unless the workspace declares `sandbox: off`,
// and then every turn and every status row says so. And the declarations the sandbox cannot honour are refused.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isNexusError } from '../protocol/errors.js';
import { sandboxPolicy, type PolicyInput } from '../node-agent/adapters/sandbox/index.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

let ws: TestWorkspace;
// A bubblewrap that is not there: what a machine without it looks like to Nexus.
const NO_BWRAP = { NXS_BWRAP: '/nonexistent/bwrap' };

beforeAll(async () => {
  ws = await makeWorkspace({ real: true });
  ws.persona('helper', { mode: 'reply' });
});
afterAll(async () => ws.cleanup());

describe('a machine with no sandbox', () => {
  it('refuses to start a session, saying how to install bubblewrap, and starts no process', async () => {
    const r = await ws.nxc(['send', 'helper', '--subject', 'refused', '--json', 'hello'], { env: NO_BWRAP });
    expect(r.json.posted).toBe(true);
    expect(r.json.woke).toBeNull();
    const w = r.json.warnings.find((x: any) => x.reason === 'sandbox_unavailable');
    expect(w).toMatchObject({ class: 'step_skipped', role: 'helper' });
    expect(w.message).toContain('SANDBOX_UNAVAILABLE');
    expect(w.message).toMatch(/apt-get install bubblewrap/);
    expect(w.message).toMatch(/"sandbox": "off"/);
  });

  it('runs sessions unconfined when the workspace declares sandbox: off, and says so on the turn and on every session', async () => {
    ws.config({ sandbox: 'off' });
    try {
      const r = await ws.nxc(['send', 'helper', '--subject', 'unconfined', '--json', 'hello'], { env: NO_BWRAP });
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.json.woke).not.toBeNull();
      expect(r.json.warnings).toContainEqual(expect.objectContaining({ class: 'sandbox_off', session: r.json.woke.session }));
      await ws.waitIdle();
      const status = await ws.nxc(['status', '--all', '--json'], { env: NO_BWRAP });
      const rows = status.json.operations.flatMap((o: any) => o.threads).filter((t: any) => t.session !== null);
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) expect(row.session.sandbox).toBe('off');
      expect(status.json.notes.join('\n')).toMatch(/"sandbox": "off"/);
      const text = await ws.nxc(['status', '--all'], { env: NO_BWRAP });
      expect(text.stdout).toContain('NO SANDBOX');
    } finally {
      ws.config({ sandbox: undefined });
    }
  });
});

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
