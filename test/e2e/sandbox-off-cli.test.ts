// Where no sandbox can be had, through the real nxc process: sessions are refused with how to get one, unless the
// workspace declares `sandbox: off`, and then every turn and every status row says so. The declarations the
// sandbox cannot honour are test/sandbox-off.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';

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
