// The order files start in. Two workers share the files; a long file that starts last keeps one
// worker busy alone at the end of the run. vitest orders by the durations of the last run it
// remembers, and with none (a fresh clone, as in CI) by file size, which says little here: some short
// files run a hundred rounds. So the files known to take longest start first, longest first; the
// rest keep vitest's own order behind them.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The files of 9 s or more, longest first (a full run on a 2-core machine, 7 December 2026; keep roughly current). */
export const LONG_FILES = [
  'test/long/channel-rounds.test.ts',
  'test/long/relay-wal.test.ts',
  'test/e2e/ui/dashboard.test.ts',
  'test/e2e/node.test.ts',
  'test/e2e/sync.test.ts',
  'test/e2e/seed-edges/records.test.ts',
  'test/e2e/runtime/session-turn.test.ts',
  'test/e2e/leases/working-copy.test.ts',
  'test/loops.test.ts',
  'test/leases/mover.test.ts',
  'test/long/conversation-rounds.test.ts',
  'test/e2e/sandbox-escape.test.ts',
  'test/signing.test.ts',
  'test/e2e/runtime/mcp-session.test.ts',
  'test/e2e/sync-join.test.ts',
  'test/e2e/runtime/adapters.test.ts',
  'test/e2e/cross-workspace.test.ts',
  'test/e2e/load.test.ts',
  'test/e2e/seed-edges/transcripts.test.ts',
  'test/e2e/watchdog.test.ts',
  'test/e2e/mcp.test.ts',
  'test/relay-store.test.ts',
  'test/e2e/runtime/agent-run-cli.test.ts',
  'test/e2e/seed-edges/lease-wakes.test.ts',
  'test/e2e/launcher.test.ts',
  'test/sync-join.test.ts',
  'test/e2e/runtime/codex-turn.test.ts',
  'test/e2e/readme-recipe.test.ts',
  'test/e2e/runtime/mcp-codex.test.ts',
  'test/e2e/watch.test.ts',
  'test/e2e/ui/needs-order.test.ts',
  'test/depth.test.ts',
  'test/long/leases/model.test.ts',
  'test/e2e/sandbox-network.test.ts',
  'test/relay-ws.test.ts',
  'test/runtime/tool-guards.test.ts',
  'test/e2e/epipe.test.ts',
  'test/e2e/signing-nodes.test.ts',
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
