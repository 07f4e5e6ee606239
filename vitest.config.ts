import { defineConfig } from 'vitest/config';
import LongFirst from './test/helpers/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // A worker runs file after file in one process: each file's fresh process and imports cost ~0.6 s,
    // 70 s of a run. So a test file puts back what it changes in the process (environment, timers)
    // and closes what it opens; the suite's leak check still catches a process left running.
    isolate: false,
    fileParallelism: true,
    maxWorkers: 2,
    sequence: { sequencer: LongFirst },
  },
});
