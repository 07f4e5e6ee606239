// The working-copy lease end to end: sessions as real processes under their sidecars (their `nxc` calls are the
// built command), no node but in the last case (every command opens the store itself). The test's own commands run
// nxc's main in this process on the same route, contending for the same store lock. The clock is the system's,
// moved with faketime.
import { exitCodeOf } from '../../../protocol/receipts.js';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { makeWorkspace, REPO, type CliResult, type TestWorkspace } from '../../helpers/workspace.js';
import { waitFor } from '../../helpers/until.js';
import { git } from '../../leases/repos.js';

const FAKETIME = (() => {
  try {
    return execFileSync('sh', ['-c', 'command -v faketime'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
})();

async function leaseRepo(): Promise<TestWorkspace> {
  const ws = await makeWorkspace({ real: true });
  ws.cliInProcess = true;
  writeFileSync(join(ws.root, 'tracked.txt'), 'first version\n');
  await git(ws.root, 'add', '-A');
  await git(ws.root, 'commit', '-q', '-m', 'files');
  return ws;
}

function exclusive(ws: TestWorkspace, role: string, mode: string, arg?: string): void {
  ws.persona(role, { mode, ...(arg === undefined ? {} : { arg }), extra: 'working_tree: exclusive' });
}

async function send(ws: TestWorkspace, to: string): Promise<any> {
  const r = await ws.nxc(['send', to, '--subject', 'work', '--json', 'please']);
  expect(r.code, r.stdout + r.stderr).toBe(r.json?.warnings ? exitCodeOf(r.json.warnings) : 0);
  return r.json;
}

/** The environment of a session's turn, as its spec recorded it. */
function turnEnv(ws: TestWorkspace, session: string): Record<string, string> {
  return JSON.parse(readFileSync(join(ws.root, '.nxs', 'sessions', session, 'spec.json'), 'utf8')).env;
}

function sessionsOf(ws: TestWorkspace, role: string): string[] {
  return ws.agentLog().filter((e) => e.cmd === 'start' && e.role === `${ws.short}/${role}`).map((e) => e.session);
}

/** The node's log, as it stands: read into a failure, so a stall of the node's clock says what each tick did. */
function nodeLog(ws: TestWorkspace): string {
  try {
    return readFileSync(join(ws.home!, 'node', 'node.log'), 'utf8');
  } catch (err) {
    return `(no log: ${String(err)})`;
  }
}

/** Waits as `waitFor` does, for what the node's clock alone brings about; a timeout carries the node's log. */
async function waitOnNode(ws: TestWorkspace, what: string, ready: () => boolean, timeoutMs: number): Promise<void> {
  try {
    await waitFor(what, ready, timeoutMs);
  } catch (err) {
    throw new Error(`${(err as Error).message}\nthe node's log:\n${nodeLog(ws)}`);
  }
}

/** `nxc` run under faketime, `offset` ahead of the wall clock (e.g. +31m). */
function nxcLater(ws: TestWorkspace, offset: string, args: string[]): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('NXC_')) env[k] = v;
  Object.assign(env, {
    NEXUS_HOME: inject('nexusHome'),
    PATH: `${join(REPO, 'bin')}:${process.env['PATH'] ?? ''}`,
    NXC_ACTOR: 'alice',
    AGENT_LOG: ws.log,
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  });
  return new Promise((resolve) => {
    execFile(FAKETIME!, ['-f', offset, process.execPath, join(REPO, 'bin', 'nxc'), ...args], { cwd: ws.root, env }, (err, stdout, stderr) => {
      let json: any = null;
      try {
        json = JSON.parse(stdout);
      } catch {
        /* not JSON */
      }
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr, json });
    });
  });
}

describe('a queued commission, end to end', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await leaseRepo();
  });
  afterAll(async () => {
    writeFileSync(join(ws.root, '..', 'shared', 'gate-a'), '');
    await ws.cleanup();
  });

  it('queues behind the holder with a warning-free exit 0, then starts under the next token once the holder answers', async () => {
    exclusive(ws, 'coder', 'gate', join(ws.root, '..', 'shared', 'gate-a'));
    exclusive(ws, 'rival', 'reply');
    const a = await send(ws, 'coder');
    const b = await send(ws, 'rival');
    expect(b).toMatchObject({ woke: null, warnings: [], queued: { position: 1, holder: { operation: a.operation, thread: a.thread } } });
    const human = await ws.nxc(['status']);
    expect(human.stdout).toContain(`working copy: queued (position 1 behind ${a.operation})`);
    expect(turnEnv(ws, a.woke.session)['NXC_LEASE_TOKEN']).toBe('1');
    writeFileSync(join(ws.root, '..', 'shared', 'gate-a'), '');
    await waitFor('the rival to start', () => sessionsOf(ws, 'rival').length === 1);
    await ws.waitIdle();
    expect(turnEnv(ws, sessionsOf(ws, 'rival')[0]!)['NXC_LEASE_TOKEN']).toBe('2');
  });
});

