// What recording a turn's usage costs the engine per turn: reading the runtime's run report, pricing it from
// the workspace's table, folding it into the operation, and (with a daily ceiling declared) reading today's
// spend from the store. Run by `npm run bench` on its seeded store; judged against a 1 ms target.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Op } from '../protocol/ops.js';
import { turnUsageOf } from '../protocol/usage.js';
import { readTurnReport } from '../node-agent/adapters/sessions/index.js';
import { declaredSpendRules, type Workspace } from '../node-agent/adapters/workspace/index.js';
import { foldStep, newSessionState, emptyOperation, spendToday } from '../node-agent/capabilities/threads/index.js';
import type { Exec } from '../node-agent/kernel/index.js';
import { row, sample, type Summary } from './stats.js';

/** The per-turn cost of recording usage, as two rows: at the turn's end, and at a turn's start under a daily ceiling. */
export async function usageBench(db: Exec, workspace: Workspace, n: number): Promise<{ text: string; end: Summary; today: Summary }> {
  const session = 's-01BENCHUSAGE00000000000000';
  const dir = join(workspace.paths.sessions, session);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(
    join(dir, 'turn-1.run.json'),
    JSON.stringify({ version: 1, runtime: 'builtin', model: 'bench-model', usage: { model_calls: 3, tool_calls: 2, tokens_in: 12_000, tokens_out: 900, corrections: 0 } }),
    { mode: 0o600 },
  );
  const op = 't-01BENCHUSAGE00000000000000';
  const base = emptyOperation(op);
  const running = { ...base, sessions: { [session]: { ...newSessionState({ id: session, workspace: workspace.id, thread: op, role: 'r', handle: 'x/r', depth: 1 }), turn: 1, in_turn: true } } };
  const end = await sample(n, async () => {
    const report = await readTurnReport(workspace.paths.sessions, session, 1);
    const { usage } = turnUsageOf(report, declaredSpendRules(workspace.paths).prices, null);
    const ended = { id: 'o', workspace: workspace.id, origin: 'o', lamport: 2, ts: '', operation: op, thread: op, session, key: 'k', kind: 'session.turn_ended', body: { turn: 1, outcome: 'replied', exit_code: 0, signal: null, timed_out: false, ...(usage ? { usage } : {}) } } as Op;
    foldStep(running, ended);
  });
  const today = await sample(n, async () => {
    await spendToday(db, workspace.id, new Date());
  });
  const text = [row('usage at a turn\'s end: read report, price, fold', end), row('usage at a turn\'s start: today\'s spend (daily ceiling)', today)].join('\n');
  return { text, end, today };
}
