// `npm run bench`: the workspace core on a store holding 10,000 threads.
// Prints the send + reply round trip and `nxc status --json`, through the real CLI and in-process,
// each against a reference measured in the same run (a bare PGlite command in a child process), and
// judges the two rows through a node and the cost of recording a turn's usage against their targets
// (bench/targets.ts): it exits 1 on a miss
// beyond the runs' noise. Knobs: BENCH_THREADS, BENCH_CLI_N, BENCH_ENGINE_N, BENCH_REPEATS.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { newMessageId, newThreadId } from '../protocol/ids.js';
import { hostFor, realDeps } from '../node-agent/host/index.js';
import { addToRegistry, nodePaths } from '../node-agent/host/node/files.js';
import { startNode } from '../node-agent/host/node/index.js';
import { CLI_HANDOVER } from '../node-agent/cli/handover.js';
import { KeyRing } from '../node-agent/capabilities/keys/index.js';
import { appendOps, type OpDraft } from '../node-agent/kernel/index.js';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { packageRoot } from '../node-agent/paths.js';
import { openStore } from '../node-agent/adapters/store/index.js';
import { initWorkspace } from '../node-agent/adapters/workspace/index.js';
import { silentLogger } from '../infra/index.js';
import { sandboxBench } from './sandbox.js';
import { usageBench } from './usage.js';
import { row, sample } from './stats.js';
import { targetsTable, type TargetRow } from './targets.js';

const run = promisify(execFile);
const THREADS = Number(process.env['BENCH_THREADS'] ?? 10_000);
const OPEN_EVERY = 100; // one operation in a hundred is left open, the rest are finished
const CLI_N = Number(process.env['BENCH_CLI_N'] ?? 40);
const ENGINE_N = Number(process.env['BENCH_ENGINE_N'] ?? 300);
const REPEATS = Number(process.env['BENCH_REPEATS'] ?? 3);

