// The node: one background process per NEXUS_HOME serving registered workspaces over a Unix socket.
// Every node here is the real `nxs node run` process, on real sockets and real PGlite stores, and the
// sessions it runs are real sidecars and agents. The commands beside it run the real `nxc`/`nxs` main
// in this process, on the product's own route (the node's socket, or the store opened here), unless
// the case is about the binary itself: a second `nxs node run`, a loader hook that forbids PGlite.
// Nothing here asserts a timing.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, inject, vi } from 'vitest';
import { acquireLock, silentLogger } from '../../infra/index.js';
import { NODE_PURPOSE } from '../../node-agent/adapters/store/index.js';
import { startNode } from '../../node-agent/host/node/index.js';
import { nodeLockPath, nodePaths, writeInfo } from '../../node-agent/host/node/files.js';
import { makeWorkspace, REPO, type CliResult, type TestWorkspace } from '../helpers/workspace.js';
import { until, waitFor } from '../helpers/until.js';

const FORBID_PGLITE = join(REPO, 'test', 'fixtures', 'forbid-pglite.mjs');

/** A workspace whose node and sessions are real processes, with `nxc`/`nxs` run in this process beside them. */
async function realWorkspace(): Promise<TestWorkspace> {
  const ws = await makeWorkspace({ real: true });
  ws.cliInProcess = true;
  return ws;
}

function nodeFiles(ws: TestWorkspace) {
  const dir = join(ws.home!, 'node');
  return { info: join(dir, 'node.json'), socket: join(dir, 'node.sock'), log: join(dir, 'node.log') };
}

/**
 * Runs bin/<bin> as a child process with the workspace's environment, optionally with extra `node`
 * flags (a loader hook) and a kill-after timeout (so a command that wrongly keeps running cannot hang
 * the suite).
 */
function cli(
  ws: TestWorkspace,
  bin: 'nxc' | 'nxs',
  args: string[],
  opts: { nodeArgs?: string[]; killAfterMs?: number; env?: Record<string, string> } = {},
): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('NXC_')) env[k] = v;
  Object.assign(env, {
    NEXUS_HOME: ws.home ?? inject('nexusHome'),
    PATH: `${join(REPO, 'bin')}:${process.env['PATH'] ?? ''}`,
    NXC_ACTOR: 'alice',
    AGENT_LOG: ws.log,
    ...opts.env,
  });
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [...(opts.nodeArgs ?? []), join(REPO, 'bin', bin), ...args],
      { cwd: ws.root, env, timeout: opts.killAfterMs ?? 0, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        let json: any = null;
        try {
          json = JSON.parse(stdout);
        } catch {
          /* not JSON */
        }
        resolve({ code, stdout, stderr, json });
      },
    );
    child.stdin?.end('');
  });
}

/** The state letter and parent pid of a process, from /proc; null once it is gone. */
function procStat(pid: number): { state: string; ppid: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: rest[0]!, ppid: Number(rest[1]) };
  } catch {
    return null;
  }
}

/** True while the process runs (a zombie waiting to be reaped has ended: it does not count). */
function running(pid: number): boolean {
  const s = procStat(pid);
  return s !== null && s.state !== 'Z';
}

function kill(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* already gone */
  }
}

/** The shape of a JSON value: its keys at every level and the kinds of its leaves, not their values. */
function shape(v: unknown): unknown {
  if (v === null) return 'null';
  if (Array.isArray(v)) return v.map(shape);
  if (typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v as object)
        .sort()
        .map((k) => [k, shape((v as Record<string, unknown>)[k])]),
    );
  }
  return typeof v;
}

function ok(r: CliResult): CliResult {
  expect(r.code, `${r.stdout}${r.stderr}`).toBe(0);
  return r;
}


