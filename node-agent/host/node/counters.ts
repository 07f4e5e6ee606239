// The node's counters since it started: the turns each served workspace started, and the ones that were
// due and did not start, by reason. Fed by every commit, reaction and tick (EngineDeps.observe); read by
// /metrics (metrics.ts).
import type { Warning, Woke } from '../../../protocol/receipts.js';

/** The classes under which a turn that was due is reported as not started. */
const NOT_STARTED: ReadonlySet<Warning['class']> = new Set(['step_skipped', 'requester_not_woken']);

/** Counters kept in memory since the node started, fed by what each command, reaction and tick set in motion. */
export class NodeCounters {
  readonly turnsStarted = new Map<string, number>();
  /** Keyed by workspace, then by reason. */
  readonly turnsRefused = new Map<string, Map<string, number>>();

  /** Turns a commit started (`woke`) and the ones it was due to start and did not, by reason. */
  observe(workspace: string, outcome: { readonly woke: readonly Woke[]; readonly warnings: readonly Warning[] }): void {
    if (outcome.woke.length > 0) this.turnsStarted.set(workspace, (this.turnsStarted.get(workspace) ?? 0) + outcome.woke.length);
    for (const w of outcome.warnings) {
      if (!NOT_STARTED.has(w.class)) continue;
      const reason = w.reason ?? w.class;
      const byReason = this.turnsRefused.get(workspace) ?? new Map<string, number>();
      byReason.set(reason, (byReason.get(reason) ?? 0) + 1);
      this.turnsRefused.set(workspace, byReason);
    }
  }

  /** A workspace no longer served: its series go with it. */
  forget(workspace: string): void {
    this.turnsStarted.delete(workspace);
    this.turnsRefused.delete(workspace);
  }
}

