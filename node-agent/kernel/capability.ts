// A capability is one record: the op kinds it owns, the projections it keeps, the commands it answers, the
// policies run inside every append, the reactions after a commit and its steps of the clock. The kernel and
// the hosts derive the projection list, the handler table and the tick pipeline from the ordered list.
import type { CommandInput, CommandName, CommandOutput } from '../../protocol/commands.js';
import type { Op, OpKind } from '../../protocol/ops.js';
import type { Handlers } from './bus.js';
import { appendOps, type Author, type OpDraft, type Tx } from './log.js';
import type { Projection } from './projections.js';

/** What a command asks to append in one go. A capability's batch type extends this with its own words. */
export type Batch = { drafts: OpDraft[] };

/**
 * One transaction's effects, kept for after it commits, and the outcome they fill in for the answer. The
 * effects run in the order they were scheduled; the transaction rolling back drops them with it.
 */
export class Commit<O> {
  private readonly effects: Array<() => Promise<void>> = [];
  constructor(readonly outcome: O) {}

  /** Schedules `effect` for after the commit (a process to start, a file to move). */
  later(effect: () => Promise<void>): void {
    this.effects.push(effect);
  }

  /** Runs the scheduled effects once, in order; an effect may schedule more, which run after it. */
  async runEffects(): Promise<void> {
    for (let effect = this.effects.shift(); effect !== undefined; effect = this.effects.shift()) await effect();
  }
}

/**
 * A rule run inside the append transaction of every batch. `before` sees the batch before it is stored: it
 * may refuse (throw: nothing is written), add drafts, hold some back, or say what a post in a thread it owns
 * means. `after` sees the ops the drafts became: it may append facts of its own and schedule effects. Like
 * layers, `before` runs from the last capability of the list to the first (a later capability says what the
 * batch means before an earlier one decides on it) and `after` from the first to the last.
 */
export type AppendPolicy<C, B extends Batch, O> = {
  readonly name: string;
  before?(c: C, tx: Tx, batch: B, commit: Commit<O>): Promise<void>;
  after?(c: C, tx: Tx, batch: B, stored: readonly Op[], commit: Commit<O>): Promise<void>;
};

/** What a capability does once a transaction committed: after a command's own, or after ops taken in from elsewhere. */
export type AfterCommit<C, O> = {
  readonly name: string;
  /** After a command's transaction committed and every policy's effects ran. */
  committed?(c: C, commit: Commit<O>): Promise<void>;
  /** After ops that arrived from elsewhere were stored: what they set in motion here. */
  ingested?(c: C, ops: readonly Op[], outcome: O): Promise<void>;
};

/**
 * The stages of a tick, in order: what ended is settled first (its ends may move everything else), then each
 * capability's clocks, then the sweeps of what nobody took up in time. Within a stage, the list's order.
 */
export const TICK_STAGES = ['settle', 'clock', 'sweep'] as const;
export type TickStage = (typeof TICK_STAGES)[number];

export type TickStep<C, O> = { readonly name: string; readonly stage: TickStage; run(c: C, outcome: O): Promise<void> };

/**
 * A command handler inside a capability. `next` is the handler of the same command from a capability earlier
 * in the list: a later one may answer some inputs itself and hand the others down.
 */
export type LayeredHandler<C, K extends CommandName> = (ctx: C, input: CommandInput<K>, next: () => Promise<CommandOutput<K>>) => Promise<CommandOutput<K>>;

/** The record each capability folder exports. `K`: the commands it answers. */
export type Capability<C, B extends Batch, O, K extends CommandName = never> = {
  readonly name: string;
  /** The op kinds whose meaning this capability owns (each kind is owned by exactly one). */
  readonly opKinds: readonly OpKind[];
  readonly projections: readonly Projection[];
  readonly handlers: { readonly [P in K]: LayeredHandler<C, P> };
  readonly appendPolicies: readonly AppendPolicy<C, B, O>[];
  readonly afterCommit: readonly AfterCommit<C, O>[];
  readonly tick: readonly TickStep<C, O>[];
};

/** Any capability, whatever commands it answers. */
export type AnyCapability<C, B extends Batch, O> = Capability<C, B, O, any>;

/** The commands a list of capabilities answers together. */
export type HandledBy<L extends readonly { handlers: object }[]> = { [I in keyof L]: keyof L[I]['handlers'] }[number] & CommandName;

