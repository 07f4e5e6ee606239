// The node's parts, each on its own and composed: the command path reads `reads` from the command list,
// the clock's Scheduler and ticker run on a test clock, local delivery's choice of ops is a table, the
// verification threads are closed by their owner, and startNode takes the routes its starter adds.
// Real stores, real worker threads, a real socket; time moves only when the test moves it.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { OpVerifier } from '../../crypto/index.js';
import { silentLogger } from '../../infra/index.js';
import { COMMANDS, handoverPaths, type AnyCommandSpec, type CommandName } from '../../protocol/commands.js';
import type { Op } from '../../protocol/ops.js';
import { findVerb } from '../../node-agent/cli/spec.js';
import { NXC } from '../../node-agent/cli/nxc.js';
import { nodePaths, readRegistry, startNode } from '../../node-agent/host/node/index.js';
import { NODE_PURPOSE, openStore } from '../../node-agent/adapters/store/index.js';
import { wanted } from '../../node-agent/host/node/delivery.js';
import { commandPath } from '../../node-agent/host/node/handlers.js';
import { Served } from '../../node-agent/host/node/served.js';
import { Ticker, TickScheduler } from '../../node-agent/host/node/ticks.js';
import { postJson } from '../../node-agent/host/rpc/post.js';
import type { NodeRoute } from '../../node-agent/host/rpc/server.js';
import { Forger } from '../helpers/forge.js';
import { runMain, TestClock } from '../helpers/host.js';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';

/** Lets the promises already settled run their callbacks. */
const settle = () => new Promise<void>((r) => setImmediate(r));

describe("the node's command path", () => {
  let ws: TestWorkspace;
  let home: string;
  let served: Served;
  let verifier: OpVerifier;
  beforeAll(async () => {
    ws = await makeWorkspace({ real: true, git: false });
    home = mkdtempSync(join(tmpdir(), 'nexus-node-parts-'));
    verifier = new OpVerifier(1);
    served = new Served({ paths: nodePaths(home), origin: 'node-parts-test', log: silentLogger, announce: () => undefined, check: verifier.check });
    await served.serve(ws.root);
  });
  afterAll(async () => {
    await served.close();
    await verifier.close();
    rmSync(home, { recursive: true, force: true });
    await ws.cleanup();
  });

  /** The workspaces announced after running `name` through a command path reading `specs`. */
  async function announcedAfter(name: 'tick' | 'status', specs: Readonly<Record<CommandName, AnyCommandSpec>>): Promise<string[]> {
    const announced: string[] = [];
    const run = commandPath({ paths: nodePaths(home), served, startedAt: '', ui: () => null, shutdown: () => undefined, announce: (id) => void announced.push(id), specs });
    await run(name, ws.id, name === 'tick' ? {} : { all: false });
    await settle();
    return announced;
  }

  it('announces the workspace after a command the list does not mark as a read, and not after one it marks', async () => {
    expect(await announcedAfter('tick', COMMANDS)).toEqual([ws.id]);
    expect(await announcedAfter('status', COMMANDS)).toEqual([]);
  });

  it('serves a command as a read as soon as the list marks it so, with no other edit', async () => {
    const marked = { ...COMMANDS, tick: { ...COMMANDS.tick, reads: true as const } };
    expect(await announcedAfter('tick', marked)).toEqual([]);
  });
});

describe('the nxc verbs a node runs for a client', () => {
  it('are the verbs the command list names, each running the command that names it', () => {
    const paths = handoverPaths();
    expect(paths).toContain('threads show');
    for (const path of paths) {
      const found = findVerb(NXC, path.split(' '));
      expect(found?.verb.path.join(' ')).toBe(path);
      const command = found!.verb.command!;
      expect((COMMANDS[command] as AnyCommandSpec).nxc).toBe(path);
    }
  });

  it('follow the list: a command given a verb there is one the node runs', () => {
    const specs: Record<string, AnyCommandSpec> = { ...COMMANDS, 'keys.show': { ...COMMANDS['keys.show'], nxc: 'key show' } };
    expect(handoverPaths(specs)).toEqual([...handoverPaths(), 'key show']);
  });
});

