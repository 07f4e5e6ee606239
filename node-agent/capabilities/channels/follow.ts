// Following what happens in a round's step threads: a step's answer (or the runtime's answer in its
// name), its session's end, and what another workspace did with a member's commission (admitted,
// answered, refused, ended). Each becomes a board op in the same transaction; the engine settles the
// rounds touched once it commits.
import { NexusError } from '../../../protocol/errors.js';
import type { Op } from '../../../protocol/ops.js';
import type { ChannelOpPayload } from '../../../protocol/round.js';
import type { Warning } from '../../../protocol/receipts.js';
import { appendOps, type Author as Writer, type Exec } from '../../kernel/index.js';
import { loadOperation, type OperationState, type ThreadState } from '../threads/index.js';
import { stepName, stepOfThread, type Board } from './board.js';
import { loadRound } from './projection.js';
import { roundDraft, roundOfStep } from './records.js';
import { needsRework, stepAdmitted, stepAnswered, stepEnded } from './verdicts.js';

export type Followed = { rounds: string[]; warnings: Warning[] };

const FOLLOWED_KINDS = new Set(['message.posted', 'session.created', 'session.turn_ended', 'commission.rejected']);

/** The board op one thread op means for its round, or null when it means nothing there. */
function boardOpOf(b: Board, op: Op, ctx: { workspace: string; now: Date; rework: string | null }, warnings: Warning[]): ChannelOpPayload | null {
  const thread = op.thread!;
  switch (op.kind) {
    case 'message.posted': {
      if (op.body.effect !== 'answer' && op.body.effect !== 'escalate') return null;
      const r = stepOfThread(b, thread);
      if (r === null) return null;
      const a = op.body.author;
      const owes = (a.session !== null && a.session === r.session) || (r.session === null && a.handle === r.handle);
      // An answer at or after the deadline is late: the window lapses it, and the round goes on without it.
      if (!owes || (r.deadline !== null && Date.parse(r.deadline) <= ctx.now.getTime())) return null;
      const outcome = ctx.rework === op.body.message ? 'needs_rework' : op.body.effect === 'escalate' ? 'escalate' : 'answer';
      return stepAnswered(b, thread, { message: op.body.message, author: a.handle, outcome });
    }
    case 'session.created':
      // A member of another workspace was admitted there.
      return op.workspace !== ctx.workspace && op.session !== null ? stepAdmitted(b, thread, op.session) : null;
    case 'session.turn_ended':
      return op.session === null ? null : stepEnded(b, op.session);
    case 'commission.rejected': {
      const r = stepOfThread(b, thread);
      if (r === null || (r.state !== 'on_hold' && r.state !== 'running')) return null;
      const name = stepName(b, r.step);
      warnings.push({
        class: 'step_skipped',
        reason: op.body.code,
        round: b.round,
        step: name,
        thread,
        message: `step "${name}" of #${b.channel.name} was refused by the workspace it was sent to (${op.body.code}: ${op.body.message}); the round goes on without it`,
      });
      return { kind: 'step.skipped', body: { round: b.round, pass: r.pass, step: r.step, reason: op.body.code, message: op.body.message } };
    }
    default:
      return null;
  }
}

/**
 * Turns ops just stored (written here, or taken in from another workspace) into the board ops they
 * mean, appended in the same transaction. `rework` names the message that was a `--needs-rework`.
 */
export async function follow(
  tx: Exec,
  writer: Writer,
  ops: readonly Op[],
  ctx: { now: Date; rework?: string | null },
): Promise<Followed> {
  const out: Followed = { rounds: [], warnings: [] };
  const states = new Map<string, OperationState>();
  for (const op of ops) {
    if (op.thread === null || !FOLLOWED_KINDS.has(op.kind)) continue;
    let state = states.get(op.operation);
    if (state === undefined) states.set(op.operation, (state = await loadOperation(tx, op.operation)));
    const round = roundOfStep(state, op.thread);
    if (round === null) continue;
    const row = await loadRound(tx, round);
    // Only the workspace that opened a round decides about it.
    if (row === null || row.board.workspace !== writer.workspace) continue;
    const boardOp = boardOpOf(row.board, op, { workspace: writer.workspace, now: ctx.now, rework: ctx.rework ?? null }, out.warnings);
    if (boardOp === null) continue;
    await appendOps(tx, writer, [roundDraft(row.operation, round, boardOp)]);
    if (!out.rounds.includes(round)) out.rounds.push(round);
  }
  return out;
}

/**
 * `nxc reply --needs-rework` is taken only from the session that owes a step thread whose step
 * declares `rework:`, while the step is still owed.
 * @throws NexusError REWORK_NOT_DECLARED anywhere else; nothing is written.
 */
export async function checkRework(tx: Exec, state: OperationState, thread: ThreadState, answering: boolean): Promise<void> {
  const round = roundOfStep(state, thread.id);
  const row = round === null ? null : await loadRound(tx, round);
  needsRework(row?.board ?? null, thread.id);
  if (!answering) {
    throw new NexusError('REWORK_NOT_DECLARED', `only the session that owes thread ${thread.id} may send its work back (--needs-rework)`, { thread: thread.id });
  }
  if (thread.state !== 'open') {
    throw new NexusError('REWORK_NOT_DECLARED', `thread ${thread.id} is already answered: there is nothing left to send back`, { thread: thread.id });
  }
}
