// A receipt's place in the queue and nxc status agree: when the same step hands the copy from a dead holder to the
// operation waiting first, the newcomer's receipt names the new holder and its place behind it, as status does.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitCodeOf } from '../../../protocol/receipts.js';
import { gitEnv } from '../../helpers/git-env.js';
import { makeWorkspace, type TestWorkspace } from '../../helpers/workspace.js';
import { waitFor } from '../../channels/scenario.js';

async function send(ws: TestWorkspace, to: string): Promise<any> {
  const r = await ws.nxc(['send', to, '--subject', 'work', '--json', 'please']);
  expect(r.code, r.stdout + r.stderr).toBe(r.json?.warnings ? exitCodeOf(r.json.warnings) : 0);
  return r.json;
}

/** Kills a session's runtime and its sidecar at once, so nothing is left to report its end. */
function killSession(session: string, runtimePid: number): void {
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(join('.nxs', 'sessions', session))) process.kill(Number(p), 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  try {
    process.kill(-runtimePid, 'SIGKILL');
  } catch {
    // gone already
  }
}

describe('a newcomer\'s receipt when its own send hands the copy on', () => {
  let ws: TestWorkspace;
  const gate = () => join(ws.root, '..', 'first-gate');
  beforeAll(async () => {
    ws = await makeWorkspace({ real: true });
    ws.cliInProcess = true;
    writeFileSync(join(ws.root, 'tracked.txt'), 'first version\n');
    execFileSync('git', ['add', '-A'], { cwd: ws.root, env: gitEnv() });
    execFileSync('git', ['commit', '-q', '-m', 'files'], { cwd: ws.root, env: gitEnv() });
  });
  afterAll(async () => {
    writeFileSync(gate(), '');
    await ws.cleanup();
  });

  it('names the operation that now holds the copy and the same place status gives', async () => {
    ws.persona('holder', { mode: 'hang', extra: 'working_tree: exclusive' });
    ws.persona('first', { mode: 'gate', arg: gate(), extra: 'working_tree: exclusive' });
    ws.persona('second', { mode: 'reply', extra: 'working_tree: exclusive' });
    const h = await send(ws, 'holder');
    await waitFor('the holder to run', () => ws.agentLog().some((e) => e.cmd === 'start' && e.role === `${ws.short}/holder`));
    const w1 = await send(ws, 'first');
    expect(w1.queued).toMatchObject({ position: 1, holder: { operation: h.operation } });
    killSession(h.woke.session, h.woke.pid);
    const w2 = await send(ws, 'second');
    const status = await ws.nxc(['status']);
    const lines = status.stdout.split('\n');
    const at = lines.findIndex((l) => l.startsWith(`operation ${w2.operation}`));
    const m = /working copy: queued \(position (\d+) behind (t-[0-9A-Z]+)\)/.exec(lines.slice(at + 1).find((l) => l.includes('working copy:')) ?? '');
    expect(m, status.stdout).not.toBeNull();
    expect(w2.queued).toMatchObject({ position: Number(m![1]), holder: { operation: m![2] } });
  });
});