describe('a running node', () => {
  // One node for the cases that only need one running: the loader-hook cases first (they need a
  // workspace with no open operation), the second-node refusals, then status and stop.
  let ws: TestWorkspace;
  let direct: TestWorkspace;
  let first: number;
  beforeAll(async () => {
    ws = await realWorkspace();
    direct = await realWorkspace();
    await ws.startNode();
    direct.ownHome();
    first = JSON.parse(readFileSync(nodeFiles(ws).info, 'utf8')).pid;
  });
  afterAll(async () => {
    await ws.cleanup();
    await direct.cleanup();
  });

  describe('the socket path does not load PGlite', () => {
    const hook = ['--import', FORBID_PGLITE];

    it('nxc status --json succeeds through the node with a loader hook that forbids @electric-sql/pglite', async () => {
      const r = await cli(ws, 'nxc', ['status', '--json'], { nodeArgs: hook });
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.json).toMatchObject({ operations: [] });
      expect(r.stderr).not.toContain('FORBIDDEN_PGLITE');
    });

    it('send, reply, threads show and tick through the node succeed under the same hook', async () => {
      const sent = await cli(ws, 'nxc', ['send', '@bob', '--subject', 'q', '--json', 'hello'], { nodeArgs: hook });
      expect(sent.code, sent.stdout + sent.stderr).toBe(0);
      const replied = await cli(ws, 'nxc', ['reply', '--thread', sent.json.thread, '--json', 'hi'], { nodeArgs: hook, env: { NXC_ACTOR: 'bob' } });
      expect(replied.code, replied.stdout + replied.stderr).toBe(0);
      const shown = await cli(ws, 'nxc', ['threads', 'show', sent.json.thread, '--json'], { nodeArgs: hook });
      expect(shown.code, shown.stdout + shown.stderr).toBe(0);
      expect(shown.json.messages).toHaveLength(2);
      const tick = await cli(ws, 'nxc', ['tick', '--json'], { nodeArgs: hook });
      expect(tick.code, tick.stdout + tick.stderr).toBe(0);
      expect(tick.json.via).toBe('node');
    });

    it('the same hook makes nxc status fail on the direct path, which must open the store (the hook really fires)', async () => {
      const r = await cli(direct, 'nxc', ['status', '--json'], { nodeArgs: hook });
      expect(r.code).not.toBe(0);
      expect(r.stdout + r.stderr).toContain('FORBIDDEN_PGLITE');
      // Without the hook the same command works there.
      expect(ok(await cli(direct, 'nxc', ['status', '--json'])).json).toMatchObject({ operations: [] });
    });
  });

  describe('one node per NEXUS_HOME', () => {
    it('a second nxs node run while one runs is refused with NODE_RUNNING, exit 2, naming the first node by its pid', async () => {
      const second = await cli(ws, 'nxs', ['node', 'run', '--json'], { killAfterMs: 60_000 });
      expect(second.code, second.stdout + second.stderr).toBe(2);
      expect(second.json.error.code).toBe('NODE_RUNNING');
      expect(second.json.error.message).toContain(`pid ${first}`);
      const plain = await cli(ws, 'nxs', ['node', 'run'], { killAfterMs: 60_000 });
      expect(plain.code).toBe(2);
      expect(plain.stderr).toMatch(new RegExp(`NODE_RUNNING.*pid ${first}`));
    });

    it('a second nxs node start while one runs is refused the same way', async () => {
      const second = await ws.nxs(['node', 'start', '--json']);
      expect(second.code, second.stdout + second.stderr).toBe(2);
      expect(second.json.error.code).toBe('NODE_RUNNING');
      expect(second.json.error.message).toContain(`pid ${first}`);
    });

    it('the first node keeps serving after the refusals, from the same socket and node.json', async () => {
      const files = nodeFiles(ws);
      expect(running(first)).toBe(true);
      expect(JSON.parse(readFileSync(files.info, 'utf8')).pid).toBe(first);
      expect(existsSync(files.socket)).toBe(true);
      const s = ok(await ws.nxs(['node', 'status', '--json'])).json;
      expect(s).toMatchObject({ running: true, pid: first });
      expect(s.serving.map((w: any) => w.id)).toEqual([ws.id]);
      const sent = ok(await ws.nxc(['send', '@bob', '--subject', 'still there?', '--json', 'hello']));
      expect(sent.json.posted).toBe(true);
      expect(ok(await ws.nxc(['tick', '--json'])).json.via).toBe('node');
    });
  });

  describe('starting, inspecting and stopping the node', () => {
    it('nxs node status --json shows the started node running, with its pid, its socket and the registered workspace it serves', async () => {
      const files = nodeFiles(ws);
      const s = ok(await ws.nxs(['node', 'status', '--json'])).json;
      const recorded = JSON.parse(readFileSync(files.info, 'utf8'));
      expect(s).toMatchObject({ running: true, pid: recorded.pid, socket: files.socket, home: ws.home });
      expect(running(s.pid)).toBe(true);
      expect(existsSync(files.socket)).toBe(true);
      expect(s.registered.map((w: any) => w.id)).toEqual([ws.id]);
      expect(s.serving.map((w: any) => w.id)).toEqual([ws.id]);
      const tick = ok(await ws.nxc(['tick', '--json'])).json;
      expect(tick).toMatchObject({ via: 'node', warnings: [] });
    });

    it('nxs node stop ends the node: its process is gone and its socket and node.json are removed', async () => {
      const files = nodeFiles(ws);
      const pid = JSON.parse(readFileSync(files.info, 'utf8')).pid as number;
      const stopped = ok(await ws.nxs(['node', 'stop', '--json'])).json;
      expect(stopped).toEqual({ stopped: true, pid });
      expect(running(pid)).toBe(false);
      expect(existsSync(files.socket)).toBe(false);
      expect(existsSync(files.info)).toBe(false);
      const s = ok(await ws.nxs(['node', 'status', '--json'])).json;
      expect(s).toMatchObject({ running: false, pid: null, socket: null, serving: [] });
      // Still registered: commands go direct and say the node is not running.
      expect(s.registered.map((w: any) => w.id)).toEqual([ws.id]);
      const tick = ok(await ws.nxc(['tick', '--json'])).json;
      expect(tick.via).toBe('direct');
    });

    it('nxs node stop when no node runs exits 0 and says no node was running', async () => {
      const plain = ok(await ws.nxs(['node', 'stop']));
      expect(plain.stdout).toMatch(/no node was running/);
      const json = ok(await ws.nxs(['node', 'stop', '--json'])).json;
      expect(json).toEqual({ stopped: false, running: false });
    });
  });
});

