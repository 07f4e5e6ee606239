// The age rows of `npm run bench:scale`: a workspace store after a long life, against a young one, both
// measured in the same run through a real node (`nxs node run`) and the real CLI (`nxc status --json`).
//   status:     `nxc status --json` on the old store over the same on the young one (median of runs);
//   cold start: `nxs node run` on the old store, from process start to its socket serving;
//   bytes/op:   the old store's size on disk over the ops it holds (reported, not judged).
// Both stores hold the same 100 open operations; the rest of their ops are finished operations of ten ops
// each, the kinds a real workspace gets: a person commissions a persona, its session answers, the person
// follows up and is answered again. Ops are signed with the workspace's key and taken in by the kernel's
// bulk path (COPY and the registered projections, in transactions of a few thousand ops), not by a
// million CLI calls. Knobs: BENCH_SCALE_AGE_OPS (1,000,000: the old store), BENCH_SCALE_AGE_YOUNG (10,000),
// BENCH_SCALE_AGE_N (status calls per run, 20), BENCH_SCALE_AGE_REPEATS (3), BENCH_SCALE_AGE_CACHE (a folder
// where each seeded workspace is kept, and taken again by a later run of the same code: see seededCopy).
import { createHash } from 'node:crypto';
import { spawn, execFile, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { signOp } from '../crypto/index.js';
import { newMessageId, newSessionId, newThreadId, randomUlid } from '../protocol/ids.js';
import type { Op, OpPayload } from '../protocol/ops.js';
import { KeyRing } from '../node-agent/capabilities/keys/index.js';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { ingestOps, type IncomingOp } from '../node-agent/kernel/index.js';
import { packageRoot } from '../node-agent/paths.js';
import { openStore, packagedTemplateDir } from '../node-agent/adapters/store/index.js';
import { findWorkspace, initWorkspace } from '../node-agent/adapters/workspace/index.js';
import { addToRegistry, nodePaths } from '../node-agent/host/node/files.js';
import { sample } from './stats.js';
import type { TargetRow } from './targets.js';

const run = promisify(execFile);

function num(name: string, dflt: number): number {
  const v = Number(process.env[name] ?? '');
  return Number.isFinite(v) && v > 0 ? v : dflt;
}
const OLD_OPS = Math.round(num('BENCH_SCALE_AGE_OPS', 1_000_000));
const YOUNG_OPS = Math.round(num('BENCH_SCALE_AGE_YOUNG', 10_000));
const STATUS_N = Math.round(num('BENCH_SCALE_AGE_N', 20));
const REPEATS = Math.round(num('BENCH_SCALE_AGE_REPEATS', 3));
/** Open operations in either store: what `nxc status` lists. */
const OPEN = 100;
/** Ops of one finished operation. */
const PER_FINISHED = 10;
/** Ops per storing transaction while seeding. */
const CHUNK = 5_000;
/** Where seeded workspaces are kept between runs; unset: each run seeds its own and removes it. */
const CACHE = process.env['BENCH_SCALE_AGE_CACHE'] ?? '';

const progress = (msg: string) => process.stderr.write(`scale-bench: ${msg}\n`);

type Seeded = { home: string; root: string; store: string; ops: number; finished: number; seededSecs: number; cached: boolean };

/** The ops of one finished operation: a persona commissioned, answered, followed up and answered again. */
function finishedOperation(short: string, n: number): Array<Pick<Op, 'operation' | 'thread' | 'session'> & OpPayload> {
  const thread = newThreadId();
  const session = newSessionId();
  const alice = { handle: 'alice', session: null };
  const handle = `${short}/dev`;
  const dev = { handle, session };
  const at = { operation: thread, thread };
  const msg = (author: typeof alice | typeof dev, text: string, effect: 'commission' | 'answer' | 'reopen') =>
    ({ ...at, session: author.session, kind: 'message.posted', body: { message: newMessageId(), author, text, effect, substituted: false, refs: { working_copy: null } } }) as const;
  const ended = (turn: number) => ({ ...at, session, kind: 'session.turn_ended', body: { turn, outcome: 'replied', exit_code: 0, signal: null, timed_out: false } }) as const;
  const started = (turn: number, reason: 'commissioned' | 'follow_up') => ({ ...at, session, kind: 'session.turn_started', body: { role: 'dev', turn, reason, declaration_hash: 'bench' } }) as const;
  return [
    { ...at, session: null, kind: 'thread.opened', body: { parent: null, subject: `change ${n}`, opener: alice, target: { kind: 'persona', role: 'dev', handle } } },
    { ...at, session, kind: 'session.created', body: { role: 'dev', handle, depth: 1 } },
    msg(alice, `please make change ${n}: a paragraph of what is wanted, as people write them`, 'commission'),
    started(1, 'commissioned'),
    msg(dev, `done: change ${n} is on the branch, with its tests; a few lines of what was done`, 'answer'),
    ended(1),
    msg(alice, `thanks; one more thing about change ${n}`, 'reopen'),
    started(2, 'follow_up'),
    msg(dev, `the follow-up on change ${n} is done too`, 'answer'),
    ended(2),
  ];
}

/** An open operation: a question to a person, not answered yet. */
function openOperation(n: number): Array<Pick<Op, 'operation' | 'thread' | 'session'> & OpPayload> {
  const thread = newThreadId();
  const alice = { handle: 'alice', session: null };
  return [
    { operation: thread, thread, session: null, kind: 'thread.opened', body: { parent: null, subject: `open ${n}`, opener: alice, target: { kind: 'person', handle: 'bob' } } },
    { operation: thread, thread, session: null, kind: 'message.posted', body: { message: newMessageId(), author: alice, text: `question ${n}`, effect: 'commission', substituted: false, refs: { working_copy: null } } },
  ];
}

/** A workspace in a git repository of its own, under a NEXUS_HOME of its own, whose store holds about `ops` ops. */
export async function seedWorkspace(base: string, name: string, ops: number): Promise<Seeded> {
  const home = join(base, `${name}-home`);
  const root = join(base, `${name}-repo`);
  mkdirSync(root, { recursive: true });
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: root });
  writeFileSync(join(root, 'README.md'), 'bench\n');
  execFileSync('git', ['add', '.'], { cwd: root });
  execFileSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '-m', 'readme'], { cwd: root });
  const { workspace } = await initWorkspace(root, { name, home });
  const signer = new KeyRing(workspace.paths.keys, workspace.id).signer;
  const finished = Math.max(0, Math.floor((ops - OPEN * 2) / PER_FINISHED));
  const store = await openStore(workspace.paths.store);
  const t0 = performance.now();
  let lamport = 0;
  let written = 0;
  let pending: IncomingOp[] = [];
  const sessions: string[] = [];
  const ts = new Date(Date.now() - 365 * 86_400_000);
  const flush = async () => {
    const batch = pending;
    pending = [];
    await store.db.transaction((tx) => ingestOps(tx, batch, PROJECTIONS));
    written += batch.length;
    if (written % 100_000 < batch.length) progress(`${name}: ${written} ops stored (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  };
  const add = async (drafts: Array<Pick<Op, 'operation' | 'thread' | 'session'> & OpPayload>) => {
    for (const d of drafts) {
      // A year of history: each op a few seconds after the last.
      ts.setTime(ts.getTime() + 3_000);
      if (d.kind === 'session.created') sessions.push(d.session!);
      const op = { id: randomUlid(), workspace: workspace.id, origin: 'bench-seed', lamport: ++lamport, ts: ts.toISOString(), ...d, key: signer.key } as Op;
      pending.push({ ...op, sig: signOp(op, signer).sig });
    }
    if (pending.length >= CHUNK) await flush();
  };
  // The open operations are spread through the history, as a living workspace has them.
  const every = Math.max(1, Math.floor(finished / OPEN));
  let opened = 0;
  for (let i = 0; i < finished; i++) {
    if (i % every === 0 && opened < OPEN) await add(openOperation(opened++));
    await add(finishedOperation(workspace.short, i));
  }
  while (opened < OPEN) await add(openOperation(opened++));
  if (pending.length > 0) await flush();
  // The turns this machine ran for the finished operations: device-local rows that stay once each has ended.
  for (let i = 0; i < sessions.length; i += 10_000) {
    const part = sessions.slice(i, i + 10_000);
    await store.pg.query(
      `insert into session_procs (session, turn, sidecar_pid, runtime_pid, started_at, ended_at, exit_code)
       select s, t, 1, 1, '2025-12-01T00:00:00.000Z', '2025-12-01T00:05:00.000Z', 0 from unnest($1::text[]) as s, (values (1), (2)) as v(t)`,
      [part],
    );
  }
  // No ANALYZE: PGlite never runs one, so a real store's planner has no statistics either.
  const counts = await store.pg.query<{ ops: number; finished: number; turns: number }>(
    'select (select count(*) from ops)::int as ops, (select count(*) from operations where finished)::int as finished, (select count(*) from session_procs)::int as turns',
  );
  await store.close();
  progress(`${name}: ${counts.rows[0]!.ops} ops, ${counts.rows[0]!.finished} finished operations, ${counts.rows[0]!.turns} turns run here, seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  addToRegistry(nodePaths(home), workspace.id, root);
  const seededSecs = (performance.now() - t0) / 1000;
  return { home, root, store: workspace.paths.store, ops: counts.rows[0]!.ops, finished: counts.rows[0]!.finished, seededSecs, cached: false };
}

/** The seeding above, as kept workspaces were made by it: a change to what it writes bumps it. */
const SEED_FORMAT = 1;

/**
 * What a seeded workspace is made by: the seeding above, the kernel and capabilities that store and fold its
 * ops, and the schema (all as built in dist/). A kept workspace is taken again only by code with the same
 * fingerprint, so a change to any projection seeds afresh.
 */
function seedFingerprint(): string {
  const h = createHash('sha256').update(`${SEED_FORMAT} ${basename(packagedTemplateDir())}`);
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.js')) h.update(p.slice(packageRoot().length)).update(readFileSync(p));
    }
  };
  for (const d of ['protocol', 'crypto', 'node-agent/kernel', 'node-agent/capabilities', 'node-agent/adapters/store']) walk(join(packageRoot(), 'dist', d));
  return h.digest('hex').slice(0, 16);
}

