// Building a board by hand, one op at a time, for the decision tables.
import {
  applyBoardOp,
  openRound,
  stepAnswered,
  stepEnded,
  stepStarted,
  type Board,
  type BoardOp,
  type Channel,
  type ChannelOpPayload,
  type StepOutcome,
  type StepRef,
} from '../../node-agent/capabilities/channels/index.js';
import { ROUND, T0, WS } from './sim.js';

export class RoundBuilder {
  readonly ops: BoardOp[] = [];
  private state: Board | null = null;
  private n = 0;

  constructor(
    readonly channel: Channel,
    requester: { handle: string; session: string | null; depth: number } = { handle: 'aaaa/lead', session: 's-REQUESTER', depth: 2 },
  ) {
    this.emit(openRound({ channel, round: ROUND, requester, ask: 'm-ASK' }));
  }

  get b(): Board {
    return this.state!;
  }

  emit(payload: ChannelOpPayload, workspace = WS): this {
    this.n += 1;
    const op = { ...payload, id: `01J${String(this.n).padStart(23, '0')}`, workspace, lamport: this.n } as BoardOp;
    this.ops.push(op);
    this.state = applyBoardOp(this.state, op);
    return this;
  }

  ref(step: number): StepRef {
    const s = this.b.channel.steps[step];
    const owner = this.b.channel.owner ?? '';
    return s === undefined
      ? { round: ROUND, pass: this.b.pass, step, name: owner, kind: 'owner', address: owner, workspace: null, role: owner, held: false }
      : { round: ROUND, pass: this.b.pass, step, name: s.name, kind: 'member', address: s.address, workspace: s.workspace, role: s.role, held: false };
  }

  thread(step: number, pass = this.b.pass): string {
    return `t-P${pass}S${step}`;
  }

  /** Starts `step` in the current pass at `at`, with a window in minutes (or none). */
  start(step: number, opts: { windowMin?: number | null; remote?: boolean; at?: Date } = {}): this {
    const remote = opts.remote ?? false;
    const windowMs = opts.windowMin === undefined || opts.windowMin === null ? null : opts.windowMin * 60_000;
    const role = this.ref(step).role;
    return this.emit(
      stepStarted(this.b, this.ref(step), {
        thread: this.thread(step),
        session: remote ? null : `s-P${this.b.pass}S${step}`,
        handle: `${remote ? 'zz77' : 'aaaa'}/${role}`,
        now: opts.at ?? T0,
        windowMs,
        onHold: remote,
      }),
    );
  }

  answer(step: number, outcome: StepOutcome = 'answer', pass = this.b.pass): this {
    const r = this.b.steps[`${pass}:${step}`]!;
    const op = stepAnswered(this.b, r.thread!, { message: `m-P${pass}S${step}`, author: r.handle!, outcome });
    return op === null ? this : this.emit(op);
  }

  end(step: number, pass = this.b.pass): this {
    const r = this.b.steps[`${pass}:${step}`]!;
    const op = r.session === null ? null : stepEnded(this.b, r.session);
    return op === null ? this : this.emit(op);
  }

  /** Answers and ends: the ordinary life of a step. */
  done(step: number, outcome: StepOutcome = 'answer'): this {
    return this.answer(step, outcome).end(step);
  }

  lapse(step: number): this {
    const r = this.b.steps[`${this.b.pass}:${step}`]!;
    return this.emit({ kind: 'step.lapsed', body: { round: ROUND, pass: r.pass, step, deadline: r.deadline ?? T0.toISOString() } });
  }

  held(step: number, reason = 'lease_queued'): this {
    return this.emit({ kind: 'step.held', body: { round: ROUND, pass: this.b.pass, step, reason, message: 'queued behind the working-copy lease' } });
  }

  skip(step: number, reason = 'start_failed'): this {
    return this.emit({ kind: 'step.skipped', body: { round: ROUND, pass: this.b.pass, step, reason, message: 'the runtime could not be started' } });
  }
}