describe('a second node for a home whose lock is held', () => {
  // The node's own start, in this process, against a lock this process holds: as a starting node
  // (no node.json yet) or as a node that is up (its node.json names the lock's holder). The clock is
  // faked, so "at once" means before any timer fires, and the grace passes without being waited for.
  let home: string;
  let release: () => void;
  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'nexus-node-lock-'));
  });
  afterEach(() => {
    release?.();
    rmSync(nodePaths(home).info, { force: true });
    vi.useRealTimers();
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  async function holdLock(): Promise<void> {
    const paths = nodePaths(home);
    mkdirSync(paths.dir, { recursive: true });
    release = await acquireLock(nodeLockPath(paths), { waitMs: 0, purpose: NODE_PURPOSE, home, busy: () => new Error('the lock is taken') });
  }

  /** Whether `p` has settled once every pending callback but the timers has run. */
  async function settled(p: Promise<unknown>): Promise<boolean> {
    let done = false;
    p.then(
      () => (done = true),
      () => (done = true),
    );
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    return done;
  }

  it('is refused with NODE_RUNNING at once, without waiting out the grace, when a node that is up holds it', async () => {
    await holdLock();
    writeInfo(nodePaths(home), { pid: process.pid, started_at: new Date().toISOString(), socket: nodePaths(home).socket, home });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const second = startNode({ home, ui: false, log: silentLogger });
    second.catch(() => undefined);
    expect(await settled(second)).toBe(true);
    await expect(second).rejects.toMatchObject({ code: 'NODE_RUNNING', message: expect.stringContaining(`a node already runs for ${home}: pid ${process.pid}`) });
  });

  it('waits out a short grace while the holder is a node still starting, and is refused with NODE_RUNNING naming it', async () => {
    await holdLock();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const second = startNode({ home, ui: false, log: silentLogger });
    second.catch(() => undefined);
    expect(await settled(second)).toBe(false);
    await vi.advanceTimersByTimeAsync(3_000);
    await expect(second).rejects.toMatchObject({ code: 'NODE_RUNNING', message: expect.stringContaining(`a node is starting or running for ${home}: pid ${process.pid}`) });
  });

  it('is refused as soon as the starting node shows up, before the grace is out', async () => {
    await holdLock();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const second = startNode({ home, ui: false, log: silentLogger });
    second.catch(() => undefined);
    expect(await settled(second)).toBe(false);
    writeInfo(nodePaths(home), { pid: process.pid, started_at: new Date().toISOString(), socket: nodePaths(home).socket, home });
    await vi.advanceTimersByTimeAsync(500);
    expect(await settled(second)).toBe(true);
    await expect(second).rejects.toMatchObject({ code: 'NODE_RUNNING', message: expect.stringContaining(`a node already runs for ${home}: pid ${process.pid}`) });
  });
});

