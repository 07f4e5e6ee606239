// `npm run bench:lease`: what the working-copy lease costs.
// 1. One lease decision (pure) on a busy state: targets < 1 ms.
// 2. Parking a 10,000-file tree with 100 changed files (target < 2 s), and restoring it, beside `git stash`
//    on the same tree and the same changes as the reference.
// 3. One git call through runGit beside the same call through simple-git.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleGit } from 'simple-git';
import { runGit } from '../node-agent/adapters/git/index.js';
import { decide, fenceGrant, park, restore } from '../node-agent/capabilities/leases/index.js';
import { emptyLeaseState, type LeaseEvent, type LeaseState, type WorldFacts } from '../protocol/leases.js';
import { row, sample, summarize, type Summary } from './stats.js';

const FILES = Number(process.env['BENCH_LEASE_FILES'] ?? 10_000);
const CHANGED = Number(process.env['BENCH_LEASE_CHANGED'] ?? 100);
const ROUNDS = Number(process.env['BENCH_LEASE_ROUNDS'] ?? 5);
const DECISIONS = Number(process.env['BENCH_LEASE_DECISIONS'] ?? 20_000);

function us(s: Summary): string {
  return `median ${(s.median * 1000).toFixed(1)} µs  p99 ${(s.p99 * 1000).toFixed(1)} µs`;
}

/** A busy lease: one holder with 20 threads, 50 operations queued behind it. */
function busyState(): { state: LeaseState; now: number } {
  let state = emptyLeaseState();
  let now = 1_000_000;
  const facts: WorldFacts = { liveness_known: true, alive: [], boundary: [] };
  const feed = (ev: LeaseEvent) => {
    state = decide(state, ev, now).state;
  };
  const commission = (operation: string, thread: string, parent: string | null): LeaseEvent => ({
    type: 'commission', operation, thread, parent, by: { handle: 'alice', session: null }, person: false, exclusive: true,
    window_ms: 30 * 60_000, trigger: { id: `${thread}#1`, thread, run: null }, root: { handle: 'alice', session: null }, area: [], facts,
  });
  feed(commission('H', 'H', null));
  for (let i = 0; i < 20; i++) {
    feed(commission('H', `H.${i}`, 'H'));
    feed({ type: 'session_started', operation: 'H', thread: `H.${i}`, session: `s-H.${i}` });
    facts.alive.push(`s-H.${i}`);
  }
  for (let q = 0; q < 50; q++) feed(commission(`Q${q}`, `Q${q}`, null));
  now += 60_000;
  return { state, now };
}

function benchDecisions(): void {
  const { state, now } = busyState();
  const facts: WorldFacts = { liveness_known: true, alive: Array.from({ length: 20 }, (_, i) => `s-H.${i}`), boundary: [] };
  const events: Array<[string, LeaseEvent]> = [
    ['commission that queues', {
      type: 'commission', operation: 'N', thread: 'N', parent: null, by: { handle: 'bob', session: null }, person: false, exclusive: true,
      window_ms: null, trigger: { id: 'N#1', thread: 'N', run: null }, root: { handle: 'bob', session: null }, area: [], facts,
    }],
    ['nested commission inside the held area', {
      type: 'commission', operation: 'H', thread: 'H.new', parent: 'H', by: { handle: 'coder', session: 's-H' }, person: false, exclusive: true,
      window_ms: null, trigger: { id: 'H.new#1', thread: 'H.new', run: null }, root: { handle: 'alice', session: null }, area: [], facts,
    }],
    ['reply inside the held area', { type: 'reply', operation: 'H', thread: 'H.3', by: { handle: 'coder', session: 's-H.3' }, outcome: 'answer', wakes: null, root: { handle: 'alice', session: null }, area: [], facts }],
    ['tick: the minute sweep with liveness facts', { type: 'tick', facts }],
  ];
  console.log(`\nlease decision (pure), holder with 21 threads, 50 operations queued, ${DECISIONS} decisions per event:`);
  for (const [label, ev] of events) {
    for (let i = 0; i < 500; i++) decide(state, ev, now); // warm-up
    const times: number[] = [];
    for (let i = 0; i < DECISIONS; i++) {
      const t = performance.now();
      decide(state, ev, now);
      times.push(performance.now() - t);
    }
    const s = summarize(times);
    console.log(`  ${label.padEnd(44)} ${us(s)}   ${s.p99 < 1 ? 'within' : 'OVER'} the 1 ms target`);
  }
}

function sh(cwd: string, args: string[]): void {
  execFileSync('git', ['-c', 'user.name=Bench', '-c', 'user.email=bench@example.invalid', '-c', 'commit.gpgsign=false', ...args], { cwd, stdio: 'ignore' });
}