describe("the clock's Scheduler on a test clock", () => {
  it('ticks once per instant asked for, earliest first, only once the clock passes it, and never after close', async () => {
    const clock = new TestClock();
    const ticked: number[] = [];
    const scheduler = new TickScheduler(async () => void ticked.push(clock.timers.now()), () => undefined, clock.timers);
    const t0 = clock.timers.now();
    scheduler.schedule(t0 + 1_000);
    scheduler.schedule(t0 + 500);
    scheduler.schedule(t0 + 500);
    expect(scheduler.pending).toEqual([t0 + 500, t0 + 1_000]);
    clock.advance(400);
    await settle();
    expect(ticked).toEqual([]);
    clock.advance(100);
    await settle();
    expect(ticked).toHaveLength(1);
    expect(scheduler.pending).toEqual([t0 + 1_000]);
    clock.advance(500);
    await settle();
    expect(ticked).toHaveLength(2);
    expect(scheduler.pending).toEqual([]);
    scheduler.schedule(clock.timers.now() + 100);
    scheduler.close();
    expect(clock.pendingTimers).toBe(0);
    clock.advance(1_000);
    await settle();
    expect(ticked).toHaveLength(2);
  });

  it('reports a failed tick and still ticks at the next instant', async () => {
    const clock = new TestClock();
    const errors: unknown[] = [];
    let runs = 0;
    const scheduler = new TickScheduler(async () => {
      runs++;
      if (runs === 1) throw new Error('store busy');
    }, (err) => void errors.push(err), clock.timers);
    const t0 = clock.timers.now();
    scheduler.schedule(t0 + 10);
    scheduler.schedule(t0 + 100);
    clock.advance(50);
    await settle();
    clock.advance(50);
    await settle();
    expect(runs).toBe(2);
    expect(errors).toHaveLength(1);
  });
});

describe('the test clock', () => {
  it('fires a timer at the move that reaches it, however much wall time passed since it was armed', () => {
    const clock = new TestClock();
    let fired = 0;
    clock.timers.after(1_000, () => void fired++);
    // A loaded machine between two lines of a test: the wall clock moves, the test's has not.
    const armed = Date.now();
    while (Date.now() - armed < 5) {
      // waiting on the wall clock, on purpose
    }
    clock.advance(999);
    expect(fired).toBe(0);
    clock.advance(1);
    expect(fired).toBe(1);
  });
});

