// What a round adds to `nxc status` and `nxc threads show`: the round on its own thread's row, and
// on a step thread's row which round, step and pass it belongs to.
import type { StatusOperation, StatusRow } from '../../../protocol/receipts.js';
import { stepName, stepOfThread, type Board } from './board.js';
import { roundStatus } from './status.js';

export function withRound(row: StatusRow, boards: ReadonlyMap<string, Board>): StatusRow {
  const own = boards.get(row.thread);
  if (own !== undefined) return { ...row, round: roundStatus(own) };
  const parent = row.parent === null ? undefined : boards.get(row.parent);
  const r = parent === undefined ? null : stepOfThread(parent, row.thread);
  if (parent === undefined || r === null) return row;
  return { ...row, step: { round: parent.round, channel: parent.channel.name, name: stepName(parent, r.step), pass: r.pass } };
}

export function withRounds(op: StatusOperation, boards: ReadonlyMap<string, Board>): StatusOperation {
  return boards.size === 0 ? op : { ...op, threads: op.threads.map((row) => withRound(row, boards)) };
}
