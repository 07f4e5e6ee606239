// What a chat command hands the kernel to append, in the engine's own words (the drafts, the turns it planned,
// what it did), and what the commit leaves for its answer. Other capabilities read these through the door.
import type { ParkRecord, Trigger } from '../../../protocol/leases.js';
import type { Author, Target } from '../../../protocol/ops.js';
import type { Receipt, Warning, Woke } from '../../../protocol/receipts.js';
import type { WorkingCopy } from '../../../protocol/working-copy.js';
import type { Author as Writer, CapabilityKernel, OpDraft } from '../../kernel/index.js';
import type { EngineDeps } from '../context.js';
import type { OperationState, ThreadState } from './fold.js';
import type { PlannedTurn } from './turns.js';

/**
 * One thing a command did, that a policy (the working-copy lease) may need to hear. Commissions and follow-ups
 * going down carry the turn the command planned for them (a policy may hold it back); a reply carries the wake
 * it set off going up.
 */
export type Intent =
  | {
      type: 'commission' | 'reopen';
      /** The operation as it stood before this command (a new operation: empty, with its id). */
      state: OperationState;
      thread: string;
      parent: string | null;
      by: Author;
      target: Target;
      turn: PlannedTurn | null;
      /** A channel step: the channel's `working_tree: exclusive` counts as well as the persona's. */
      exclusive?: boolean;
      /** A channel step's window (its own `timeout:`), in place of the persona's. */
      window_ms?: number | null;
      /** A step of an ordered run: two steps of one run never start side by side. */
      run?: Trigger['run'];
    }
  | { type: 'reply'; operation: string; thread: string; by: Author; outcome: 'answer' | 'escalate' | 'question' | 'none'; wake: PlannedTurn | null }
  | { type: 'session_ended' | 'session_crashed'; operation: string; thread: string; session: string }
  | { type: 'answered_from_above'; operation: string; thread: string; by: Author | null };

/**
 * What wrote a batch. Policies decide by it: a participant's post (`reply`, `turn_end`) moves what follows its
 * thread; the engine's own writings on someone's behalf (`lapse`, `budget`, `withdraw`) do not, nor does a person
 * marking a result read (`done`), which moves no thread.
 */
export type Cause = 'send' | 'reply' | 'turn_end' | 'wake' | 'react' | 'lapse' | 'budget' | 'round' | 'withdraw' | 'done';

/** A batch of the chat engine: its drafts, the turns planned for after commit, and what the command did. */
export type Batch = {
  cause: Cause;
  drafts: OpDraft[];
  /** Turns to start once the batch commits; a policy that starts them itself takes them out. */
  turns: PlannedTurn[];
  intents: Intent[];
  /** Warnings the command met while planning, first in its answer. */
  warnings: Warning[];
  /** The operation as it stood before the batch, when the command read it. */
  state?: OperationState;
  /** A reply: the thread it posts in, who posts, whether they owe that thread, and the message if it was `--needs-rework`. */
  reply?: { thread: ThreadState; author: Author; text: string; answering: boolean; rework: string | null };
  /** The working copy as the command read it (unset: it did not read it). */
  workingCopy?: WorkingCopy | null;
};

/** What a commit, a tick or a reaction to ops from elsewhere did, for the command's answer. */
export type Outcome = {
  warnings: Warning[];
  woke: Woke[];
  queued: NonNullable<Receipt['queued']> | null;
  parked: ParkRecord | null;
  /** The channel round a message opened, asked again or moved, as it stands now. */
  round?: Receipt['round'];
  /** Dead turns settled (a tick). */
  settled: number;
  /** Commissions from elsewhere refused, and refusals only counted (a reaction). */
  rejected: number;
  repeated: number;
};

export function newOutcome(): Outcome {
  return { warnings: [], woke: [], queued: null, parked: null, settled: 0, rejected: 0, repeated: 0 };
}

/** The engine's ground: its dependencies, the writer that signs what it appends, and the kernel it appends through. */
export type KernelContext = {
  deps: EngineDeps;
  /** Signs and folds what this workspace appends. */
  writer: Writer;
  kernel: CapabilityKernel<Batch, Outcome>;
};
