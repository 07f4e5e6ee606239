// The order files start in. Two workers share the files; a long file that starts last keeps one
// worker busy alone at the end of the run. vitest orders by the durations of the last run it
// remembers, and with none (a fresh clone, as in CI) by file size, which says little here: some short
// files run a hundred rounds. So the files known to take longest start first, longest first; the
// rest keep vitest's own order behind them.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The longest files, longest first (from a full run on a quiet 2-core machine; keep roughly current). */
export const LONG_FILES = [
  'test/e2e/sync.test.ts',
  'test/loops.test.ts',
  'test/signing.test.ts',
  'test/e2e/node.test.ts',
  'test/e2e/leases/working-copy.test.ts',
  'test/e2e/ui/dashboard.test.ts',
  'test/e2e/runtime/session-turn.test.ts',
  'test/channels/depth.test.ts',
  'test/e2e/cross-workspace.test.ts',
  'test/e2e/runtime/codex-turn.test.ts',
  'test/e2e/launcher.test.ts',
  'test/poison-ops.test.ts',
  'test/depth.test.ts',
  'test/e2e/load.test.ts',
  'test/leases/mover.test.ts',
];

export default class LongFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = LONG_FILES.findIndex((name) => f.moduleId.endsWith(name));
      return i < 0 ? LONG_FILES.length : i;
    };
    return base.map((f, i) => ({ f, i })).sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i).map(({ f }) => f);
  }
}
