// The threads capability as one record: the chat engine's op kinds and folds, its commands, the turns it
// starts after a commit when no policy starts them, and its reactions and steps of the clock.
import type { OpKind } from '../../../protocol/ops.js';
import { threadHandlers } from './commands.js';
import type { ThreadsCapability } from './engine.js';
import { operationsProjection, personaRunsProjection } from './operations.js';
import { startTurns } from './turns.js';

/** The op kinds of threads, sessions and turns. */
export const THREAD_OP_KINDS: readonly OpKind[] = ['thread.opened', 'message.posted', 'session.created', 'session.turn_started', 'session.turn_ended', 'commission.rejected', 'thread.done'];

export const threadsCapability: ThreadsCapability<keyof typeof threadHandlers> = {
  name: 'threads',
  opKinds: THREAD_OP_KINDS,
  projections: [operationsProjection, personaRunsProjection],
  handlers: threadHandlers,
  appendPolicies: [
    {
      name: 'turns',
      // What the command met while planning comes first in its answer.
      before: async (_c, _tx, batch, commit) => void commit.outcome.warnings.push(...batch.warnings),
      // Turns no policy took to start itself (the working-copy lease takes every turn it hears of) start after commit.
      after: async (c, _tx, batch, _stored, commit) => {
        const turns = batch.turns.splice(0);
        if (turns.length === 0) return;
        commit.later(async () => void commit.outcome.woke.push(...(await startTurns(c.deps, turns, commit.outcome.warnings))));
      },
    },
  ],
  afterCommit: [
    // Every start that failed is recorded, and an operation whose budget ran out handed back.
    { name: 'start failures', committed: (c, commit) => c.engine.recordStartFailures(commit.outcome.warnings) },
    { name: 'commissions and answers from elsewhere', ingested: (c, ops, out) => c.engine.admit(ops, out) },
  ],
  tick: [
    { name: 'dead turns', stage: 'settle', run: async (c, out) => void (out.settled += await c.engine.reap()) },
    { name: 'commissions nobody took up', stage: 'sweep', run: async (c, out) => void out.warnings.push(...(await c.engine.lapse()).warnings) },
  ],
};
