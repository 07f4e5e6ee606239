// A turn's run state as its runtime last wrote it (`turn-<n>.run.json` in the session folder), for the views.
import { join } from 'node:path';
import { readCapped } from '../../../infra/read.js';
import { RunStateFileSchema, runStateFileName } from '../../../protocol/runs.js';
import type { LastRun } from '../../../protocol/receipts.js';
import { sessionDir } from './spec.js';

/**
 * The run of `session`'s turn `turn`: its status, why it ended so and what it spent. Null when that turn's
 * runtime keeps no run-state file (a persona whose runtime is its own command) or the file cannot be read.
 */
export async function readLastRun(sessionsRoot: string, session: string, turn: number): Promise<LastRun | null> {
  if (turn < 1) return null;
  const read = await readCapped(join(sessionDir(sessionsRoot, session), runStateFileName(turn)), 1024 * 1024);
  if ('reason' in read) return null;
  try {
    const parsed = RunStateFileSchema.safeParse(JSON.parse(read.text));
    if (!parsed.success) return null;
    const s = parsed.data;
    return { turn, runtime: s.runtime, status: s.status, reason: s.reason, usage: s.usage };
  } catch {
    return null;
  }
}

/**
 * What a turn's runtime reported it spent, read as the runtime wrote it (not checked here: the engine decides
 * whether the figures are counts it can take). Null when the turn left no run-state file or it is unreadable.
 */
export async function readTurnReport(sessionsRoot: string, session: string, turn: number): Promise<{ tokens_in: unknown; tokens_out: unknown; cost_usd?: unknown; model?: unknown } | null> {
  if (turn < 1) return null;
  const read = await readCapped(join(sessionDir(sessionsRoot, session), runStateFileName(turn)), 1024 * 1024);
  if ('reason' in read) return null;
  try {
    const state = JSON.parse(read.text) as { usage?: Record<string, unknown>; cost_usd?: unknown; model?: unknown } | null;
    const u = state?.usage;
    if (typeof u !== 'object' || u === null) return null;
    return { tokens_in: u['tokens_in'], tokens_out: u['tokens_out'], cost_usd: state?.cost_usd, model: state?.model };
  } catch {
    return null;
  }
}
