// The chat engine: send, reply, a turn's end, and reacting to ops from elsewhere. One engine, whatever
// host (CLI or node) runs it; each command lives in its own file, sharing the core.
import type { ReplyInput, SendInput, TurnEnd } from '../../../protocol/commands.js';
import type { Warning } from '../../../protocol/receipts.js';
import type { EngineDeps } from '../context.js';
import { withdrawOf } from '../leases/withdraw.js';
import { createRounds, type StepGate } from '../channels/index.js';
import { createCore, resolveCaller } from './core.js';
import { lapseOf } from './lapse.js';
import { reactOf } from './react.js';
import { replyOf } from './reply.js';
import { sendOf } from './send.js';
import { finishTurnOf } from './settle.js';
import { noteRefusal, unreportedDeadTurns } from './turns.js';
import { isNexusError } from '../../../protocol/errors.js';
import type { CallerClaim } from '../../../protocol/commands.js';

export { MAX_MESSAGE_BYTES } from './core.js';
export type { ReplyInput, SendInput, TurnEnd };

/** `gate`: the working-copy lease's door into channel rounds (see channels/start.ts). */
export function createEngine(deps: EngineDeps, opts: { gate?: StepGate } = {}) {
  const core = createCore(deps, () => reap());
  // Channel rounds: each command below makes one call into it (channels/rounds.ts).
  const rounds = createRounds(core, { gate: opts.gate ?? null });
  const finishTurn = finishTurnOf(core, rounds);

  /** Ends turns whose sidecar died without reporting, so nothing stays "running" for ever. */
  async function reap(): Promise<number> {
    const dead = await unreportedDeadTurns(deps);
    for (const d of dead) {
      await finishTurn({ session: d.session, turn: d.turn, exitCode: null, signal: 'lost', timedOut: false });
    }
    return dead.length;
  }

  const lapse = lapseOf(core);

  /**
   * The clock's work: dead turns settled first (their ends may move rounds), then the lease's timers and sweep,
   * then rounds whose windows ended, then commissions no other workspace's node took up in time.
   */
  async function tick(): Promise<{ settled: number; warnings: Warning[] }> {
    const settled = await reap();
    const leaseWarnings = await core.lease.tick();
    await core.recordStartFailures(leaseWarnings);
    const roundWarnings = (await rounds.tick()).warnings;
    return { settled, warnings: [...leaseWarnings, ...roundWarnings, ...(await lapse()).warnings] };
  }

  const withdrawing = withdrawOf({ deps, writer: core.writer, hook: core.lease, reap, resolveCaller: (db, claim) => resolveCaller(deps, db, claim) });
  async function withdraw(input: Parameters<typeof withdrawing>[0]): ReturnType<typeof withdrawing> {
    const out = await withdrawing(input);
    await core.recordStartFailures(out.warnings);
    return out;
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

  return {
    send: noting(sendOf(core, rounds)),
    reply: noting(replyOf(core, rounds)),
    finishTurn,
    reap,
    tick,
    withdraw: noting(withdraw),
    workingCopy: core.workingCopy,
    react: reactOf(core, rounds),
    rounds,
  };
}

export type Engine = ReturnType<typeof createEngine>;
