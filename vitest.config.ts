import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import LongFirst from './test/helpers/sequencer.js';

/**
 * Two files per core. A file spends most of its time waiting, not computing: on the child processes it
 * starts (nodes, relays, sidecars, agents, git, a browser) and on their answers. A run with one worker per
 * core left the cores idle about half the time (the suite took 79% of one core on a 2-core machine), so
 * each core takes two. NEXUS_TEST_WORKERS sets the number.
 */
function workers(): number {
  const set = Number(process.env['NEXUS_TEST_WORKERS']);
  return Number.isInteger(set) && set > 0 ? set : Math.max(2, 2 * availableParallelism());
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/worker-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Each worker collects on its own thread, as nxs does (decision 0005): with four workers on two cores,
    // V8's helper threads only compete with the other workers. Paired runs of the fast lane: 2-5% less wall.
    execArgv: ['--single-threaded-gc'],
    // A worker runs file after file in one process: each file's fresh process and imports cost ~0.6 s,
    // 70 s of a run. So a test file puts back what it changes in the process (environment, timers)
    // and closes what it opens; the suite's leak check still catches a process left running.
    isolate: false,
    fileParallelism: true,
    maxWorkers: workers(),
    sequence: { sequencer: LongFirst },
    // The watchdog ends a run that stopped moving (a worker blocked, a file past its limit) with a report,
    // where it would otherwise hold CI silently until the job's own limit.
    reporters: ['default', './test/helpers/watchdog.ts'],
  },
});