describe('commands through the node and directly', () => {
  let served: TestWorkspace;
  let direct: TestWorkspace;
  /** Each workspace's outputs of the same script, by step name. */
  const out: Record<'served' | 'direct', Record<string, any>> = { served: {}, direct: {} };

  async function script(ws: TestWorkspace, into: Record<string, any>): Promise<void> {
    into.sendPerson = ok(await ws.nxc(['send', '@bob', '--subject', 'question', '--json', 'Can you look at the build?'])).json;
    into.sendNoSubject = ok(await ws.nxc(['send', '@bob', '--json', 'and no subject this time'])).json;
    into.replyPerson = ok(await ws.nxc(['reply', '--thread', into.sendPerson.thread, '--json', 'looked: it is green'], { env: { NXC_ACTOR: 'bob' } })).json;
    into.commission = ok(await ws.nxc(['send', 'coder', '--subject', 'parser', '--json', 'Write the parser.'])).json;
    await ws.waitIdle();
    into.followUp = ok(await ws.nxc(['reply', '--thread', into.commission.thread, '--json', 'thanks; one more thing'])).json;
    await ws.waitIdle();
    into.status = ok(await ws.nxc(['status', '--all', '--json'])).json;
    into.thread = ok(await ws.nxc(['threads', 'show', into.commission.thread, '--json'])).json;
    into.tick = ok(await ws.nxc(['tick', '--json'])).json;
    into.tickThread = ok(await ws.nxc(['tick', '--thread', into.sendPerson.thread, '--json'])).json;
  }

  beforeAll(async () => {
    served = await realWorkspace();
    // The direct side in the in-process host: its own store and the same engine, with a scripted session.
    direct = await makeWorkspace();
    for (const ws of [served, direct]) ws.persona('coder', { mode: 'reply' });
    await served.startNode();
    direct.ownHome();
    await script(served, out.served);
    await script(direct, out.direct);
  }, 240_000);
  afterAll(async () => {
    await served.cleanup();
    await direct.cleanup();
  });

  it('the node serves every command of the script and the direct workspace opens its own store', () => {
    expect(out.served.tick).toMatchObject({ ticked: true, via: 'node', settled: 0, thread: null, warnings: [] });
    expect(out.direct.tick).toMatchObject({ ticked: true, via: 'direct', settled: 0, thread: null, warnings: [] });
    expect(out.served.tickThread).toMatchObject({ via: 'node', thread: out.served.sendPerson.thread });
  });

  it.each(['sendPerson', 'sendNoSubject', 'replyPerson', 'commission', 'followUp', 'status', 'thread', 'tick', 'tickThread'])(
    'the %s output through the node has the same fields as the direct one',
    (step) => {
      expect(shape(out.served[step])).toEqual(shape(out.direct[step]));
    },
  );

  it('receipts through the node carry the same verdicts as direct ones', () => {
    const pick = (r: any) => ({
      posted: r.posted,
      woke: r.woke && { handle: r.woke.handle.split('/')[1], depth: r.woke.depth, turn: r.woke.turn, pid: typeof r.woke.pid },
      warnings: r.warnings,
      refs_warning: r.refs_warning,
      worker_names_a_working_copy: r.worker_names_a_working_copy,
      dirty: r.working_copy?.dirty,
    });
    for (const step of ['sendPerson', 'sendNoSubject', 'replyPerson', 'commission', 'followUp']) {
      expect(pick(out.served[step]), step).toEqual(pick(out.direct[step]));
    }
    expect(out.served.commission.woke).toMatchObject({ handle: `${served.short}/coder`, depth: 1, turn: 1 });
    expect(out.served.followUp.woke).toMatchObject({ session: out.served.commission.woke.session, turn: 2 });
  });

  it('a session commissioned through the node runs, answers through it, and each of its turns is settled through the node', () => {
    const sid = out.served.commission.woke.session as string;
    const dir = join(served.root, '.nxs', 'sessions', sid);
    const done = readdirSync(dir)
      .filter((f) => /^turn-\d+\.done$/.test(f))
      .sort()
      .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')));
    // The node holds the store lock the whole time: the sidecar's finishTurn can only have gone over the socket.
    expect(done).toMatchObject([
      { session: sid, turn: 1, exitCode: 0, outcome: 'replied', via: 'node' },
      { session: sid, turn: 2, exitCode: 0, outcome: 'replied', via: 'node' },
    ]);
    // The runtime's own nxc calls went through the node too, and were accepted.
    const replies = served.agentLog().filter((e) => e.session === sid && e.cmd === 'reply');
    expect(replies.map((e) => e.code)).toEqual([0, 0]);
    const row = out.served.status.operations
      .flatMap((o: any) => o.threads)
      .find((t: any) => t.thread === out.served.commission.thread);
    expect(row).toMatchObject({ state: 'answered', substituted: false, escalated: false, session: { id: sid, turn: 2, running: false } });
    expect(out.served.thread.messages.map((m: any) => [m.author, m.effect])).toEqual([
      ['alice', 'commission'],
      [`${served.short}/coder`, 'answer'],
      ['alice', 'reopen'],
      [`${served.short}/coder`, 'answer'],
    ]);
  });

  it('the served workspace is still served by the same node after the script', async () => {
    const s = ok(await served.nxs(['node', 'status', '--json'])).json;
    expect(s.serving.map((w: any) => w.id)).toEqual([served.id]);
  });
});


