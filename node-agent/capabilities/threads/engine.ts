// The chat engine: send, reply, a turn's end, and reacting to ops from elsewhere. One engine, whatever
// host (CLI or node) runs it; each command lives in its own file, sharing the core.
import type { ReplyInput, SendInput, TurnEnd } from '../../../protocol/commands.js';
import type { EngineDeps } from '../context.js';
import { withdrawOf } from '../leases/withdraw.js';
import { createCore, resolveCaller } from './core.js';
import { reactOf } from './react.js';
import { replyOf } from './reply.js';
import { sendOf } from './send.js';
import { finishTurnOf } from './settle.js';
import { unreportedDeadTurns } from './turns.js';

export { MAX_MESSAGE_BYTES } from './core.js';
export type { ReplyInput, SendInput, TurnEnd };

export function createEngine(deps: EngineDeps) {
  const core = createCore(deps, () => reap());
  const finishTurn = finishTurnOf(core);

  /** Ends turns whose sidecar died without reporting, so nothing stays "running" for ever. */
  async function reap(): Promise<number> {
    const dead = await unreportedDeadTurns(deps);
    for (const d of dead) {
      await finishTurn({ session: d.session, turn: d.turn, exitCode: null, signal: 'lost', timedOut: false });
    }
    return dead.length;
  }

  /** The clock's work: dead turns settled, then the working-copy lease's timers and sweep. */
  async function tick(): Promise<{ settled: number; warnings: Awaited<ReturnType<typeof core.lease.tick>> }> {
    const settled = await reap();
    const warnings = await core.lease.tick();
    await core.recordStartFailures(warnings);
    return { settled, warnings };
  }

  const withdrawing = withdrawOf({ deps, writer: core.writer, hook: core.lease, reap, resolveCaller: (db, claim) => resolveCaller(deps, db, claim) });
  async function withdraw(input: Parameters<typeof withdrawing>[0]): ReturnType<typeof withdrawing> {
    const out = await withdrawing(input);
    await core.recordStartFailures(out.warnings);
    return out;
  }

  return { send: sendOf(core), reply: replyOf(core), finishTurn, reap, tick, withdraw, workingCopy: core.workingCopy, react: reactOf(core) };
}

export type Engine = ReturnType<typeof createEngine>;
