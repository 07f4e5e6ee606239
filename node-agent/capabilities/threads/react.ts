// What ops taken in from other workspaces set in motion here: admitting (or refusing) their commissions,
// and waking local sessions their answers and follow-ups are for.
import { newSessionId} from '../../../protocol/ids.js';
import type { Op, OpOf } from '../../../protocol/ops.js';
import { appendOps, type Commit, type Exec } from '../../kernel/index.js';
import type { Intent, Outcome } from './batch.js';
import { inertIds, loadOperation } from './operations.js';
import { countRefusal } from './refusals.js';
import { openSubRounds, newSessionState, withCarriedTurns, withCarriedUsage } from './fold.js';
import type { Spend } from '../../../protocol/usage.js';
import { certifiedKeys } from '../keys/index.js';
import { claimAdmission, verifyAdmission } from '../trust/index.js';
import {
  emptyPlan,
  planRequesterWake,
  planTurn,
} from './turns.js';
import type { EngineCore } from './core.js';

const effective = new WeakMap<readonly Op[], Promise<Op[]>>();

/**
 * The ops of a batch taken in from elsewhere that the fold took (an op found without authority, such as an
 * answer from a workspace the thread is not addressed to, is stored and inert: it sets nothing in motion).
 * Asked once per batch, whichever capability's reaction asks first.
 */
export function effectiveOps(db: Exec, ops: readonly Op[]): Promise<Op[]> {
  let found = effective.get(ops);
  if (found === undefined) {
    found = inertIds(db, ops.map((op) => op.id)).then((inert) => ops.filter((op) => !inert.has(op.id)));
    effective.set(ops, found);
  }
  return found;
}