describe('service_not_running', () => {
  let registered: TestWorkspace;
  let unregistered: TestWorkspace;
  const hasServiceWarning = (r: CliResult) => (r.json.warnings as any[]).some((w) => w.class === 'service_not_running');
  beforeAll(async () => {
    // Served in this process: the warning is the router's (registered, and no node runs), the same code the CLI runs.
    registered = await makeWorkspace();
    unregistered = await makeWorkspace();
    registered.ownHome();
    unregistered.ownHome();
    const reg = ok(await registered.nxs(['node', 'register', '--json'])).json;
    expect(reg).toEqual({ workspace: registered.id, registered: true, changed: true, node_running: false });
  });
  afterAll(async () => {
    await registered.cleanup();
    await unregistered.cleanup();
  });

  it('nxs node register with no node running says so', async () => {
    const again = ok(await registered.nxs(['node', 'register']));
    expect(again.stdout).toMatch(/already was/);
    const ws2 = ok(await registered.nxs(['node', 'status', '--json'])).json;
    expect(ws2).toMatchObject({ running: false, serving: [] });
    expect(ws2.registered.map((w: any) => w.id)).toEqual([registered.id]);
  });

  it('a registered workspace with no node running gets a service_not_running warning on send, reply and tick, with exit code 0', async () => {
    const sent = await registered.nxc(['send', '@bob', '--subject', 'q', '--json', 'hello']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    expect(sent.json.posted).toBe(true);
    expect(sent.json.warnings).toContainEqual(expect.objectContaining({ class: 'service_not_running', message: expect.stringContaining('nxs node start') }));
    const replied = await registered.nxc(['reply', '--thread', sent.json.thread, '--json', 'hi'], { env: { NXC_ACTOR: 'bob' } });
    expect(replied.code, replied.stdout + replied.stderr).toBe(0);
    expect(hasServiceWarning(replied)).toBe(true);
    const tick = await registered.nxc(['tick', '--json']);
    expect(tick.code, tick.stdout + tick.stderr).toBe(0);
    expect(tick.json).toMatchObject({ via: 'direct', warnings: [{ class: 'service_not_running' }] });
    const plainTick = await registered.nxc(['tick']);
    expect(plainTick.code).toBe(0);
    expect(plainTick.stdout).toMatch(/warning service_not_running/);
    const plainSend = await registered.nxc(['send', '@bob', '--subject', 'q', 'again']);
    expect(plainSend.code).toBe(0);
    expect(plainSend.stdout).toMatch(/warning service_not_running/);
  });

  it('an unregistered workspace never gets it', async () => {
    const sent = ok(await unregistered.nxc(['send', '@bob', '--subject', 'q', '--json', 'hello']));
    expect(hasServiceWarning(sent)).toBe(false);
    const replied = ok(await unregistered.nxc(['reply', '--thread', sent.json.thread, '--json', 'hi'], { env: { NXC_ACTOR: 'bob' } }));
    expect(hasServiceWarning(replied)).toBe(false);
    const tick = ok(await unregistered.nxc(['tick', '--json']));
    expect(tick.json).toMatchObject({ via: 'direct', warnings: [] });
  });

  it('after nxs node unregister the warning stops', async () => {
    const un = ok(await registered.nxs(['node', 'unregister', '--json'])).json;
    expect(un).toEqual({ workspace: registered.id, registered: false, changed: true, node_running: false });
    const sent = ok(await registered.nxc(['send', '@bob', '--subject', 'q', '--json', 'hello']));
    expect(hasServiceWarning(sent)).toBe(false);
    expect(ok(await registered.nxc(['tick', '--json'])).json.warnings).toEqual([]);
  });
});

describe('a node killed with SIGKILL', () => {
  let ws: TestWorkspace;
  let killed: number;
  beforeAll(async () => {
    ws = await realWorkspace();
    await ws.startNode();
    expect(ok(await ws.nxc(['tick', '--json'])).json.via).toBe('node');
    killed = JSON.parse(readFileSync(nodeFiles(ws).info, 'utf8')).pid;
    process.kill(killed, 'SIGKILL');
    await waitFor('the killed node to end', () => !running(killed));
  });
  afterAll(() => ws.cleanup());

  it('leaves its node.json and socket behind, and status says no node runs', async () => {
    const files = nodeFiles(ws);
    expect(existsSync(files.info)).toBe(true);
    expect(existsSync(files.socket)).toBe(true);
    const s = ok(await ws.nxs(['node', 'status', '--json'])).json;
    expect(s).toMatchObject({ running: false, pid: null });
  });

  it('does not stop commands: they go direct, with the service_not_running warning', { timeout: 180_000 }, async () => {
    // The dead node's store lock names a pid that no longer runs: the first command takes it over.
    const tick = await ws.nxc(['tick', '--json']);
    expect(tick.code, tick.stdout + tick.stderr).toBe(0);
    expect(tick.json).toMatchObject({ via: 'direct', warnings: [{ class: 'service_not_running' }] });
    const sent = await ws.nxc(['send', '@bob', '--subject', 'after the crash', '--json', 'still here']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    expect(sent.json.warnings.map((w: any) => w.class)).toEqual(['service_not_running']);
    const status = ok(await ws.nxc(['status', '--json'])).json;
    expect(status.operations.map((o: any) => o.subject)).toEqual(['after the crash']);
  });

  it('a new nxs node start succeeds afterwards and serves the workspace again', async () => {
    const started = ok(await ws.nxs(['node', 'start', '--json'])).json;
    expect(started.running).toBe(true);
    expect(started.pid).not.toBe(killed);
    expect(running(started.pid)).toBe(true);
    const s = ok(await ws.nxs(['node', 'status', '--json'])).json;
    expect(s).toMatchObject({ running: true, pid: started.pid });
    expect(s.serving.map((w: any) => w.id)).toEqual([ws.id]);
    expect(ok(await ws.nxc(['tick', '--json'])).json).toMatchObject({ via: 'node', warnings: [] });
  });

  it('a new nxs node start right after a node was killed waits for the dead node to let go of its lock instead of failing', { timeout: 180_000 }, async () => {
    const again = JSON.parse(readFileSync(nodeFiles(ws).info, 'utf8')).pid as number;
    process.kill(again, 'SIGKILL');
    await waitFor('the killed node to end', () => !running(again));
    const started = await ws.nxs(['node', 'start', '--json']);
    expect(started.code, started.stdout + started.stderr).toBe(0);
    expect(started.json.pid).not.toBe(again);
    expect(ok(await ws.nxc(['tick', '--json'])).json).toMatchObject({ via: 'node', warnings: [] });
  });
});

describe('a node.json left behind by a node from before a reboot, its pid now another process', () => {
  let ws: TestWorkspace;
  let stranger: ChildProcess;
  beforeAll(async () => {
    ws = await realWorkspace();
    const home = ws.ownHome();
    ok(await ws.nxs(['node', 'register', '--json']));
    // A live process that is not a node, named by a pid record with no lock and no socket behind it.
    stranger = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    await waitFor('the stand-in process to start', () => stranger.pid !== undefined && running(stranger.pid));
    mkdirSync(join(home, 'node'), { recursive: true });
    writeFileSync(nodeFiles(ws).info, JSON.stringify({ pid: stranger.pid, started_at: '2020-01-01T00:00:00.000Z', socket: nodeFiles(ws).socket, home }) + '\n');
  });
  afterAll(async () => {
    stranger.kill('SIGKILL');
    await ws.cleanup();
  });

  it('is not taken for a running node: status says none runs and commands go direct with the service_not_running warning', async () => {
    expect(ok(await ws.nxs(['node', 'status', '--json'])).json).toMatchObject({ running: false, pid: null });
    const tick = ok(await ws.nxc(['tick', '--json'])).json;
    expect(tick).toMatchObject({ via: 'direct', warnings: [{ class: 'service_not_running' }] });
  });

  it('nxs node stop leaves that process alone', async () => {
    const stopped = ok(await ws.nxs(['node', 'stop', '--json'])).json;
    expect(stopped).toEqual({ stopped: false, running: false });
    expect(running(stranger.pid!)).toBe(true);
  });

  it('nxs node start is not refused, and the new node serves the workspace', async () => {
    const started = await ws.nxs(['node', 'start', '--json']);
    expect(started.code, started.stdout + started.stderr).toBe(0);
    expect(started.json.pid).not.toBe(stranger.pid);
    expect(ok(await ws.nxc(['tick', '--json'])).json).toMatchObject({ via: 'node', warnings: [] });
    expect(running(stranger.pid!)).toBe(true);
  });

  // The node just started serves a workspace that has written nothing yet: the cases below need no more.
  describe('registering and unregistering while a node runs', () => {
    it('nxs node unregister makes the node stop serving the workspace at once: the next command goes direct, without a warning', async () => {
      expect(ok(await ws.nxc(['tick', '--json'])).json.via).toBe('node');
      const un = ok(await ws.nxs(['node', 'unregister', '--json'])).json;
      expect(un).toMatchObject({ workspace: ws.id, registered: false, changed: true, node_running: true });
      const s = ok(await ws.nxs(['node', 'status', '--json'])).json;
      expect(s).toMatchObject({ running: true, registered: [], serving: [] });
      const tick = ok(await ws.nxc(['tick', '--json'])).json;
      expect(tick).toMatchObject({ via: 'direct', warnings: [] });
      const sent = ok(await ws.nxc(['send', '@bob', '--subject', 'direct', '--json', 'hello']));
      expect(sent.json.warnings).toEqual([]);
    });

    it('nxs node register makes the running node serve it again at once', async () => {
      const reg = ok(await ws.nxs(['node', 'register', '--json'])).json;
      expect(reg).toMatchObject({ workspace: ws.id, registered: true, changed: true, node_running: true });
      const s = ok(await ws.nxs(['node', 'status', '--json'])).json;
      expect(s.serving.map((w: any) => w.id)).toEqual([ws.id]);
      expect(ok(await ws.nxc(['tick', '--json'])).json).toMatchObject({ via: 'node', warnings: [] });
      // What was written directly while unregistered is there through the node.
      const status = ok(await ws.nxc(['status', '--all', '--json'])).json;
      expect(status.operations.map((o: any) => o.subject)).toEqual(['direct']);
    });
  });
});

/** Commissions a hanging session, then kills its sidecar and its runtime with SIGKILL: a turn nobody will report. */
async function killedTurn(ws: TestWorkspace): Promise<{ thread: string; session: string; sidecar: number; runtime: number }> {
  const sent = ok(await ws.nxc(['send', 'sleeper', '--subject', 'never answers', '--json', 'take your time']));
  const runtime = sent.json.woke.pid as number;
  expect(running(runtime)).toBe(true);
  const sidecar = procStat(runtime)!.ppid;
  expect(readFileSync(`/proc/${sidecar}/cmdline`, 'utf8')).toContain('sidecar.js');
  kill(sidecar);
  kill(runtime);
  await waitFor('the sidecar and runtime to end', () => !running(sidecar) && !running(runtime));
  return { thread: sent.json.thread, session: sent.json.woke.session, sidecar, runtime };
}

function expectSettledAsCrash(view: any, ws: TestWorkspace): void {
  expect(view.thread).toMatchObject({ state: 'answered', substituted: true, escalated: true });
  expect(view.messages.at(-1)).toMatchObject({ author: `${ws.short}/sleeper`, effect: 'escalate', substituted: true });
}

describe('the ticker settles a dead turn', () => {
  let ws: TestWorkspace;
  const pids: number[] = [];
  beforeAll(async () => {
    ws = await realWorkspace();
    ws.persona('sleeper', { mode: 'hang' });
    await ws.startNode();
  });
  afterAll(async () => {
    for (const p of pids) kill(p);
    await ws.cleanup();
  });

  it('nxc tick through the node settles a turn whose sidecar and runtime were killed: the thread is answered, substituted and escalated', async () => {
    const t = await killedTurn(ws);
    pids.push(t.sidecar, t.runtime);
    // Nothing has looked yet (threads show does not settle anything): the thread is still owed.
    const before = ok(await ws.nxc(['threads', 'show', t.thread, '--json'])).json;
    expect(before.thread).toMatchObject({ state: 'open', substituted: false, escalated: false });
    const tick = ok(await ws.nxc(['tick', '--json'])).json;
    expect(tick).toMatchObject({ via: 'node', settled: 1, warnings: [] });
    expectSettledAsCrash(ok(await ws.nxc(['threads', 'show', t.thread, '--json'])).json, ws);
    const row = ok(await ws.nxc(['status', '--all', '--json'])).json.operations[0].threads[0];
    expect(row).toMatchObject({ thread: t.thread, state: 'answered', substituted: true, escalated: true, session: { id: t.session, running: false } });
    expect(ok(await ws.nxc(['tick', '--json'])).json.settled).toBe(0);
  });

  it('a node started with --tick-ms settles such a turn on its own, with no command run', async () => {
    ok(await ws.nxs(['node', 'stop', '--json']));
    const started = ok(await ws.nxs(['node', 'start', '--tick-ms', '200', '--json'])).json;
    expect(started.running).toBe(true);
    expect(readFileSync(nodeFiles(ws).log, 'utf8')).toContain('tick every 200 ms');
    const t = await killedTurn(ws);
    pids.push(t.sidecar, t.runtime);
    const view = await until('the ticker to settle the dead turn', async () => {
      const v = ok(await ws.nxc(['threads', 'show', t.thread, '--json'])).json;
      return v.thread.state === 'answered' ? v : undefined;
    });
    expectSettledAsCrash(view, ws);
    expect(ok(await ws.nxc(['tick', '--json'])).json).toMatchObject({ via: 'node', settled: 0 });
  });

  it('--tick-ms is refused unless it is a whole number of milliseconds, and outside run and start', async () => {
    for (const args of [['node', 'start', '--tick-ms', 'soon'], ['node', 'run', '--tick-ms', '0'], ['node', 'status', '--tick-ms', '200']]) {
      // `node run` as its own process: were the flag taken, a node would start and run on in it, killed after a while.
      const r = args[1] === 'run' ? await cli(ws, 'nxs', [...args, '--json'], { killAfterMs: 60_000 }) : await ws.nxs([...args, '--json']);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.json.error.code).toBe('USAGE');
    }
  });

  it('a bad NEXUS_STORE_CACHE refuses nxs node start and run, and a PGlite relay, with USAGE before anything starts', async () => {
    for (const verb of ['start', 'run']) {
      const r = await cli(ws, 'nxs', ['node', verb, '--json'], { env: { NEXUS_STORE_CACHE: 'lots' }, killAfterMs: 60_000 });
      expect(r.code, verb).toBe(2);
      expect(r.json.error).toMatchObject({ code: 'USAGE', message: 'NEXUS_STORE_CACHE must be a size from 128kB to 1GB, such as 16MB, not "lots"' });
    }
    const dir = join(mkdtempSync(join(tmpdir(), 'nexus-relay-cache-')), 'data');
    try {
      const r = await cli(ws, 'nxs', ['relay', 'serve', '--port', '0', '--data-dir', dir], { env: { NEXUS_STORE_CACHE: 'lots' }, killAfterMs: 60_000 });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('USAGE: NEXUS_STORE_CACHE must be a size');
      expect(r.stderr).not.toContain("creating the relay's store");
      expect(existsSync(dir)).toBe(false);
    } finally {
      rmSync(join(dir, '..'), { recursive: true, force: true });
    }
  });

  it('a bad NEXUS_WASM_TIERING refuses nxs node start and run with USAGE before any node starts', async () => {
    for (const verb of ['start', 'run']) {
      const r = await cli(ws, 'nxs', ['node', verb, '--json'], { env: { NEXUS_WASM_TIERING: 'fast' }, killAfterMs: 60_000 });
      expect(r.code, verb).toBe(2);
      expect(r.json.error).toMatchObject({ code: 'USAGE', message: expect.stringContaining('"fast"') });
    }
  });
});
