// `nxc status | head`: the reader goes away and the next write fails with EPIPE. nxc and nxs end
// quietly then (no stack trace, the command's own exit code), and a watcher stops instead of running
// on. Real child processes whose output pipes are closed early by the reading side.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { makeWorkspace, REPO, type TestWorkspace } from '../helpers/workspace.js';

type Ended = { code: number | null; signal: NodeJS.Signals | null; stderr: string; stdout: string };

/**
 * Runs bin/<bin> with `args`. `close` says which of its output pipes the reading side closes, and
 * when: at once (before the command wrote anything) or after the first bytes arrived.
 */
function runClosing(bin: 'nxc' | 'nxs', args: string[], cwd: string, close: { stream: 'stdout' | 'stderr'; when: 'at_once' | 'after_first' }): Promise<Ended> & { kill: () => void; closed: Promise<void> } {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('NXC_')) env[k] = v;
  Object.assign(env, { NEXUS_HOME: inject('nexusHome'), NXC_ACTOR: 'alice' });
  delete env['NEXUS_DEBUG'];
  let kill = () => undefined as void;
  let closedNow!: () => void;
  const closedPromise = new Promise<void>((r) => (closedNow = r));
  const ended = new Promise<Ended>((resolve) => {
    const child = spawn(process.execPath, [join(REPO, 'bin', bin), ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = { stdout: '', stderr: '' };
    const closed = child[close.stream];
    const other = close.stream === 'stdout' ? child.stderr : child.stdout;
    other.on('data', (b: Buffer) => (out[close.stream === 'stdout' ? 'stderr' : 'stdout'] += b.toString()));
    kill = () => void child.kill('SIGKILL');
    if (close.when === 'at_once') closed.destroy();
    else closed.once('data', () => (closed.destroy(), closedNow()));
    child.on('exit', (code, signal) => resolve({ code, signal, ...out }));
  });
  return Object.assign(ended, { kill: () => kill(), closed: closedPromise });
}

describe('a reader that closes the pipe early', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace({ real: true });
    // The commands whose pipes close are real processes; the ones that only write the workspace's facts run in this one.
    ws.cliInProcess = true;
    for (let i = 0; i < 3; i++) expect((await ws.nxc(['send', '@bob', '--subject', `s${i}`, `hello ${i}`])).code).toBe(0);
  });
  afterAll(async () => ws?.cleanup());

  it.each<[string, 'nxc' | 'nxs', string[], number]>([
    ['nxc status --all', 'nxc', ['status', '--all'], 0],
    ['nxc --help', 'nxc', ['--help'], 0],
    ['nxs --help', 'nxs', ['--help'], 0],
    ['nxs relay --help', 'nxs', ['relay', '--help'], 0],
  ])('%s ends with its own exit code and no stack trace when stdout is closed', { timeout: 30_000 }, async (_what, bin, args, exit) => {
    const r = await runClosing(bin, args, ws.root, { stream: 'stdout', when: 'at_once' });
    expect(r.signal).toBeNull();
    expect(r.stderr).toBe('');
    expect(r.code).toBe(exit);
  });

  it('a refusal whose stderr is closed still exits 2, and says nothing on stdout', { timeout: 30_000 }, async () => {
    const r = await runClosing('nxc', ['reply', '--thread', 't-01ARZ3NDEKTSV4RRFFQ69G5FAV', 'hi'], ws.root, { stream: 'stderr', when: 'at_once' });
    expect(r.signal).toBeNull();
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
  });

  it('nxc status --watch stops by itself once its reader is gone', { timeout: 60_000 }, async () => {
    // A new picture is written whenever the status changes: the first one arrives, the reader goes,
    // and a change makes nxc write again into the closed pipe.
    const ended = runClosing('nxc', ['status', '--all', '--watch'], ws.root, { stream: 'stdout', when: 'after_first' });
    await ended.closed;
    // A change makes nxc write a new picture into the closed pipe.
    expect((await ws.nxc(['send', '@bob', '--subject', 'more', 'again'])).code).toBe(0);
    const guard = setTimeout(() => ended.kill(), 45_000);
    try {
      await ended;
    } finally {
      clearTimeout(guard);
    }
    const r = await ended;
    expect(r.signal).toBeNull();
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });
});
