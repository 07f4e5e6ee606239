// The suite's watchdog: a run whose worker stops answering ends within seconds, saying which file and test
// it stopped in and what each of its processes waits on, instead of holding CI until the job's limit.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '..', '..');
const FIXTURE = join(REPO, 'test', 'fixtures', 'watchdog');
/** Longer than either limit below by far, and shorter than this test's own timeout. */
const GIVE_UP_MS = 60_000;

type Ended = { code: number | null; signal: NodeJS.Signals | null; stderr: string; stdout: string };

/** Runs vitest on the fixture with the watchdog's limits set; kills it if it has not ended in GIVE_UP_MS. */
function runFixture(env: Record<string, string>): Promise<Ended> {
  const seen = join(mkdtempSync(join(tmpdir(), 'nexus-watchdog-')), 'seen');
  const child = spawn(process.execPath, [join(REPO, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--root', FIXTURE], {
    cwd: FIXTURE,
    env: { ...process.env, ...env, CI: '1', NO_COLOR: '1', NEXUS_TEST_WATCHDOG_SEEN: seen },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: given up on, the whole run goes, its spinning worker too.
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const killGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* the group is gone */
    }
  };
  const timer = setTimeout(killGroup, GIVE_UP_MS);
  return new Promise((done) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      // Whatever the outcome, nothing of the run is left (a worker outlives a vitest killed from outside).
      killGroup();
      rmSync(dirname(seen), { recursive: true, force: true });
      done({ code, signal, stdout, stderr });
    }),
  );
}

function pidsNamed(report: string): number[] {
  return [...report.matchAll(/^ {4}pid (\d+) /gm)].map((m) => Number(m[1]));
}

const onLinux = process.platform === 'linux';

it.skipIf(!onLinux)('ends a run whose file ran past its limit: exit 1, the file and test named, the blocked worker listed with its stack, and stopped', async () => {
  const ended = await runFixture({ NEXUS_TEST_FILE_LIMIT_S: '6', NEXUS_TEST_STALL_S: '600' });
  expect(ended.signal, ended.stdout + ended.stderr).toBeNull();
  expect(ended.code).toBe(1);
  expect(ended.stderr).toContain('the test run stopped moving: test/fixtures/watchdog/spin.hang.ts ran past the limit of 6 s per file (NEXUS_TEST_FILE_LIMIT_S)');
  // Running since it was heard to start; when vitest dropped that message, named all the same as the file's first
  // test without a result.
  expect(ended.stderr).toMatch(/spin\.hang\.ts: running for \d+ s\n {4}test "spins on its event loop": (running for \d+ s|not finished \(its start was not reported\))/);
  // The worker is listed with its state: R, running on the CPU, where a blocked loop spins.
  const workers = pidsNamed(ended.stderr);
  expect(workers.length).toBeGreaterThan(0);
  expect(ended.stderr).toMatch(/pid \d+ \(parent \d+\) R on-cpu: /);
  // And where its JavaScript spins, taken through the inspector.
  expect(ended.stderr).toMatch(/its JavaScript stands at:\n {4}at \(anonymous\) \(file:\/\/\S*spin\.hang\.ts:\d+:\d+\)/);
  for (const pid of workers) expect(gone(pid), `pid ${pid} still runs`).toBe(true);
});

it.skipIf(!onLinux)('ends a run from which nothing was reported for the stall limit, naming what still runs', async () => {
  const ended = await runFixture({ NEXUS_TEST_FILE_LIMIT_S: '600', NEXUS_TEST_STALL_S: '5' });
  expect(ended.signal, ended.stdout + ended.stderr).toBeNull();
  expect(ended.code).toBe(1);
  expect(ended.stderr).toMatch(/the test run stopped moving: nothing was reported for \d+ s \(NEXUS_TEST_STALL_S=5\)/);
  expect(ended.stderr).toContain('test "spins on its event loop"');
});

/** The process has ended (a zombie waiting for its parent to reap it counts as ended). */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return /^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return true;
  }
}