async function main(): Promise<void> {
  const base = mkdtempSync(join(tmpdir(), 'nexus-bench-'));
  const home = join(base, 'home');
  const root = join(base, 'repo');
  mkdirSync(root);
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: root });
  writeFileSync(join(root, 'README.md'), 'bench\n');
  execFileSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '-am', 'x', '--allow-empty'], { cwd: root });
  execFileSync('git', ['add', '.'], { cwd: root });
  execFileSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '-m', 'readme'], { cwd: root });
  const { workspace } = await initWorkspace(root, { name: 'bench', home });
  const env: NodeJS.ProcessEnv = { ...process.env, NEXUS_HOME: home, PATH: `${join(packageRoot(), 'bin')}:${process.env['PATH']}` };
  for (const k of Object.keys(env)) if (k.startsWith('NXC_')) delete env[k];

  // Seed: 10,000 threads between people, each opened and (mostly) answered, written in batches.
  process.stderr.write(`seeding ${THREADS} threads...`);
  const seedStart = performance.now();
  let store = await openStore(workspace.paths.store);
  const writer = { workspace: workspace.id, origin: 'bench', now: () => new Date(), signer: new KeyRing(workspace.paths.keys, workspace.id).signer, projections: PROJECTIONS };
  for (let done = 0; done < THREADS; ) {
    const batch = Math.min(500, THREADS - done);
    await store.db.transaction(async (tx) => {
      const drafts: OpDraft[] = [];
      for (let i = 0; i < batch; i++) {
        const thread = newThreadId();
        const n = done + i;
        const alice = { handle: 'alice', session: null };
        drafts.push({ operation: thread, thread, session: null, kind: 'thread.opened', body: { parent: null, subject: `seed ${n}`, opener: alice, target: { kind: 'person', handle: 'bob' } } });
        drafts.push({ operation: thread, thread, session: null, kind: 'message.posted', body: { message: newMessageId(), author: alice, text: `question ${n}`, effect: 'commission', substituted: false, refs: { working_copy: null } } });
        if (n % OPEN_EVERY !== 0) {
          drafts.push({ operation: thread, thread, session: null, kind: 'message.posted', body: { message: newMessageId(), author: { handle: 'bob', session: null }, text: `answer ${n}`, effect: 'answer', substituted: false, refs: { working_copy: null } } });
        }
      }
      await appendOps(tx, writer, drafts);
    });
    done += batch;
    if (process.stderr.isTTY) process.stderr.write(`\rseeding ${THREADS} threads... ${done}`);
  }
  process.stderr.write(` done in ${((performance.now() - seedStart) / 1000).toFixed(1)} s\n`);

  // In-process: the engine alone, store already open (what a serving node pays).
  const host = hostFor(realDeps(workspace, store.db));
  const person = (actor: string) => ({ actor, session: null, hop: null });
  const engineRound = await sample(ENGINE_N, async (i) => {
    const r = await host.engine.send({ to: '@bob', subject: `bench ${i}`, text: 'ping', caller: person('alice') });
    await host.engine.reply({ thread: r.thread, escalate: false, text: 'pong', caller: person('bob') });
  });
  const engineStatus = await sample(Math.ceil(ENGINE_N / 6), async () => {
    await host.run('status', { all: false });
  });
  const rawRef = await sample(ENGINE_N, async () => {
    await store.pg.query('insert into persona_runs (workspace, role, hash, lamport) values ($1, $2, $3, 0) on conflict do nothing', ['x', 'y', 'z']);
    await store.pg.query('select count(*) from operations where finished = false');
  });
  // Recording a turn's usage, on the same seeded store: three runs, as the node rows are judged. The daily
  // ceiling's read at a turn's start is printed beside it, not judged: it is a check, paid only when declared.
  const usageRow: TargetRow = { label: 'usage recorded at a turn\'s end (read, price, fold)', kind: 'max', target: 1, unit: 'ms', runs: [] };
  let usage = await usageBench(store.db, workspace, ENGINE_N);
  for (let r = 0; r < REPEATS; r++) {
    if (r > 0) usage = await usageBench(store.db, workspace, ENGINE_N);
    usageRow.runs.push(usage.end.median);
    process.stderr.write(`usage run ${r + 1}: turn end ${usage.end.median.toFixed(3)} ms, today's spend ${usage.today.median.toFixed(3)} ms (medians)\n`);
  }
  await store.close();

  // Through the CLI: a process per command, each opening the store under its lock.
  const nxc = (args: string[], actor: string) => run(process.execPath, [join(packageRoot(), 'bin', 'nxc'), ...args], { cwd: root, env: { ...env, NXC_ACTOR: actor }, maxBuffer: 1 << 26 });
  const cliRound = await sample(CLI_N, async (i) => {
    const sent = JSON.parse((await nxc(['send', '@bob', '--subject', `cli ${i}`, '--json', 'ping'], 'alice')).stdout) as { thread: string };
    await nxc(['reply', '--thread', sent.thread, '--json', 'pong'], 'bob');
  });
  const cliStatus = await sample(CLI_N, async () => {
    await nxc(['status', '--json'], 'alice');
  });
  // Reference: the floor of any direct command, a child process that opens this store and runs two queries.
  const refScript = join(base, 'ref.mjs');
  writeFileSync(
    refScript,
    `import { PGlite } from ${JSON.stringify(join(packageRoot(), 'node_modules', '@electric-sql', 'pglite', 'dist', 'index.js'))};\n` +
      `const pg = await PGlite.create({ dataDir: process.argv[2] });\n` +
      `await pg.query("select count(*) from operations where finished = false");\nawait pg.query("select 1");\nawait pg.close();\n`,
  );
  const cliRef = await sample(CLI_N, async () => {
    await run(process.execPath, [refScript, workspace.paths.store]);
  });
  const roundRef = { ...cliRef, median: cliRef.median * 2, p99: cliRef.p99 * 2, mean: cliRef.mean * 2 };

  // The same commands with a node serving the workspace: each one is a request on its socket.
  // The node runs in this process, which only awaits the CLI children, so it is free to answer.
  addToRegistry(nodePaths(home), workspace.id, root);
  // Judged against what no CLI can go below: a bare `node -e 0` start per command, measured in each run
  // beside the commands, twice over, plus what the engine itself takes in process.
  const node = await startNode({ home, log: silentLogger, routes: [CLI_HANDOVER] });
  const roundRow: TargetRow = { label: 'node: send + reply / (2 x 2 bare starts + engine)', kind: 'max', target: 1, unit: 'x', runs: [] };
  const statusRow: TargetRow = { label: 'node: status --json / (2 x bare start + engine)', kind: 'max', target: 1, unit: 'x', runs: [] };
  let nodeRound = engineRound;
  let nodeStatus = engineStatus;
  let bare = engineStatus;
  try {
    for (let r = 0; r < REPEATS; r++) {
      bare = await sample(CLI_N, async () => {
        await run(process.execPath, ['-e', '0']);
      });
      nodeRound = await sample(CLI_N, async (i) => {
        const sent = JSON.parse((await nxc(['send', '@bob', '--subject', `node ${r}.${i}`, '--json', 'ping'], 'alice')).stdout) as { thread: string };
        await nxc(['reply', '--thread', sent.thread, '--json', 'pong'], 'bob');
      });
      nodeStatus = await sample(CLI_N, async () => {
        await nxc(['status', '--json'], 'alice');
      });
      roundRow.runs.push(nodeRound.median / (2 * 2 * bare.median + engineRound.median));
      statusRow.runs.push(nodeStatus.median / (2 * bare.median + engineStatus.median));
      process.stderr.write(`run ${r + 1}: bare ${bare.median.toFixed(1)} ms, node send+reply ${nodeRound.median.toFixed(1)} ms, node status ${nodeStatus.median.toFixed(1)} ms\n`);
    }
  } finally {
    await node.close();
  }

  store = await openStore(workspace.paths.store);
  const counts = await store.pg.query<{ threads: number; open: number }>(
    `select (select count(*) from ops where kind = 'thread.opened')::int as threads, (select count(*) from operations where not finished)::int as open`,
  );
  await store.close();
  const c = counts.rows[0]!;

  console.log(`\nNexus core bench: store holds ${c.threads} threads, ${c.open} open operations (node ${process.version}, ${process.platform})`);
  console.log('\nthrough the CLI (a process per command; the store is opened by each):');
  console.log(row('reference: bare PGlite open + 2 queries (child)', cliRef));
  console.log(row('nxc send + nxc reply round trip', cliRound, roundRef));
  console.log(row('nxc status --json', cliStatus, cliRef));
  console.log('  (round-trip ratio is against two reference commands)');
  console.log('\nthrough the CLI with a node serving the workspace (a request on its socket per command):');
  console.log(row('nxc send + nxc reply round trip', nodeRound, roundRef));
  console.log(row('nxc status --json', nodeStatus, cliRef));
  console.log(row('reference: bare node -e 0 (child)', bare));
  console.log('\nin process (store open, engine only):');
  console.log(row('reference: raw insert + select on the same store', rawRef));
  console.log(row('engine send + reply round trip', engineRound, rawRef));
  console.log(row('engine status (open operations only)', engineStatus, rawRef));
  console.log(usage.text);
  console.log('\nsession turn start (a process per turn):');
  const sandbox = await sandboxBench(root, env, Number(process.env['BENCH_SANDBOX_N'] ?? 30));
  console.log(sandbox.text);
  console.log(`\nTargets (${REPEATS} runs, the last run's figures above; the median judged, half the runs' range is the noise margin)`);
  const table = targetsTable([statusRow, roundRow, usageRow]);
  console.log(table.text);
  rmSync(base, { recursive: true, force: true });
  if (table.failed || !sandbox.within) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
