// `npm run test:load`: the core scenarios (send, reply, escalation, a 32-deep chain, refusals, the load file) with
// CPU-burning processes beside them. No reply may be lost and no command may fail with STORE_BUSY.
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  test: {
    ...base.test,
    include: ['test/e2e/load.test.ts', 'test/chat-basics.test.ts', 'test/escalation.test.ts', 'test/depth.test.ts', 'test/e2e/depth-node.test.ts', 'test/e2e/refusals.test.ts', 'test/core-defects.test.ts', 'test/e2e/locks.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts', 'test/helpers/cpu-burn.ts'],
  },
});