describe.skipIf(FAKETIME === null)('a contention park, end to end under faketime', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await leaseRepo();
  });
  afterAll(() => ws.cleanup());

  it('parks the hand-back’s work 31 minutes after contention, when `faketime -f +31m nxc tick` runs, and starts the waiting operation', async () => {
    exclusive(ws, 'coder', 'escalate');
    exclusive(ws, 'rival', 'reply');
    const a = await send(ws, 'coder');
    await ws.waitIdle();
    writeFileSync(join(ws.root, 'tracked.txt'), 'half done\n');
    writeFileSync(join(ws.root, 'notes.txt'), 'untracked notes\n');
    const b = await send(ws, 'rival');
    expect(b.queued).toBeDefined();
    const now = await ws.nxc(['tick', '--json']);
    expect(now.json.warnings).toEqual([]);
    expect(sessionsOf(ws, 'rival')).toEqual([]);
    const later = await nxcLater(ws, '+31m', ['tick', '--json']);
    expect(later.code, later.stdout + later.stderr).toBe(0);
    expect(later.json.warnings).toEqual([]);
    await waitFor('the rival to start', () => sessionsOf(ws, 'rival').length === 1);
    await ws.waitIdle();
    const park = `nexus/park/${a.operation}`;
    expect(await git(ws.root, 'show', `${park}:tracked.txt`)).toBe('half done\n');
    expect(await git(ws.root, 'show', `${park}:notes.txt`)).toBe('untracked notes\n');
    expect(readFileSync(join(ws.root, 'tracked.txt'), 'utf8')).toBe('first version\n');
    expect(existsSync(join(ws.root, 'notes.txt'))).toBe(false);
    const human = await ws.nxc(['status', '--all']);
    expect(human.stdout).toMatch(new RegExp(`working copy: parked on ${park} at [0-9a-f]{12}`));
  });
});

describe('a withdrawal and a restore, end to end', () => {
  let ws: TestWorkspace;
  let a: any;
  beforeAll(async () => {
    ws = await leaseRepo();
    exclusive(ws, 'coder', 'hang-once');
    exclusive(ws, 'rival', 'reply');
    a = await send(ws, 'coder');
    await waitFor('the coder to run', () => sessionsOf(ws, 'coder').length === 1);
    writeFileSync(join(ws.root, 'tracked.txt'), 'the coder was here\n');
  });
  afterAll(() => ws.cleanup());

  it('withdraw stops the session’s processes, parks what it left once they are gone, and hands the copy on', async () => {
    const b = await send(ws, 'rival');
    expect(b.queued).toBeDefined();
    const r = await ws.nxc(['withdraw', '--thread', a.thread]);
    expect(r.code, r.stdout + r.stderr).toBe(r.json?.warnings ? exitCodeOf(r.json.warnings) : 0);
    expect(r.stdout).toContain(`withdrew operation ${a.operation}: 1 thread(s) discharged, 1 session(s) asked to stop`);
    await waitFor('the rival to start', () => sessionsOf(ws, 'rival').length === 1, 90_000);
    await ws.waitIdle();
    expect(await git(ws.root, 'show', `nexus/park/${a.operation}:tracked.txt`)).toBe('the coder was here\n');
    expect(readFileSync(join(ws.root, 'tracked.txt'), 'utf8')).toBe('first version\n');
    const done = readdirSync(join(ws.root, '.nxs', 'sessions', a.woke.session)).filter((f) => f.endsWith('.done'));
    expect(done).toEqual(['turn-1.done']);
  });

  it('the next message into the first thread restores the work and tells the session where it was', async () => {
    const r = await ws.nxc(['reply', '--thread', a.thread, '--json', 'carry on after all']);
    expect(r.code, r.stdout + r.stderr).toBe(r.json?.warnings ? exitCodeOf(r.json.warnings) : 0);
    expect(r.json.woke).toMatchObject({ session: a.woke.session, turn: 2 });
    await ws.waitIdle();
    expect(readFileSync(join(ws.root, 'tracked.txt'), 'utf8')).toBe('the coder was here\n');
    const prompt = readFileSync(join(ws.root, '.nxs', 'sessions', a.woke.session, 'turn-2.prompt'), 'utf8');
    expect(prompt).toContain(`Working copy: operation ${a.operation} was parked`);
    expect(turnEnv(ws, a.woke.session)['NXC_LEASE_TOKEN']).toBe('3');
    const log = ws.agentLog().filter((e) => e.cmd === 'reply' && e.role === `${ws.short}/coder`);
    expect(log).toMatchObject([{ turn: 2, code: 0 }]);
  });
});