describe("the node's ticker on a test clock", () => {
  it('ticks every workspace each period, skipping one whose previous tick has not finished, and stops at close', async () => {
    const clock = new TestClock();
    const started: string[] = [];
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const ticker = new Ticker(1_000, () => ['a', 'b'], (id) => (started.push(id), id === 'a' ? slow : Promise.resolve()), clock.timers);
    clock.advance(999);
    expect(started).toEqual([]);
    clock.advance(1);
    expect(started).toEqual(['a', 'b']);
    await settle();
    clock.advance(1_000);
    expect(started).toEqual(['a', 'b', 'b']);
    release();
    await settle();
    clock.advance(1_000);
    expect(started).toEqual(['a', 'b', 'b', 'a', 'b']);
    ticker.close();
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('local delivery: which ops a workspace takes', () => {
  const to = 'W'.repeat(26);
  const op = (kind: string, operation: string, body: object = {}) => ({ op: { kind, operation, body } as unknown as Op });
  const opened = (operation: string, target: object) => op('thread.opened', operation, { target });
  it.each([
    ['a thread addressed to it brings its whole operation', [opened('o1', { kind: 'remote', workspace: to, role: 'dev' }), op('message.posted', 'o1')], new Set<string>(), 2],
    ['a thread addressed elsewhere brings nothing', [opened('o1', { kind: 'remote', workspace: 'X'.repeat(26), role: 'dev' }), op('message.posted', 'o1')], new Set<string>(), 0],
    ['an operation it holds brings its ops', [op('message.posted', 'o2')], new Set(['o2']), 1],
    ['a key rotation always', [op('workspace.key_rotated', 'k')], new Set<string>(), 1],
    ['a local thread nothing', [opened('o3', { kind: 'persona', role: 'dev' })], new Set<string>(), 0],
  ])('%s', (_, ops, held, count) => {
    expect(wanted(to, ops, held)).toHaveLength(count);
  });
});

describe('the verification threads and their owner', () => {
  it('verify on threads started from their own file, refuse a bad signature there, and end when closed', async () => {
    const forger = new Forger();
    const texts = Array.from({ length: 20 }, (_, i) => forger.thread(`subject ${i}`).texts).flat();
    // The signature's last character changed to another that keeps it canonical base64url (A, Q, g, w end 64 bytes).
    const m = /"sig":"([A-Za-z0-9_-]{85})(.)"\}$/.exec(texts[7]!)!;
    const bad = `${texts[7]!.slice(0, m.index)}"sig":"${m[1]}${m[2] === 'A' ? 'Q' : 'A'}"}`;
    const verifier = new OpVerifier(2);
    const checked = await verifier.check([...texts.slice(0, 7), bad, ...texts.slice(8)]);
    expect(verifier.threads).toBe(2);
    expect(checked.filter((c) => c.ok)).toHaveLength(39);
    expect(checked[7]).toMatchObject({ ok: false });
    await verifier.close();
    expect(verifier.threads).toBe(0);
    // After its owner closed them, a check still answers, on the calling thread.
    expect((await verifier.check(texts)).every((c) => c.ok)).toBe(true);
    expect(verifier.threads).toBe(0);
  });
});

describe('startNode, composed', () => {
  it('serves the routes its starter adds, lending them its side, arms its clock on the timers given, and closes them', async () => {
    const home = mkdtempSync(join(tmpdir(), 'nexus-node-parts-'));
    const clock = new TestClock();
    const echo: NodeRoute = { path: '/v1/echo', maxBody: 1024, handle: async (body, node) => ({ body, home: node.home, serves: node.serves('nobody') }) };
    const node = await startNode({ home, ui: false, log: silentLogger, routes: [echo], timers: clock.timers, tickMs: 60_000 });
    try {
      const answer = await postJson(node.socket, '/v1/echo', { hello: 1 }, 10_000);
      expect(JSON.parse(answer.text)).toEqual({ body: { hello: 1 }, home: nodePaths(home).home, serves: false });
      expect(clock.pendingTimers).toBe(1);
    } finally {
      await node.close();
      rmSync(home, { recursive: true, force: true });
    }
    expect(clock.pendingTimers).toBe(0);
  });

  it('has no route it was not given: the hand-over is the starter’s to add', async () => {
    const home = mkdtempSync(join(tmpdir(), 'nexus-node-parts-'));
    const node = await startNode({ home, ui: false, log: silentLogger });
    try {
      expect((await postJson(node.socket, '/v1/cli', {}, 10_000)).status).toBe(404);
    } finally {
      await node.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("the node's record of a sender's environment", () => {
  it("records the node's own environment for the operations its commands open, never the environment a client's command came with", async () => {
    const home = mkdtempSync(join(tmpdir(), 'nexus-node-env-'));
    const verifier = new OpVerifier(1);
    const served = new Served({ paths: nodePaths(home), origin: 'node-env-test', log: silentLogger, announce: () => undefined, check: verifier.check });
    const ws = await makeWorkspace({ real: true, git: false });
    onTestFinished(async () => {
      await served.close();
      await verifier.close();
      rmSync(home, { recursive: true, force: true });
      await ws.cleanup();
    });
    await served.serve(ws.root);
    const run = commandPath({ paths: nodePaths(home), served, startedAt: '', ui: () => null, shutdown: () => undefined, announce: () => undefined });
    const caller = { actor: 'bob', session: null, hop: null };
    const env = { PROBE_SENDER: 'bob', NXC_ACTOR: 'bob' };
    const a = await run('send', ws.id, { to: '@carol', subject: 'q', text: 'which db?', caller }, { env });
    const recorded = (op: string) => JSON.parse(readFileSync(join(ws.root, '.nxs', 'sessions', '.operations', `${op}.env.json`), 'utf8'));
    // The node's environment (its PATH, its HOME), not the client's probe.
    expect(recorded(a.operation)['PROBE_SENDER']).toBeUndefined();
    expect(recorded(a.operation)['PATH']).toBe(process.env['PATH']);
    // A later command on somebody else's behalf changes nothing of it.
    const before = recorded(a.operation);
    await run('tick', ws.id, {}, { env: { PROBE_SENDER: 'ticker' } });
    expect(recorded(a.operation)).toEqual(before);
  });
});

describe('nxs node register under the wrong NEXUS_HOME', () => {
  it('is refused with STORE_BUSY when a node of another home holds the store, and writes no registration', async () => {
    const ws = await makeWorkspace({ real: true, git: false });
    const home = ws.ownHome();
    // The store is held as a node of another home holds it.
    const held = await openStore(join(ws.root, '.nxs', 'store'), { purpose: NODE_PURPOSE, home: join(ws.root, '..', 'the-other-home') });
    const node = await startNode({ home, ui: false, health: false, log: silentLogger });
    try {
      const r = await runMain('nxs', ['node', 'register', '--json'], { env: { ...process.env, NEXUS_HOME: home }, cwd: ws.root });
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.json.error.code).toBe('STORE_BUSY');
      expect(readRegistry(nodePaths(home)).workspaces).toEqual([]);
      const status = await runMain('nxs', ['node', 'status', '--json'], { env: { ...process.env, NEXUS_HOME: home }, cwd: ws.root });
      expect(status.json.registered).toEqual([]);
    } finally {
      await node.close();
      await held.close();
      await ws.cleanup();
    }
  });
});
