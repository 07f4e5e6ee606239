// The working-copy lease as an append policy: inside every batch's transaction it decides what the command did
// (rules.ts), keeps back the turns that must wait for the copy and records its facts; after the commit it carries
// the decided effects out (moves of the copy, then the turns it lets start).
import type { AppendPolicy, TickStep } from '../../kernel/index.js';
import type { Batch, Outcome, ThreadsContext } from '../threads/index.js';
import { createLeaseHook, type Held, type LeaseHook } from './hook.js';

const hooks = new WeakMap<ThreadsContext, LeaseHook>();

/** The lease's engine for one open workspace, made once. */
export function leaseHookOf(c: ThreadsContext): LeaseHook {
  let hook = hooks.get(c);
  if (hook === undefined) hooks.set(c, (hook = createLeaseHook({ deps: c.deps, writer: c.writer })));
  return hook;
}

/** What `before` decided for a batch, until `after` records it. */
const decided = new WeakMap<Batch, Held>();

export const leasePolicy: AppendPolicy<ThreadsContext, Batch, Outcome> = {
  name: 'working-copy lease',
  async before(c, tx, batch) {
    // A batch that did nothing the lease hears of (no intent, no turn to start) passes untouched.
    if (batch.intents.length === 0 && batch.turns.length === 0) return;
    decided.set(batch, await leaseHookOf(c).hold(tx, batch));
  },
  async after(c, tx, batch, stored, commit) {
    const held = decided.get(batch);
    if (held === undefined) return;
    decided.delete(batch);
    const hook = leaseHookOf(c);
    const after = await hook.record(tx, held, stored);
    commit.later(async () => {
      const done = await hook.carryOut(after, commit.outcome.warnings);
      commit.outcome.woke.push(...done.woke);
      if (done.queued !== null) commit.outcome.queued = done.queued;
      if (done.parked !== null) commit.outcome.parked = done.parked;
    });
  },
};

/** The lease's clock: contention, the bound, the dead-holder sweep, a refused park tried again. */
export const leaseTick: TickStep<ThreadsContext, Outcome> = {
  name: 'working-copy lease',
  stage: 'clock',
  async run(c, out) {
    const warnings = await leaseHookOf(c).tick();
    await c.engine.recordStartFailures(warnings);
    out.warnings.push(...warnings);
  },
};
