// nxc withdraw --thread <first thread>: the person who sent an operation's first commission takes it back. Its
// open threads are discharged (the runtime writes that they were withdrawn), its sessions are asked to stop, and
// once the last process is gone the lease parks what it left and hands the copy on.
import { NexusError } from '../../../protocol/errors.js';
import type { WithdrawInput } from '../../../protocol/commands.js';
import type { LeaseEffect } from '../../../protocol/leases.js';
import type { Author } from '../../../protocol/ops.js';
import type { WithdrawResult } from '../../../protocol/receipts.js';
import { appendOps, type OpDraft } from '../../kernel/index.js';
import { loadOperation, messageDraft, operationOfThread, WITHDRAWN_PREFIX, type ThreadsContext } from '../threads/index.js';
import { factDrafts, type LeaseAfter } from './hook.js';
import { leaseHookOf } from './policy.js';
import { loadLease } from './store.js';
import { worldFacts } from './events.js';

export function withdrawOf(c: ThreadsContext) {
  const { deps, engine } = c;
  const hook = leaseHookOf(c);

  return async function withdraw(input: WithdrawInput): Promise<WithdrawResult> {
    await engine.reap();
    const commit = engine.commit();
    const result = await deps.db.transaction(async (tx) => {
      const caller = await engine.resolveCaller(tx, input.caller);
      const operation = await operationOfThread(tx, input.thread);
      if (operation === null) throw new NexusError('UNKNOWN_THREAD', `no thread ${input.thread} in this workspace`);
      const state = await loadOperation(tx, operation);
      // The same refusals whether or not the lease follows the operation.
      if (caller.session !== null) {
        throw new NexusError('WITHDRAW_BY_SESSION', 'a session may not withdraw a commission; escalate to have a round stopped');
      }
      if (input.thread !== operation) {
        throw new NexusError('WITHDRAW_NOT_FIRST_THREAD', `name the operation's first thread: ${operation}`, { operation });
      }
      const root = state.threads[operation]!;
      if (root.opener.session !== null || caller.handle !== root.opener.handle) {
        throw new NexusError('WITHDRAW_NOT_SENDER', `only ${root.opener.handle}, who sent the first commission, may withdraw it`);
      }
      const lease = await loadLease(tx, deps.workspace.id);
      const by = { handle: caller.handle, session: null };
      const d = await hook.decideAll(tx, lease, [{ type: 'withdraw', thread: operation, by, facts: await worldFacts(deps, tx, lease) }]);
      // An operation the lease does not follow is stopped all the same: every open thread, every running turn.
      let stop = d.effects.find((e): e is Extract<LeaseEffect, { type: 'stop' }> => e.type === 'stop');
      if (stop === undefined) {
        stop = {
          type: 'stop',
          operation,
          discharge: [],
          sessions: Object.values(state.sessions).filter((s) => s.in_turn).map((s) => s.id),
        };
        d.effects.unshift(stop);
      }
      const open = Object.values(state.threads).filter((t) => t.state === 'open').map((t) => t.id);
      const discharged = [...new Set([...stop.discharge.filter((id) => state.threads[id]?.state === 'open'), ...open])];
      const author: Author = { handle: caller.handle, session: null };
      const drafts: OpDraft[] = [];
      for (const thread of discharged) {
        drafts.push(messageDraft(operation, thread, author, `${WITHDRAWN_PREFIX}${caller.handle}: this round was stopped before it answered.`, 'answer', null, true));
      }
      // Through the policies: a channel round of this workspace is discharged with its thread, completed as it stood.
      await engine.append(tx, commit, { cause: 'withdraw', drafts, turns: [], intents: [], warnings: [], state });
      const after: LeaseAfter = { appended: [], effects: d.effects, planned: new Map(), running: new Map(), followed: new Set(Object.keys(d.state.areas)), warnings: [] };
      const more = await hook.planStarts(tx, d.effects, after.planned, after);
      await appendOps(tx, c.writer, [...more, ...factDrafts(d.facts)]);
      commit.later(async () => {
        const done = await hook.carryOut(after, commit.outcome.warnings);
        commit.outcome.woke.push(...done.woke);
        commit.outcome.parked = done.parked;
      });
      return { operation, discharged, stopping: stop.sessions };
    });
    // The moves and starts, then the turns whose start failed recorded.
    const done = await engine.settle(commit);
    const parked = done.parked === null ? null : { branch: done.parked.park_branch, commit: done.parked.work ?? done.parked.head };
    return {
      withdrawn: true,
      operation: result.operation,
      thread: input.thread,
      discharged: result.discharged,
      stopping: result.stopping,
      parked,
      woke: done.woke,
      warnings: done.warnings,
    };
  };
}
