// The suite's lanes. `npm run test:fast` (vitest.fast.config.ts) leaves out test/e2e/ and test/long/, and sets
// NEXUS_TEST_LANE=fast; `npm test` runs everything.
import { it } from 'vitest';

/** True under `npm run test:fast`. */
export const fastLane = process.env['NEXUS_TEST_LANE'] === 'fast';

/**
 * A case long by its nature, in a file whose other cases are quick: a database made from scratch by initdb,
 * hundreds of megabytes through a WAL, a bound of seconds run out on the CPU. `npm test` runs it;
 * `npm run test:fast` reports it skipped.
 */
export const itLong = it.skipIf(fastLane);
