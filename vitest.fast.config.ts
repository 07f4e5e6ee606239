// `npm run test:fast`: the pure and in-process lanes, everything but test/e2e/ (the files that start
// nxc, nxs, nodes, relays, agents, real runtimes or a browser as processes of their own).
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  test: {
    ...base.test,
    exclude: ['test/e2e/**', 'node_modules/**'],
  },
});
