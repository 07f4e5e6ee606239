// Projections: the tables a capability keeps current from the log, registered instead of wired
// into the append path. Each one sees every batch of freshly stored ops inside the storing
// transaction, so a projection never lags or runs ahead of the ops it is made from.
import type { Op } from '../../protocol/ops.js';
import type { Exec } from './db.js';

export type Projection = {
  /** Names the projection in errors and docs. */
  readonly name: string;
  /** Folds `added` (ops stored in this transaction, not yet in any order) into the projection's tables. */
  apply(db: Exec, added: readonly Op[]): Promise<void>;
};

/** Runs every projection over one stored batch, in registration order. */
export async function project(db: Exec, projections: readonly Projection[], added: readonly Op[]): Promise<void> {
  if (added.length === 0) return;
  for (const p of projections) await p.apply(db, added);
}