export function reactOf(core: EngineCore) {
  const { deps, db, workspace, writer } = core;

  /**
   * What ops taken in from another workspace set in motion here (called by the node after they are
   * stored): a commission addressed to this workspace is admitted (a session starts at the stamped
   * depth + 1) or refused (`commission.rejected`); an answer, hand-back or refusal of a thread a
   * local session opened wakes that session; a follow-up to a local session's thread wakes it. What it
   * started and refused is added to `out`.
   */
  async function react(ops: readonly Op[], out: Outcome): Promise<void> {
    // An op the fold found without authority (an answer from a workspace the thread is not addressed
    // to, a follow-up from an outsider) is stored and inert: it sets nothing in motion here either.
    for (const op of await effectiveOps(db, ops)) {
      if (op.workspace === workspace.id || op.thread === null) continue;
      let commit: Commit<Outcome> | null = null;
      if (op.kind === 'thread.opened' && op.body.target.kind === 'remote' && op.body.target.workspace === workspace.id) {
        const admitted = await admit(op as OpOf<'thread.opened'>);
        if (admitted === 'rejected') out.rejected++;
        else if (admitted === 'repeated') out.repeated++;
        else commit = admitted;
      } else if (op.kind === 'message.posted' || op.kind === 'commission.rejected') {
        const c = core.commit();
        commit = await db.transaction(async (tx) => {
          const state = await loadOperation(tx, op.operation);
          const thread = state.threads[op.thread!];
          if (!thread) return null;
          const p = emptyPlan();
          const local = (id: string | null) => id !== null && state.sessions[id]?.workspace === workspace.id;
          const effect = op.kind === 'message.posted' ? op.body.effect : 'escalate';
          const by = op.kind === 'message.posted' ? op.body.author : { handle: thread.target.handle, session: null };
          const intents: Intent[] = [];
          if ((effect === 'answer' || effect === 'escalate') && local(thread.opener.session)) {
            await planRequesterWake(deps, tx, state, thread, p);
            intents.push({ type: 'reply', operation: op.operation, thread: thread.id, by, outcome: effect, wake: p.turns[0] ?? null });
          } else if (effect === 'reopen' && local(thread.session)) {
            const s = state.sessions[thread.session!]!;
            if (s.in_turn || openSubRounds(state, s.id).length === 0) await planTurn(deps, tx, state, s, 'follow_up', p, 'step_skipped');
            intents.push({ type: 'reopen', state, thread: thread.id, parent: thread.parent, by, target: thread.target, turn: p.turns[0] ?? null });
          }
          await core.append(tx, c, { cause: 'react', ...p, intents, state });
          return c;
        });
      }
      if (commit === null) continue;
      const done = await core.settle(commit);
      out.woke.push(...done.woke);
      out.warnings.push(...done.warnings);
    }
  }

  /** A remote commission addressed here: its persona must be addressable and its stamp admitted. */
  async function admit(op: OpOf<'thread.opened'>): Promise<Commit<Outcome> | 'rejected' | 'repeated' | null> {
    const target = op.body.target;
    if (target.kind !== 'remote') return null;
    const before = (await loadOperation(db, op.operation)).threads[op.thread!];
    // Answered already: the asker handed it back at its deadline (see lapse.ts), so nobody waits for a run here.
    if (!before || before.session !== null || before.rejected || before.state !== 'open') return null;
    let refusal: { code: string; message: string } | null = null;
    let depth = 0;
    let carried = 0;
    let carriedUsage: Spend | undefined;
    // The asker's key chain as this node verified it: a stamp signed after `nxs key rotate` verifies
    // with a key certified from the trusted genesis key. A chain that cannot be read offers none.
    const chain = await certifiedKeys(db, op.workspace).catch(() => []);
    const verdict = await verifyAdmission(workspace.paths, op.body.stamp, {
      now: deps.now(),
      certified: (iss) => (iss === op.workspace ? chain : []),
    });
    if (!verdict.ok) refusal = { code: verdict.code, message: verdict.message };
    else {
      const c = verdict.claims;
      if (c.iss !== op.workspace || c.thread !== op.thread || c.target_role !== target.role || c.sub !== op.body.opener.handle) {
        refusal = { code: 'STAMP_FORGED', message: 'the stamp does not vouch for this commission (issuer, thread, role or asker differ)' };
      }
      depth = verdict.sessionDepth;
      carried = c.turns ?? 0;
      carriedUsage = c.usage;
    }
    if (refusal === null) {
      const persona = await deps.loadPersona(workspace.paths.root, target.role).catch(() => null);
      // Two different fixes for the asker: another role name, or a change in this workspace's declaration.
      if (persona === null) refusal = { code: 'UNKNOWN_PERSONA', message: `no persona "${target.role}" is declared in ${workspace.id}` };
      else if (!persona.addressable.external) refusal = { code: 'NOT_ADDRESSABLE', message: `${target.role} is not declared addressable: {external: true}` };
    }
    const commit = core.commit();
    return db.transaction(async (tx) => {
      const state = await loadOperation(tx, op.operation);
      const thread = state.threads[op.thread!];
      if (!thread || thread.session !== null || thread.rejected || thread.state !== 'open') return null;
      // The stamp's id is claimed with the session it lets in: one stamp is admitted once, whoever holds the store.
      if (refusal === null) {
        const claimed = await claimAdmission(tx, verdict, { now: deps.now() });
        if (!claimed.ok) refusal = { code: claimed.code, message: claimed.message };
      }
      if (refusal !== null) {
        // A few signed refusals per sending workspace and window; past that only a count (refusals.ts).
        if (!(await countRefusal(tx, op.workspace, deps.now()))) return 'repeated' as const;
        await appendOps(tx, writer, [{ operation: op.operation, thread: op.thread, session: null, kind: 'commission.rejected', body: refusal }]);
        return 'rejected' as const;
      }
      const plan = emptyPlan();
      const id = newSessionId();
      const handle = `${workspace.short}/${target.role}`;
      // The asker's turns come with it: this operation's budget counts on from what it had used.
      const body = {
        role: target.role,
        handle,
        depth,
        ...(carried > 0 ? { carried_turns: carried } : {}),
        ...(carriedUsage !== undefined && (carriedUsage.tokens > 0 || carriedUsage.cost > 0) ? { carried_usage: carriedUsage } : {}),
      };
      plan.drafts.push({ operation: op.operation, thread: op.thread, session: id, kind: 'session.created', body });
      const session = newSessionState({ id, workspace: workspace.id, thread: op.thread!, role: target.role, handle, depth });
      await planTurn(deps, tx, withCarriedUsage(withCarriedTurns(state, carried), carriedUsage), session, 'commissioned', plan, 'step_skipped');
      // An admitted commission needs the working copy like any other: it may queue for it.
      await core.append(tx, commit, { cause: 'react', ...plan, state, intents: [
        { type: 'commission', state, thread: op.thread!, parent: op.body.parent, by: op.body.opener, target: { kind: 'persona', role: target.role, handle }, turn: plan.turns[0] ?? null },
      ] });
      return commit;
    });
  }

  return react;
}
