// `npm run test:fast`: the pure and in-process lanes, everything but test/e2e/ (the files that start
// nxc, nxs, nodes, relays, agents, real runtimes or a browser as processes of their own) and test/long/
// (in-process files long by their nature: a hundred rounds in one operation, hundreds of megabytes
// through a WAL, ten thousand random interleavings, the whole project's import graph), nor the single
// cases of that kind in quick files (`itLong`). `npm test` runs all.
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  test: {
    ...base.test,
    exclude: ['test/e2e/**', 'test/long/**', 'node_modules/**'],
    // Cases long by their nature inside quick files (`itLong`, test/helpers/lanes.ts) are skipped here.
    env: { NEXUS_TEST_LANE: 'fast' },
  },
});
