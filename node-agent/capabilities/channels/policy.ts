// Channel rounds as the kernel's hooks. A policy in every batch's transaction: it refuses a `--needs-rework` no
// round declares, says what a post in a round's own thread means (asking again), completes a round withdrawn with
// its thread, and turns participants' posts in step threads into board ops. After the commit, a reaction settles
// the rounds touched; after ops from elsewhere, it follows what they did to members; the tick settles due rounds.
import type { SendInput } from '../../../protocol/commands.js';
import type { Warning } from '../../../protocol/receipts.js';
import type { WorkingCopy } from '../../../protocol/working-copy.js';
import type { AfterCommit, AppendPolicy, Commit, LayeredHandler, TickStep, Tx } from '../../kernel/index.js';
import { effectiveOps, type Batch, type Cause, type Outcome, type ThreadsContext } from '../threads/index.js';
import { checkRework, follow } from './follow.js';
import { channelAddress } from './load.js';
import { loadRound } from './projection.js';
import { roundDraft } from './records.js';
import { createRounds, type Rounds } from './rounds.js';
import { roundCompleted } from './verdicts.js';

const rounds = new WeakMap<ThreadsContext, Rounds>();

/** The round engine of one open workspace, made once. */
export function roundsOf(c: ThreadsContext): Rounds {
  let r = rounds.get(c);
  if (r === undefined) rounds.set(c, (r = createRounds(c)));
  return r;
}

/** A participant's post (an answer, or the one written in a session's name at its turn's end) moves the round whose step it answers. */
const FOLLOWS: ReadonlySet<Cause> = new Set<Cause>(['reply', 'turn_end']);

/** What one commit did to rounds, settled once it has committed. */
type Touched = { followed: string[]; warnings: Warning[]; reasked: string | null; wc?: WorkingCopy | null };
const touched = new WeakMap<Commit<Outcome>, Touched>();

function touchedBy(commit: Commit<Outcome>): Touched {
  let t = touched.get(commit);
  if (t === undefined) touched.set(commit, (t = { followed: [], warnings: [], reasked: null }));
  return t;
}

/** A round of this workspace discharged by a withdrawal is completed as it stood, right after its thread's message, so no later step starts. */
async function completeWithdrawn(c: ThreadsContext, tx: Tx, batch: Batch): Promise<void> {
  for (let i = 0; i < batch.drafts.length; i++) {
    const d = batch.drafts[i]!;
    if (d.kind !== 'message.posted' || d.thread === null || batch.state?.threads[d.thread]?.target.kind !== 'channel') continue;
    const row = await loadRound(tx, d.thread);
    if (row === null || row.board.workspace !== c.deps.workspace.id || row.board.completed !== null) continue;
    const completed = roundCompleted(row.board, { outcome: 'answered', reason: 'withdrawn' }, { message: d.body.message, boundary: '' });
    batch.drafts.splice(++i, 0, roundDraft(d.operation, d.thread, completed));
  }
}

export const roundPolicy: AppendPolicy<ThreadsContext, Batch, Outcome> = {
  name: 'channel rounds',
  async before(c, tx, batch, commit) {
    if (batch.cause === 'withdraw') return completeWithdrawn(c, tx, batch);
    const reply = batch.reply;
    if (reply === undefined || batch.state === undefined) return;
    // --needs-rework is taken only where a round's step declares it.
    if (reply.rework !== null) await checkRework(tx, batch.state, reply.thread, reply.answering);
    const message = batch.drafts.find((d) => d.kind === 'message.posted' && d.thread === reply.thread.id);
    if (message?.kind !== 'message.posted') return;
    const inRound = await roundsOf(c).replyInRound(tx, { thread: reply.thread, author: reply.author, message: message.body.message });
    if (inRound === null) return;
    message.body.effect = inRound.effect;
    batch.drafts.splice(batch.drafts.indexOf(message) + 1, 0, ...inRound.drafts);
    if (inRound.round === null) return;
    // Asking a round again owes its thread anew; the requester writing above an escalation inside the round
    // answers that hand-back from above, so the lease stops holding the copy for it.
    const t = reply.thread;
    batch.intents.splice(0, batch.intents.length, { type: 'reopen', state: batch.state, thread: t.id, parent: t.parent, by: reply.author, target: t.target, turn: null });
    touchedBy(commit).reasked = inRound.round;
  },
  async after(c, tx, batch, stored, commit) {
    if (!FOLLOWS.has(batch.cause)) return;
    const followed = await follow(tx, c.writer, stored, { now: c.deps.now(), rework: batch.reply?.rework ?? null });
    const t = touchedBy(commit);
    for (const r of followed.rounds) if (!t.followed.includes(r)) t.followed.push(r);
    t.warnings.push(...followed.warnings);
    if (batch.workingCopy !== undefined) t.wc = batch.workingCopy;
  },
};

export const roundReactions: AfterCommit<ThreadsContext, Outcome> = {
  name: 'channel rounds',
  /** Settles the rounds the commit touched; the command's answer carries what happened, and the first round as it stands. */
  async committed(c, commit) {
    const t = touched.get(commit);
    if (t === undefined) return;
    const r = roundsOf(c);
    const all = [...t.followed, ...(t.reasked === null ? [] : [t.reasked])];
    const moved = await r.settle(all, t.warnings, t.wc);
    commit.outcome.warnings.push(...moved.warnings);
    commit.outcome.woke.push(...moved.woke);
    if (all[0] !== undefined) commit.outcome.round = await r.statusOf(all[0]);
  },
  /** Members of rounds asked here that another workspace admitted, answered, refused or ended. */
  async ingested(c, ops, out) {
    // An op the fold found without authority sets nothing in motion (see the chat engine's reaction).
    const moved = await roundsOf(c).react(await effectiveOps(c.deps.db, ops));
    out.warnings.push(...moved.warnings);
    out.woke.push(...moved.woke);
  },
};

/** Every open round of this workspace whose earliest window has ended. */
export const roundTick: TickStep<ThreadsContext, Outcome> = {
  name: 'channel rounds',
  stage: 'clock',
  run: async (c, out) => void out.warnings.push(...(await roundsOf(c).tick()).warnings),
};

/** `nxc send '#name'`: a round; any other address is the chat engine's. */
export const sendToChannel: LayeredHandler<ThreadsContext, 'send'> = (c, input, next) => {
  const name = channelAddress(input.to);
  if (name === null) return next();
  return c.engine.noting((i: SendInput) => roundsOf(c).send(i, name))(input);
};