/** A repository of FILES small files in 100 folders on main. */
function bigRepo(dir: string): void {
  sh(dir, ['init', '-q', '-b', 'main']);
  // A background auto-gc set off by 10,000 loose objects would land in the middle of the timings.
  sh(dir, ['config', 'gc.auto', '0']);
  writeFileSync(join(dir, '.gitignore'), 'target/\n');
  for (let i = 0; i < FILES; i++) {
    const folder = join(dir, `d${i % 100}`);
    if (i < 100) mkdirSync(folder);
    writeFileSync(join(folder, `f${i}.txt`), `file ${i}\n${'x'.repeat(200)}\n`);
  }
  sh(dir, ['add', '-A']);
  sh(dir, ['commit', '-q', '-m', 'seed']);
  mkdirSync(join(dir, 'target'));
  writeFileSync(join(dir, 'target', 'build.o'), 'ignored\n');
}

/** CHANGED changes: 80% modified, 10% deleted, 10% new untracked files. */
function mess(dir: string, round: number): void {
  for (let i = 0; i < CHANGED; i++) {
    const n = (i * 97 + round) % FILES;
    const path = join(dir, `d${n % 100}`, `f${n}.txt`);
    if (i % 10 === 8) unlinkSync(path);
    else if (i % 10 === 9) writeFileSync(join(dir, `d${n % 100}`, `new-${round}-${i}.txt`), `new ${i}\n`);
    else writeFileSync(path, `changed in round ${round}\n`);
  }
}

async function benchPark(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'nexus-bench-lease-'));
  try {
    process.stderr.write(`making a ${FILES}-file repository...`);
    bigRepo(dir);
    process.stderr.write(' done\n');
    let token = 0;
    const parks: number[] = [];
    const restores: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      mess(dir, round);
      await fenceGrant(dir, ++token);
      let t = performance.now();
      const r = await park(dir, { operation: `op${round}`, base: 'main', token, now: Date.now() });
      parks.push(performance.now() - t);
      if (r.outcome !== 'parked') throw new Error(`park refused: ${JSON.stringify(r)}`);
      await fenceGrant(dir, ++token);
      t = performance.now();
      const back = await restore(dir, { operation: `op${round}`, token, record: r.record });
      restores.push(performance.now() - t);
      if (!back.applied) throw new Error(back.notice);
      sh(dir, ['checkout', '-q', '-f', 'main']);
      sh(dir, ['clean', '-q', '-f', '-d']);
    }
    const stash = await sample(ROUNDS, async (round) => {
      mess(dir, round);
      sh(dir, ['stash', 'push', '-q', '-u']);
    });
    // Each stash leaves the tree clean for the next round's changes; the stashes go with the folder.
    const park_ = summarize(parks);
    const restore_ = summarize(restores);
    console.log(`\nparking ${FILES} files with ${CHANGED} changed (${ROUNDS} rounds):`);
    console.log(`  ${row('git stash push -u (reference)', stash)}`);
    console.log(`  ${row('park (commit to a branch, check out the base)', park_, stash)}   ${park_.median < 2000 ? 'within' : 'OVER'} the 2 s target`);
    console.log(`  ${row('restore (branch back, work back, index back)', restore_, stash)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchSpawn(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'nexus-bench-spawn-'));
  try {
    sh(dir, ['init', '-q', '-b', 'main']);
    sh(dir, ['commit', '-q', '--allow-empty', '-m', 'x']);
    const sg = simpleGit(dir);
    for (let i = 0; i < 5; i++) {
      await runGit(dir, ['rev-parse', 'HEAD']);
      await sg.revparse(['HEAD']);
    }
    // Interleaved, so that a neighbour's load on a shared machine falls on both alike.
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < 60; i++) {
      let t = performance.now();
      await sg.revparse(['HEAD']);
      a.push(performance.now() - t);
      t = performance.now();
      await runGit(dir, ['rev-parse', 'HEAD']);
      b.push(performance.now() - t);
    }
    const viaSimpleGit = summarize(a);
    const viaRunGit = summarize(b);
    console.log('\none git call (rev-parse HEAD):');
    console.log(`  ${row('simple-git (reference)', viaSimpleGit)}`);
    console.log(`  ${row('runGit (execFile)', viaRunGit, viaSimpleGit)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const gitVersion = execFileSync('git', ['--version']).toString().trim().replace('git version ', '');
  console.log(`working-copy lease benchmark (node ${process.version}, git ${gitVersion})`);
  benchDecisions();
  await benchPark();
  await benchSpawn();
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