describe('the node keeps the lease’s clock', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await leaseRepo();
    await ws.startNode(['--tick-ms', '300']);
  });
  afterAll(() => ws.cleanup());

  it('L14 with nobody running a command, the node finds a crashed holder dead, parks its work and starts the operation waiting for the copy', async () => {
    exclusive(ws, 'coder', 'hang');
    exclusive(ws, 'rival', 'reply');
    const a = await send(ws, 'coder');
    const b = await send(ws, 'rival');
    expect(b.queued).toBeDefined();
    writeFileSync(join(ws.root, 'tracked.txt'), 'left by a crash\n');
    // The runtime dies; only its supervisor is left to say so, and nobody runs a command.
    process.kill(-a.woke.pid, 'SIGKILL');
    await waitOnNode(ws, 'the rival to start', () => sessionsOf(ws, 'rival').length === 1, 60_000);
    await waitFor('the park branch', () => {
      try {
        execFileSync('git', ['rev-parse', '--verify', '-q', `nexus/park/${a.operation}`], { cwd: ws.root });
        return true;
      } catch {
        return false;
      }
    });
    expect(await git(ws.root, 'show', `nexus/park/${a.operation}:tracked.txt`)).toBe('left by a crash\n');
  });
});

describe('the node’s clock and a token ref a session moved', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await leaseRepo();
    await ws.startNode(['--tick-ms', '300']);
  });
  afterAll(() => ws.cleanup());

  it('with nobody running a command, sets the ref back, parks the dead holder’s work, starts the waiting operation, and logs lease_token_reset once', async () => {
    exclusive(ws, 'coder', 'hang');
    exclusive(ws, 'rival', 'reply');
    const a = await send(ws, 'coder');
    const b = await send(ws, 'rival');
    expect(b.queued).toBeDefined();
    writeFileSync(join(ws.root, 'tracked.txt'), 'left by the coder\n');
    // What one line of the session's shell can do: a token no grant reached, which fenced every grant after it.
    const oid = execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: ws.root, input: 'nexus-lease-token 99\n' }).toString().trim();
    await git(ws.root, 'update-ref', 'refs/nexus/lease/token', oid);
    process.kill(-a.woke.pid, 'SIGKILL');
    await waitOnNode(ws, 'the rival to start', () => sessionsOf(ws, 'rival').length === 1, 60_000);
    expect(await git(ws.root, 'show', `nexus/park/${a.operation}:tracked.txt`)).toBe('left by the coder\n');
    const log = nodeLog(ws)
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { level: string; msg: string; class?: string; workspace?: string });
    const resets = log.filter((l) => l.class === 'lease_token_reset');
    expect(resets).toEqual([expect.objectContaining({ level: 'warn', workspace: ws.id, msg: expect.stringContaining(`held token 99 (${oid})`) })]);
  });

  it('a park refused on every tick (a dead holder’s tree mid-merge) is one line of the log, not one a tick', async () => {
    // The case before handed the copy to the rival: its answer settles first.
    await ws.waitIdle();
    const rivals = sessionsOf(ws, 'rival').length;
    const a = await send(ws, 'coder');
    expect(a.woke).not.toBeNull();
    const b = await send(ws, 'rival');
    expect(b.queued).toBeDefined();
    // A merge stopped on a conflict: never parked until a person finishes or aborts it.
    await git(ws.root, 'checkout', '-q', '-b', `theirs-${a.operation}`);
    writeFileSync(join(ws.root, 'tracked.txt'), 'their version\n');
    await git(ws.root, 'commit', '-q', '-am', 'theirs');
    await git(ws.root, 'checkout', '-q', 'main');
    writeFileSync(join(ws.root, 'tracked.txt'), 'our version\n');
    await git(ws.root, 'commit', '-q', '-am', 'ours');
    await git(ws.root, 'merge', '-q', `theirs-${a.operation}`).catch(() => undefined);
    expect(existsSync(join(ws.root, '.git', 'MERGE_HEAD'))).toBe(true);
    process.kill(-a.woke.pid, 'SIGKILL');
    const refusals = () =>
      nodeLog(ws)
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { class?: string; thread?: string; reason?: string })
        .filter((l) => l.class === 'work_not_parked' && l.thread === a.operation);
    await waitOnNode(ws, 'the refused park in the log', () => refusals().length > 0, 60_000);
    // Ten more ticks of 300 ms, each refusing the park again.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(refusals()).toEqual([expect.objectContaining({ reason: 'dead' })]);
    expect(sessionsOf(ws, 'rival')).toHaveLength(rivals);
  });
});
