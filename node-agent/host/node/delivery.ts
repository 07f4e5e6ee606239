// Local delivery between the workspaces one node serves, with no relay: the ops one wrote that concern
// another (a thread addressed to it, an operation it already holds, a key rotation) are taken in there as
// their signed wire texts, verified exactly as synced ops are, and that workspace reacts to them (admits a
// commission, wakes a requester). The log is read and written through the kernel; who wants what is
// decided by `wanted`, a pure function.
import type { CheckedOp } from '../../../crypto/index.js';
import type { Logger } from '../../../infra/index.js';
import type { Op } from '../../../protocol/ops.js';
import { heldOperations, ingestChecked, signedOfOperations, signedSince, type SignedEntry } from '../../kernel/index.js';
import type { Served, ServedWorkspace } from './served.js';

/** How many own ops one delivery pass reads at a time. */
const DELIVERY_PAGE = 500;

/** The operations a thread of which `ops` open addressed to workspace `to`. */
export function addressedTo(to: string, ops: readonly { op: Op }[]): Set<string> {
  const addressed = new Set<string>();
  for (const { op } of ops) {
    if (op.kind === 'thread.opened' && op.body.target.kind === 'remote' && op.body.target.workspace === to) addressed.add(op.operation);
  }
  return addressed;
}

/**
 * Which of `ops` workspace `to` takes: those of an operation addressed to it or that it holds (`held`), and
 * key rotations always (they are the sender's key chain, without which its later ops, and the stamps they
 * carry, cannot be placed there).
 */
export function wanted<T extends { op: Op }>(to: string, ops: readonly T[], held: ReadonlySet<string>): T[] {
  const addressed = addressedTo(to, ops);
  return ops.filter((o) => addressed.has(o.op.operation) || held.has(o.op.operation) || o.op.kind === 'workspace.key_rotated');
}

type Mark = {
  /** local_seq of the last op this workspace wrote that was offered to the others. */
  delivered: number;
  /** A pass is running; another is wanted after it. */
  delivering: boolean;
  again: boolean;
};

/** Delivery between the workspaces of `served`; `announce` hears of each workspace whose log grew. */
export class LocalDelivery {
  private readonly marks = new WeakMap<ServedWorkspace, Mark>();

  constructor(
    private readonly served: Served,
    private readonly announce: (workspace: string) => void,
    private readonly log: Logger,
    /** Opens and verifies the delivered texts, exactly as synced ones are. */
    private readonly check: (raws: readonly string[]) => Promise<CheckedOp[]>,
  ) {}

  /** Offers what `from` wrote since its last pass to every other served workspace. Passes on one workspace never overlap. */
  from(from: ServedWorkspace): void {
    let mark = this.marks.get(from);
    if (mark === undefined) this.marks.set(from, (mark = { delivered: 0, delivering: false, again: false }));
    if (mark.delivering) {
      mark.again = true;
      return;
    }
    // With one workspace served there is nobody to deliver to; the mark stays, so a workspace
    // registered later is offered everything it may need.
    if (!this.served.current(from) || this.served.size < 2) return;
    mark.delivering = true;
    void this.pass(from, mark).finally(() => {
      mark.delivering = false;
      if (mark.again) {
        mark.again = false;
        this.from(from);
      }
    });
  }

  private async pass(from: ServedWorkspace, mark: Mark): Promise<void> {
    try {
      for (;;) {
        const after = mark.delivered;
        const page = await this.served.inQueue(from, () => signedSince(from.store.db, from.workspace.id, after, DELIVERY_PAGE));
        if (page.length === 0) break;
        for (const to of this.served.all()) {
          if (to === from) continue;
          await this.to(to, await this.withPast(from, to, page)).catch((err: unknown) =>
            this.log.error('local delivery failed', { from: from.workspace.id, to: to.workspace.id, err }),
          );
        }
        mark.delivered = Math.max(mark.delivered, page[page.length - 1]!.seq);
        if (page.length < DELIVERY_PAGE) break;
      }
    } catch (err) {
      this.log.error('local delivery failed', { from: from.workspace.id, err });
    }
  }

  /**
   * A thread addressed to `to` brings the whole operation it is in, as `from` holds it (its own ops and
   * those it took in): the fold places a thread only beneath a parent it has folded, and judges who may
   * act in a thread by the threads above it.
   */
  private async withPast(from: ServedWorkspace, to: ServedWorkspace, page: SignedEntry[]): Promise<SignedEntry[]> {
    const addressed = addressedTo(to.workspace.id, page);
    if (addressed.size === 0) return page;
    const past = await this.served.inQueue(from, () => signedOfOperations(from.store.db, [...addressed]));
    const ids = new Set(page.map((o) => o.op.id));
    return [...past.filter((e) => !ids.has(e.op.id)), ...page];
  }

  private async to(to: ServedWorkspace, ops: SignedEntry[]): Promise<void> {
    const reacted = await this.served.inQueue(to, async () => {
      const held = await heldOperations(to.store.db, [...new Set(ops.map((o) => o.op.operation))]);
      const taken = wanted(to.workspace.id, ops, held);
      if (taken.length === 0) return false;
      const checked = await this.check(taken.map((o) => o.raw));
      const report = await to.store.db.transaction((tx) => ingestChecked(tx, checked, { projections: to.host.deps.projections }));
      if (report.refusals.length > 0) this.log.warn(`local delivery: ${report.refusals.length} op(s) refused or held`, { to: to.workspace.id, refused: report.refusals.length });
      if (report.fresh.length === 0) return false;
      await to.host.engine.react(report.fresh);
      return true;
    });
    if (reacted) {
      this.announce(to.workspace.id);
      this.served.changed(to);
    }
  }
}