/** Every projection of the list, in its order: capability by capability, each one's own in order. */
export function projectionsOf(caps: readonly { readonly projections: readonly Projection[] }[]): Projection[] {
  return caps.flatMap((c) => c.projections);
}

/**
 * The handler table of the list. A command answered by two capabilities goes to the later one, which is
 * handed the earlier one as `next`.
 */
export function handlersOf<C, L extends readonly { readonly name: string; readonly handlers: object }[]>(caps: L): Handlers<C, HandledBy<L>> {
  type Any = (ctx: C, input: unknown, next?: () => Promise<unknown>) => Promise<unknown>;
  const table: Record<string, (ctx: C, input: unknown) => Promise<unknown>> = {};
  for (const cap of caps) {
    for (const [name, handler] of Object.entries(cap.handlers) as Array<[string, Any]>) {
      const below = table[name];
      const next = (ctx: C, input: unknown) =>
        below !== undefined ? below(ctx, input) : Promise.reject(new TypeError(`${cap.name} handed ${name} down, and no capability before it answers it`));
      table[name] = (ctx, input) => handler(ctx, input, () => next(ctx, input));
    }
  }
  return table as unknown as Handlers<C, HandledBy<L>>;
}

/**
 * Checks a list once: names unique, and each op kind owned by one capability. A mistake here is ours, so it
 * is a TypeError, thrown when the list is composed rather than when an op of the kind first arrives.
 */
export function checkCapabilities(caps: readonly { readonly name: string; readonly opKinds: readonly string[] }[]): void {
  const names = new Set<string>();
  const owners = new Map<string, string>();
  for (const cap of caps) {
    if (names.has(cap.name)) throw new TypeError(`two capabilities are named ${cap.name}`);
    names.add(cap.name);
    for (const kind of cap.opKinds) {
      const owner = owners.get(kind);
      if (owner !== undefined) throw new TypeError(`op kind ${kind} is claimed by both ${owner} and ${cap.name}`);
      owners.set(kind, cap.name);
    }
  }
}

/** The kernel of one open workspace: appends through the list's policies, runs reactions and the tick. */
export type CapabilityKernel<B extends Batch, O> = {
  /** A fresh commit for one transaction. */
  commit(): Commit<O>;
  /** Appends `batch` inside `tx`: every policy's `before` (last to first), the drafts stored (signed and projected), every policy's `after` (first to last). */
  append(tx: Tx, commit: Commit<O>, batch: B): Promise<Op[]>;
  /** After `commit`'s transaction committed: its effects in order, then every capability's `committed` reaction. */
  settle(commit: Commit<O>): Promise<O>;
  /** After ops from elsewhere were stored: every capability's `ingested` reaction, in order. */
  ingested(ops: readonly Op[]): Promise<O>;
  /** The clock's work: every tick step, stage by stage. */
  tick(): Promise<O>;
};

/** Builds the kernel of one workspace from the list, with `ctx` handed to every hook and `writer` appending. */
export function createKernel<C, B extends Batch, O>(caps: readonly AnyCapability<C, B, O>[], ctx: C, writer: Author, newOutcome: () => O): CapabilityKernel<B, O> {
  checkCapabilities(caps);
  const policies = caps.flatMap((c) => c.appendPolicies);
  const outermostFirst = [...policies].reverse();
  const reactions = caps.flatMap((c) => c.afterCommit);
  const steps = TICK_STAGES.flatMap((stage) => caps.flatMap((c) => c.tick.filter((s) => s.stage === stage)));
  return {
    commit: () => new Commit(newOutcome()),
    async append(tx, commit, batch) {
      for (const p of outermostFirst) await p.before?.(ctx, tx, batch, commit);
      const stored = await appendOps(tx, writer, batch.drafts);
      for (const p of policies) await p.after?.(ctx, tx, batch, stored, commit);
      return stored;
    },
    async settle(commit) {
      await commit.runEffects();
      for (const r of reactions) await r.committed?.(ctx, commit);
      return commit.outcome;
    },
    async ingested(ops) {
      const outcome = newOutcome();
      for (const r of reactions) await r.ingested?.(ctx, ops, outcome);
      return outcome;
    },
    async tick() {
      const outcome = newOutcome();
      for (const s of steps) await s.run(ctx, outcome);
      return outcome;
    },
  };
}

export type { OpDraft };
