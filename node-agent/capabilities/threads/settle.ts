// A turn's end: settling what its process left (an answer in its name when it owes one), and
// starting its session again when input arrived while it ran.
import { appendOps} from '../../kernel/index.js';
import { loadOperation, operationOfSession} from './operations.js';
import { openSubRounds} from './fold.js';
import type { TurnEnd } from '../../../protocol/commands.js';
import type { Warning } from '../../../protocol/receipts.js';
import {
  emptyPlan,
  markProcessEnded,
  messageDraft,
  planRequesterWake,
  planTurn,
  startTurns,
} from './turns.js';

import type { EngineCore } from './core.js';
import type { Rounds } from '../channels/index.js';

export function finishTurnOf(core: EngineCore, rounds: Rounds) {
  const { deps, db, writer, recordStartFailures } = core;

  /**
   * A turn's process has ended. Settles what it left: a session that owes its thread
   * and is not waiting on a round of its own gets an answer written in its name.
   */
  async function finishTurn(end: TurnEnd): Promise<{ outcome: string; woke: number; warnings: Warning[] }> {
    const at = deps.now().toISOString();
    const result = await db.transaction(async (tx) => {
      await markProcessEnded(tx, end.session, end.turn, { exitCode: end.exitCode, signal: end.signal, at });
      const opId = await operationOfSession(tx, end.session);
      if (opId === null) return null;
      const state = await loadOperation(tx, opId);
      const s = state.sessions[end.session];
      if (!s || s.turn !== end.turn || !s.in_turn) return null;
      const thread = state.threads[s.thread]!;
      const plan = emptyPlan();
      const crashed = end.timedOut || end.exitCode !== 0;
      let outcome: 'replied' | 'waiting' | 'substituted';
      if (s.last_answer_at > s.turn_started_at || thread.state === 'answered') outcome = 'replied';
      else if (openSubRounds(state, s.id).length > 0 || s.last_input_at > s.turn_started_at) outcome = 'waiting';
      else outcome = 'substituted';
      if (outcome === 'substituted') {
        const why = end.timedOut
          ? 'ran past its declared timeout and was stopped'
          : end.signal !== null
            ? `was ended by ${end.signal === 'lost' ? 'a crash (its supervisor is gone)' : end.signal}`
            : end.exitCode !== 0
              ? `exited with code ${end.exitCode}`
              : 'exited normally';
        const textOut = `[runtime] ${s.handle} ${why} without replying; this answer is written in its name.${crashed ? '' : ' Check the tools its declaration grants.'}`;
        const effect = crashed ? 'escalate' : 'answer';
        plan.drafts.push(messageDraft(opId, thread.id, { handle: s.handle, session: s.id }, textOut, effect, null, true));
        await planRequesterWake(deps, tx, state, thread, plan);
      }
      plan.drafts.push({
        operation: opId,
        thread: s.thread,
        session: s.id,
        kind: 'session.turn_ended',
        body: { turn: end.turn, outcome, exit_code: end.exitCode, signal: end.signal, timed_out: end.timedOut },
      });
      // A channel step's answer (or the one written in its name) and its end move its round.
      const followed = await rounds.follow(tx, await appendOps(tx, writer, plan.drafts));
      // Input that arrived while the process lived (an answer, a follow-up) starts it again now.
      const after = await loadOperation(tx, opId);
      const s2 = after.sessions[s.id]!;
      const owes = after.threads[s.thread]!.state === 'open';
      if (owes && openSubRounds(after, s.id).length === 0 && s2.last_input_at > s2.turn_started_at) {
        const again = emptyPlan();
        await planTurn(deps, tx, after, s2, s2.last_answer_at > s2.turn_started_at ? 'follow_up' : 'answered', again, 'requester_not_woken');
        await appendOps(tx, writer, again.drafts);
        plan.turns.push(...again.turns);
        plan.warnings.push(...again.warnings);
      }
      return { plan, outcome, followed };
    });
    if (result === null) return { outcome: 'already_settled', woke: 0, warnings: [] };
    const warnings = [...result.plan.warnings];
    const woke = await startTurns(deps, result.plan.turns, warnings);
    await recordStartFailures(warnings);
    const moved = await rounds.settle(result.followed.rounds, result.followed.warnings);
    warnings.push(...moved.warnings);
    return { outcome: result.outcome, woke: woke.length + moved.woke.length, warnings };
  }

  return finishTurn;
}
