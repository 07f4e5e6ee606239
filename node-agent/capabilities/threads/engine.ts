// The chat engine: send, reply, a turn's end, and reacting to ops from elsewhere. One engine, whatever
// host (CLI or node) runs it; each command lives in its own file, sharing the core. What other
// capabilities add (the working-copy lease, channel rounds) reaches it only through the kernel.
import type { CallerClaim, ReplyInput, SendInput, TurnEnd } from '../../../protocol/commands.js';
import { isNexusError } from '../../../protocol/errors.js';
import type { Op } from '../../../protocol/ops.js';
import type { Warning } from '../../../protocol/receipts.js';
import type { Capability } from '../../kernel/index.js';
import type { CommandName } from '../../../protocol/commands.js';
import type { Batch, KernelContext, Outcome } from './batch.js';
import { createCore, resolveCaller } from './core.js';
import { doneOf } from './done.js';
import { lapseOf } from './lapse.js';
import { reactOf } from './react.js';
import { replyOf } from './reply.js';
import { sendOf } from './send.js';
import { finishTurnOf } from './settle.js';
import { noteRefusal, unreportedDeadTurns } from './turns.js';

export { MAX_MESSAGE_BYTES } from './core.js';
export type { ReplyInput, SendInput, TurnEnd };

export function createEngine(ctx: KernelContext) {
  const { deps, kernel } = ctx;
  const core = createCore(ctx, () => reap());
  const finishTurn = finishTurnOf(core);

  /** Ends turns whose sidecar died without reporting, so nothing stays "running" for ever. */
  async function reap(): Promise<number> {
    const dead = await unreportedDeadTurns(deps);
    for (const d of dead) {
      await finishTurn({ session: d.session, turn: d.turn, exitCode: null, signal: 'lost', timedOut: false });
    }
    return dead.length;
  }

  /** A session's own command that is refused is noted on its turn (see settle.ts), then refused as ever. */
  function noting<I extends { caller: CallerClaim }, O>(fn: (input: I) => Promise<O>): (input: I) => Promise<O> {
    return async (input) => {
      try {
        return await fn(input);
      } catch (err) {
        if (isNexusError(err) && err.exitCode === 2 && input.caller.session !== null) {
          // Noting is a courtesy to the turn's settlement: a failure to note never replaces the refusal.
          await noteRefusal(deps.db, input.caller.session, { code: err.code, message: err.message }).catch(() => undefined);
        }
        throw err;
      }
    };
  }

  /**
   * The clock's work, every capability's step in its stage: dead turns settled first (their ends may move
   * everything else), then the capabilities' clocks (the lease's timers, rounds whose windows ended), then
   * commissions no other workspace's node took up in time.
   */
  async function tick(): Promise<{ settled: number; warnings: Warning[] }> {
    const out = await kernel.tick();
    return { settled: out.settled, warnings: out.warnings };
  }

  /** What ops taken in from elsewhere set in motion here: every capability's reaction, in order. */
  async function react(ops: readonly Op[]): Promise<{ started: number; rejected: number; repeated: number; warnings: Warning[] }> {
    const out = await kernel.ingested(ops);
    return { started: out.woke.length, rejected: out.rejected, repeated: out.repeated, warnings: out.warnings };
  }

  return {
    send: noting(sendOf(core)),
    reply: noting(replyOf(core)),
    done: noting(doneOf(core)),
    finishTurn,
    reap,
    tick,
    react,
    /** The chat engine's own part of `react`: commissions admitted, requesters and follow-ups woken. */
    admit: reactOf(core),
    /** The chat engine's own sweep: commissions to other workspaces nobody took up in time. */
    lapse: lapseOf(core),
    noting,
    workingCopy: core.workingCopy,
    recordStartFailures: core.recordStartFailures,
    resolveCaller: (db: Parameters<typeof resolveCaller>[1], claim: CallerClaim) => resolveCaller(deps, db, claim),
    commit: core.commit,
    append: core.append,
    settle: core.settle,
  };
}

export type Engine = ReturnType<typeof createEngine>;

/** What every workspace command and every hook of a capability runs against. */
export type ThreadsContext = KernelContext & { engine: Engine };

/** A capability record over the chat engine's batches. */
export type ThreadsCapability<K extends CommandName = never> = Capability<ThreadsContext, Batch, Outcome, K>;
