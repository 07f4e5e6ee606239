// A turn's end: settling what its process left (an answer in its name when it owes one), and
// starting its session again when input arrived while it ran.
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
  refusalOf,
} from './turns.js';
import type { Intent } from './batch.js';
import { readSpec, readTurnReport, sessionDir } from '../../adapters/sessions/index.js';
import { declaredSpendRules } from '../../adapters/workspace/index.js';
import { turnUsageOf, type PriceTable } from '../../../protocol/usage.js';
import type { EngineCore } from './core.js';

export function finishTurnOf(core: EngineCore) {
  const { deps, db } = core;

  /**
   * A turn's process has ended. Settles what it left: a session that owes its thread
   * and is not waiting on a round of its own gets an answer written in its name.
   */
  async function finishTurn(end: TurnEnd): Promise<{ outcome: string; woke: number; warnings: Warning[] }> {
    const at = deps.now().toISOString();
    const commit = core.commit();
    // Read before the transaction (git is outside it): an answer written in the session's name records the
    // working copy as every other message does.
    const { wc } = await core.workingCopy();
    // What the turn spent, as its runtime wrote it: a claim of that process, taken only as counts and amounts.
    const spent = await turnSpend(end);
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
      // The lease hears how the process ended: an orderly end, or one it never reported itself.
      const intents: Intent[] = [{ type: crashed ? 'session_crashed' : 'session_ended', operation: opId, thread: s.thread, session: s.id }];
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
        // A session that exits quietly after one of its own commands was refused could not carry its task out:
        // what is written in its name says so and hands the task back, rather than passing for an answer.
        const refused = crashed ? null : await refusalOf(tx, s.id, end.turn);
        const textOut =
          refused !== null
            ? `sidecar: ${s.handle} ${why} without replying, after its own command was refused (${refused.code}: ${refused.message}). It could not carry its task out; this hand-back is written in its name.`
            : `sidecar: ${s.handle} ${why} without replying; this answer is written in its name.${crashed ? '' : ' Check the tools its declaration grants.'}`;
        const effect = crashed || refused !== null ? 'escalate' : 'answer';
        plan.drafts.push(messageDraft(opId, thread.id, { handle: s.handle, session: s.id }, textOut, effect, wc, true));
        await planRequesterWake(deps, tx, state, thread, plan);
        // A crash is not a hand-back by the session. Under a session that is woken by it, the runtime's hand-back
        // travels up as one; under a person the chain is simply dead, and the lease treats it so (it still owes).
        // A refusal is the session's own hand-back: the lease hears an escalation wherever it goes.
        const outcome = refused !== null ? 'escalate' : !crashed ? 'answer' : thread.opener.session !== null ? 'escalate' : 'none';
        intents.push({ type: 'reply', operation: opId, thread: thread.id, by: { handle: s.handle, session: s.id }, outcome, wake: plan.turns[0] ?? null });
      }
      plan.drafts.push({
        operation: opId,
        thread: s.thread,
        session: s.id,
        kind: 'session.turn_ended',
        body: { turn: end.turn, outcome, exit_code: end.exitCode, signal: end.signal, timed_out: end.timedOut, ...(spent.usage === null ? {} : { usage: spent.usage }) },
      });
      // What the turn left is a participant's post: a channel step's answer (or the one written in its name) and its end move its round.
      await core.append(tx, commit, { cause: 'turn_end', ...plan, intents, state, workingCopy: wc });
      // Input that arrived while the process lived (an answer, a follow-up) starts it again now.
      const after = await loadOperation(tx, opId);
      const s2 = after.sessions[s.id]!;
      const owes = after.threads[s.thread]!.state === 'open';
      if (owes && openSubRounds(after, s.id).length === 0 && s2.last_input_at > s2.turn_started_at) {
        const again = emptyPlan();
        await planTurn(deps, tx, after, s2, s2.last_answer_at > s2.turn_started_at ? 'follow_up' : 'answered', again, 'requester_not_woken');
        // The same session carrying on with what reached it while it ran: never held back.
        const wake = again.turns[0] ?? null;
        await core.append(tx, commit, { cause: 'wake', ...again, intents: [{ type: 'reply', operation: opId, thread: s.thread, by: { handle: s.handle, session: s.id }, outcome: 'none', wake }] });
      }
      return { outcome };
    });
    if (result === null) return { outcome: 'already_settled', woke: 0, warnings: [] };
    const { warnings, woke } = await core.settle(commit);
    if (spent.refused !== null) {
      warnings.push({ class: 'usage_refused', session: end.session, message: `the usage turn ${end.turn} of ${end.session} reported was not recorded: ${spent.refused}` });
    }
    return { outcome: result.outcome, woke: woke.length, warnings };
  }

  /** The usage a turn's end records: its runtime's report, priced from the workspace's table when it gave no cost. */
  async function turnSpend(end: TurnEnd): Promise<ReturnType<typeof turnUsageOf>> {
    const report = await readTurnReport(deps.workspace.paths.sessions, end.session, end.turn);
    if (report === null) return { usage: null, refused: null };
    let prices: PriceTable = {};
    try {
      prices = declaredSpendRules(deps.workspace.paths).prices;
    } catch {
      // A config that cannot be read prices nothing; the turn still ends, with the tokens it reported.
    }
    const declared = readSpec(sessionDir(deps.workspace.paths.sessions, end.session))?.declaration.model ?? null;
    return turnUsageOf(report, prices, declared);
  }

  return finishTurn;
}
