// The chat engine: send, reply, a turn's end, and reacting to ops from elsewhere. One engine, whatever
// host (CLI or node) runs it; each command lives in its own file, sharing the core.
import type { ReplyInput, SendInput, TurnEnd } from '../../../protocol/commands.js';
import type { EngineDeps } from '../context.js';
import { createRounds, type StepGate } from '../channels/index.js';
import { createCore } from './core.js';
import { reactOf } from './react.js';
import { replyOf } from './reply.js';
import { sendOf } from './send.js';
import { finishTurnOf } from './settle.js';
import { unreportedDeadTurns } from './turns.js';

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

  /** The clock's work: dead turns first (their ends may move rounds), then rounds whose windows ended. */
  async function tick(): Promise<{ settled: number; warnings: Awaited<ReturnType<typeof rounds.tick>>['warnings'] }> {
    const settled = await reap();
    return { settled, warnings: (await rounds.tick()).warnings };
  }

  return { send: sendOf(core, rounds), reply: replyOf(core, rounds), finishTurn, reap, tick, workingCopy: core.workingCopy, react: reactOf(core, rounds), rounds };
}

export type Engine = ReturnType<typeof createEngine>;
