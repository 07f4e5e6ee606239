// Moving ops between in-process workspaces as a node does (local delivery, or a stream carrying
// everything): the signed wire texts are verified, stored and folded by `ingestChecked`, and the
// receiving engine reacts to what was new (admits commissions, wakes requesters).
import { and, asc, eq, isNotNull } from 'drizzle-orm';
import { checkOps } from '../../crypto/index.js';
import { tables } from '../../node-agent/adapters/store/index.js';
import { ingestChecked, wireTextOf, type IngestReport } from '../../node-agent/kernel/index.js';
import type { TestWorkspace } from './workspace.js';

export type TakenIn = { report: IngestReport; started: number; rejected: number };

/** Takes wire texts into `to` (served in process) and lets it react, in its command queue. */
export async function takeIn(to: TestWorkspace, texts: readonly string[]): Promise<TakenIn> {
  if (!to.inproc) throw new Error('takeIn needs an in-process workspace');
  const checked = await checkOps([...texts]);
  return to.inproc.serve(async (host) => {
    const report = await host.deps.db.transaction((tx) => ingestChecked(tx, checked, { projections: host.deps.projections }));
    const reacted = await host.engine.react(report.fresh);
    return { report, started: reacted.started, rejected: reacted.rejected };
  });
}

/** The wire texts of every op `from` wrote itself, oldest first. */
export async function ownTexts(from: TestWorkspace): Promise<string[]> {
  const rows = await from.withStore((s) =>
    s.db
      .select()
      .from(tables.ops)
      .where(and(eq(tables.ops.workspace, from.id), isNotNull(tables.ops.sig)))
      .orderBy(asc(tables.ops.localSeq)),
  );
  return rows.map((r) => wireTextOf(r)!);
}

/** Everything `from` wrote, taken in by `to` (ops it already holds are dropped by id). */
export async function deliver(from: TestWorkspace, to: TestWorkspace): Promise<TakenIn> {
  return takeIn(to, await ownTexts(from));
}

/** Both sides exchange everything, `rounds` times over, each waiting until nothing runs, until the two are settled. */
export async function exchange(a: TestWorkspace, b: TestWorkspace, rounds: number): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await deliver(a, b);
    await b.waitIdle();
    await deliver(b, a);
    await a.waitIdle();
  }
}
