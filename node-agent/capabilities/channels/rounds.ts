// The round engine: `nxc send '#name'`, a message in a round's own thread (asking again), following step
// threads, reacting to another workspace's ops, and the tick. The chat engine never calls it: the channels
// capability's handler, append policy, reactions and tick step do (policy.ts); everything a round does is
// decided here and in the pure board.
import { NexusError } from '../../../protocol/errors.js';
import { newThreadId } from '../../../protocol/ids.js';
import type { Op } from '../../../protocol/ops.js';
import type { Receipt, Warning } from '../../../protocol/receipts.js';
import type { WorkingCopy } from '../../../protocol/working-copy.js';
import type { SendInput } from '../../../protocol/commands.js';
import { appendOps, type Exec, type OpDraft } from '../../kernel/index.js';
import { authorOf, checkText, messageDraft, resolveCaller, type ThreadsContext, type ThreadState } from '../threads/index.js';
import type { Author } from '../../../protocol/ops.js';
import { driverOf, type DriveOptions, type RoundEffects } from './drive.js';
import { checkRework, follow, type Followed } from './follow.js';
import { loadChannel } from './load.js';
import { dueRounds, loadRound } from './projection.js';
import { channelHandle, roundDraft } from './records.js';
import { roundStatus } from './status.js';
import { openRound, reask, reasked } from './verdicts.js';

/** What a message in a round's own thread does: its effect, the drafts to append after it, and the round to settle after. */
export type RoundReply = { effect: 'reopen' | 'none'; drafts: OpDraft[]; round: string | null };

export function createRounds(c: ThreadsContext, opts: DriveOptions = {}) {
  const { deps, writer } = c;
  const { db, workspace } = deps;
  const driver = driverOf(c, opts);

  /** The round as status shows it now, for a receipt. */
  async function statusOf(round: string) {
    const row = await loadRound(db, round);
    return row === null ? undefined : roundStatus(row.board);
  }

  /**
   * `nxc send '#name'`: opens the round's thread (owed by the channel), posts the ask and opens the
   * round, in one transaction; then settles it, which starts its first steps.
   */
  async function send(input: SendInput, name: string): Promise<Receipt> {
    const text = checkText(input.text);
    const channel = await loadChannel(workspace.paths.root, name);
    if (channel === null) {
      throw new NexusError('UNKNOWN_RECIPIENT', `no channel "#${name}" is declared in .nxs-channels/ (${name}.yaml)`);
    }
    const { wc, note } = await c.engine.workingCopy();
    await c.engine.reap();
    const opened = await db.transaction(async (tx) => {
      const caller = await resolveCaller(deps, tx, input.caller);
      if (caller.replyOnly) throw new NexusError('REPLY_ONLY', `${caller.handle} is declared with tools: [] and may only run nxc reply`);
      const round = newThreadId();
      const operation = caller.operation?.id ?? round;
      const author = authorOf(caller);
      const message = messageDraft(operation, round, author, text, 'commission', wc);
      const ask = (message.body as { message: string }).message;
      // The depth guard runs here, before anything is written.
      const op = openRound({ channel, round, requester: { ...author, depth: caller.depth }, ask });
      const target = { kind: 'channel' as const, channel: name, handle: channelHandle(workspace.short, name) };
      await appendOps(tx, writer, [
        { operation, thread: round, session: null, kind: 'thread.opened', body: { parent: caller.session?.thread ?? null, subject: input.subject, opener: author, target } },
        message,
        roundDraft(operation, round, op),
      ]);
      return { round, operation, message: ask };
    });
    const effects = await driver.settle([opened.round], wc);
    return {
      posted: true,
      thread: opened.round,
      operation: opened.operation,
      message: opened.message,
      woke: effects.woke[0] ?? null,
      warnings: effects.warnings,
      refs_warning: input.subject === null ? 'no subject was named: the message posted, but nothing says what it refers to (--subject)' : null,
      working_copy: wc,
      worker_names_a_working_copy: wc !== null,
      working_copy_note: note,
      round: await statusOf(opened.round),
    };
  }

  /**
   * A message in a round's own thread (null: `thread` is no round's thread). From the requester after
   * the result it asks again: the round is declared anew from the channel file as it reads now, and
   * the run restarts at its first step in new threads; a hand-back the result carried counts as
   * answered from above. Anything else posts and moves nothing. `message`: the id of the message posted.
   */
  async function replyInRound(tx: Exec, at: { thread: ThreadState; author: Author; message: string }): Promise<RoundReply | null> {
    if (at.thread.target.kind !== 'channel') return null;
    const row = await loadRound(tx, at.thread.id);
    const posted: RoundReply = { effect: 'none', drafts: [], round: null };
    if (row === null || row.board.workspace !== workspace.id) return posted;
    const verdict = reask(row.board, at.author);
    if (verdict.kind === 'posted_only') return posted;
    const channel = await loadChannel(workspace.paths.root, row.board.channel.name);
    if (channel === null) {
      throw new NexusError('UNKNOWN_RECIPIENT', `channel "#${row.board.channel.name}" is no longer declared in .nxs-channels/: the round cannot be asked again`);
    }
    const again = reasked(row.board, channel, at.message);
    return { effect: 'reopen', drafts: [roundDraft(row.operation, row.board.round, again)], round: row.board.round };
  }

  /** Board ops for ops just stored in this transaction (see follow.ts). */
  function followOps(tx: Exec, ops: readonly Op[], rework: string | null = null): Promise<Followed> {
    return follow(tx, writer, ops, { now: deps.now(), rework });
  }

  /** Ops taken in from another workspace: a member admitted, answered, refused or ended there. */
  async function react(ops: readonly Op[]): Promise<RoundEffects> {
    const foreign = ops.filter((op) => op.workspace !== workspace.id);
    if (foreign.length === 0) return { warnings: [], woke: [] };
    const followed = await db.transaction((tx) => followOps(tx, foreign));
    const effects = await driver.settle(followed.rounds);
    return { warnings: [...followed.warnings, ...effects.warnings], woke: effects.woke };
  }

  /** The clock's work: every open round of this workspace whose earliest window has ended. */
  async function tick(): Promise<RoundEffects> {
    return driver.settle(await dueRounds(db, workspace.id, deps.now()));
  }

  /** Settles rounds after the command that touched them committed; its receipt carries what happened. */
  async function settle(rounds: readonly string[], warnings: Warning[] = [], wc?: WorkingCopy | null): Promise<RoundEffects> {
    const effects = await driver.settle(rounds, wc);
    return { warnings: [...warnings, ...effects.warnings], woke: effects.woke };
  }

  return { send, replyInRound, checkRework, follow: followOps, react, tick, settle, statusOf };
}

export type Rounds = ReturnType<typeof createRounds>;