/**
 * A workspace of about `ops` ops under `base`: seeded there, or, with BENCH_SCALE_AGE_CACHE set, copied from
 * the one kept there for the same size and code (seeded and kept first when there is none). The copy is a
 * fresh git repository and store folder under a fresh NEXUS_HOME; only its store's contents were made before.
 */
async function seededCopy(base: string, name: string, ops: number): Promise<Seeded> {
  if (CACHE === '') return seedWorkspace(base, name, ops);
  const kept = join(CACHE, `${name}-${ops}-${seedFingerprint()}`);
  const meta = join(kept, 'seeded.json');
  if (!existsSync(meta)) {
    rmSync(`${kept}.tmp`, { recursive: true, force: true });
    mkdirSync(`${kept}.tmp`, { recursive: true });
    const made = await seedWorkspace(`${kept}.tmp`, name, ops);
    writeFileSync(join(`${kept}.tmp`, 'seeded.json'), JSON.stringify({ ops: made.ops, finished: made.finished, seededSecs: made.seededSecs }));
    rmSync(made.home, { recursive: true, force: true });
    rmSync(kept, { recursive: true, force: true });
    renameSync(`${kept}.tmp`, kept);
  }
  const m = JSON.parse(readFileSync(meta, 'utf8')) as { ops: number; finished: number; seededSecs: number };
  const home = join(base, `${name}-home`);
  const root = join(base, `${name}-repo`);
  const t0 = performance.now();
  cpSync(join(kept, `${name}-repo`), root, { recursive: true });
  mkdirSync(home, { recursive: true });
  const workspace = findWorkspace(root, {});
  addToRegistry(nodePaths(home), workspace.id, root);
  progress(`${name}: ${m.ops} ops taken from ${kept} (seeded in ${m.seededSecs.toFixed(0)} s; copied in ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  return { home, root, store: workspace.paths.store, ops: m.ops, finished: m.finished, seededSecs: m.seededSecs, cached: true };
}

function dirBytes(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    total += e.isDirectory() ? dirBytes(p) : e.isFile() ? statSync(p).size : 0;
  }
  return total;
}

type RunningNode = { startMs: number; stop: () => Promise<void> };

/** `nxs node run` in its own process; resolves once it logs that it runs (its socket serves by then). */
async function nodeRun(ws: Seeded, env: NodeJS.ProcessEnv): Promise<RunningNode> {
  const t0 = performance.now();
  // The node logs JSON lines on stderr, the line that it runs among them.
  const child = spawn(process.execPath, ['--single-threaded-gc', join(packageRoot(), 'bin', 'nxs'), 'node', 'run'], { cwd: ws.root, env: { ...env, NEXUS_HOME: ws.home }, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const lines = createInterface({ input: child.stderr });
  const last: string[] = [];
  let up = false;
  for await (const line of lines) {
    if (/running; socket/.test(line)) {
      up = true;
      break;
    }
    last.push(line);
  }
  const startMs = performance.now() - t0;
  if (!up) throw new Error(`the node of ${ws.root} exited before serving:\n${last.slice(-10).join('\n')}`);
  child.stderr.resume();
  return {
    startMs,
    stop: async () => {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** The age rows, measured: status old/young through a node, the old store's cold start, and its bytes per op. */
export async function ageRows(): Promise<{ rows: TargetRow[]; notes: string[] }> {
  const base = mkdtempSync(join(tmpdir(), 'nexus-scale-age-'));
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${join(packageRoot(), 'bin')}:${process.env['PATH']}` };
  for (const k of Object.keys(env)) if (k.startsWith('NXC_')) delete env[k];
  const status: TargetRow = { label: `age: status, ${fmtOps(OLD_OPS)} ops / ${fmtOps(YOUNG_OPS)} ops`, kind: 'max', target: 1.5, unit: 'x', runs: [] };
  const cold: TargetRow = { label: `age: node cold start, ${fmtOps(OLD_OPS)} ops`, kind: 'max', target: 2_000, unit: 'ms', runs: [] };
  const notes: string[] = [];
  try {
    notes.push(`age: load average ${loadavg().map((l) => l.toFixed(1)).join(', ')} before seeding`);
    const young = await seededCopy(base, 'young', YOUNG_OPS);
    const old = await seededCopy(base, 'old', OLD_OPS);
    notes.push(`age: old store ${old.cached ? 'copied from BENCH_SCALE_AGE_CACHE, seeded' : 'seeded'} in ${old.seededSecs.toFixed(0)} s (${(old.ops / old.seededSecs).toFixed(0)} ops/s)`);
    const bytes = { young: dirBytes(young.store), old: dirBytes(old.store) };
    const nxc = (ws: Seeded) => run(process.execPath, [join(packageRoot(), 'bin', 'nxc'), 'status', '--json'], { cwd: ws.root, env: { ...env, NEXUS_HOME: ws.home, NXC_ACTOR: 'alice' }, maxBuffer: 1 << 26 });
    for (let r = 0; r < REPEATS; r++) {
      const medians: Record<'young' | 'old', number> = { young: 0, old: 0 };
      const starts: Record<'young' | 'old', number> = { young: 0, old: 0 };
      for (const [name, ws] of [['young', young], ['old', old]] as const) {
        const node = await nodeRun(ws, env);
        try {
          starts[name] = node.startMs;
          if (name === 'old') cold.runs.push(node.startMs);
          const first = JSON.parse((await nxc(ws)).stdout) as { operations: unknown[] };
          if (first.operations.length !== OPEN) throw new Error(`status of ${name} lists ${first.operations.length} operations, not ${OPEN}`);
          medians[name] = (await sample(STATUS_N, async () => void (await nxc(ws)))).median;
          progress(`run ${r + 1}: ${name} node up in ${node.startMs.toFixed(0)} ms; status median ${medians[name].toFixed(1)} ms`);
        } finally {
          await node.stop();
        }
      }
      status.runs.push(medians.old / medians.young);
      notes.push(`age run ${r + 1}: status ${medians.old.toFixed(1)} ms (${old.ops} ops) vs ${medians.young.toFixed(1)} ms (${young.ops} ops); cold start ${starts.old.toFixed(0)} ms (young store: ${starts.young.toFixed(0)} ms); load average ${loadavg()[0]!.toFixed(1)}`);
    }
    notes.push(
      `age: store bytes per op ${(bytes.old / old.ops).toFixed(0)} (${(bytes.old / 2 ** 20).toFixed(0)} MiB for ${old.ops} ops, ${old.finished} finished operations); ` +
        `young store ${(bytes.young / young.ops).toFixed(0)} bytes per op (${(bytes.young / 2 ** 20).toFixed(0)} MiB)`,
    );
    return { rows: [status, cold], notes };
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

function fmtOps(n: number): string {
  return n >= 1_000_000 ? `${n / 1_000_000}M` : n >= 1_000 ? `${n / 1_000}k` : String(n);
}
