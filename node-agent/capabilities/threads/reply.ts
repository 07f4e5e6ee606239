// nxc reply: an answer, a hand-back (--escalate), a follow-up, or a message that moves nothing.
import { qualifyHandle } from '../../../protocol/ids.js';
import { NexusError } from '../../../protocol/errors.js';
import type { Receipt} from '../../../protocol/receipts.js';
import { loadOperation, operationOfThread } from './operations.js';
import { openSubRounds, type ThreadState} from './fold.js';
import type { ReplyInput} from '../../../protocol/commands.js';
import {
  emptyPlan,
  messageDraft,
  planRequesterWake,
  planTurn,
} from './turns.js';
import type { Intent } from './batch.js';
import { authorOf, checkText, resolveCaller, type EngineCore } from './core.js';

/** Thread targets the chat engine answers for itself; a post in any other thread (a channel's) is its owner's to judge. */
const OWN_TARGETS = new Set(['persona', 'person', 'remote']);

export function replyOf(core: EngineCore) {
  const { deps, db, workingCopy } = core;
  const reap = () => core.reap();

  async function reply(input: ReplyInput): Promise<Receipt> {
    const text = checkText(input.text);
    if (input.needs_rework === true && input.escalate) {
      throw new NexusError('USAGE', '--needs-rework and --escalate cannot go together: send the work back, or hand the task up');
    }
    const { wc, note } = await workingCopy();
    await reap();
    const commit = core.commit();
    const result = await db.transaction(async (tx) => {
      const caller = await resolveCaller(deps, tx, input.caller);
      if (caller.replyOnly && caller.session !== null && input.thread !== caller.session.thread) {
        throw new NexusError('REPLY_ONLY', `${caller.handle} is declared with tools: [] and may reply only in its own thread (${caller.session.thread})`);
      }
      const opId = await operationOfThread(tx, input.thread);
      if (opId === null) throw new NexusError('UNKNOWN_THREAD', `no thread ${input.thread} in this workspace`);
      const state = await loadOperation(tx, opId);
      const thread = state.threads[input.thread]!;
      // Every node would hold such a message inert (fold.ts, authority): refused here instead of written.
      if (thread.workspace !== core.workspace.id && thread.owner !== core.workspace.id) {
        throw new NexusError('NOT_A_PARTY', `${input.thread} was opened by ${thread.workspace} and is addressed to ${thread.owner}: only they may post in it`, {
          opened_by: thread.workspace,
          addressed_to: thread.owner,
        });
      }
      const plan = emptyPlan();
      // A thread between two workspaces is read on both sides: a person there is named with this workspace's short.
      const author = thread.target.kind === 'remote' ? { ...authorOf(caller), handle: qualifyHandle(caller.handle, core.workspace.short) } : authorOf(caller);
      const intents: Intent[] = [];
      const answering =
        (caller.session !== null && caller.session.id === thread.session) ||
        (caller.session === null && caller.handle === thread.target.handle);
      if (!OWN_TARGETS.has(thread.target.kind)) {
        // Posted, moving nothing, unless the capability that owns the thread's target (a channel's round) says
        // otherwise in its append policy: asking a round again reopens it.
        plan.drafts.push(messageDraft(opId, thread.id, author, text, 'none', wc));
        intents.push({ type: 'reply', operation: opId, thread: thread.id, by: author, outcome: 'none', wake: null });
      } else if (answering) {
        if (caller.session !== null && !input.escalate) {
          const open = openSubRounds(state, caller.session.id);
          if (open.length > 0) {
            throw new NexusError(
              'SUB_ROUND_OPEN',
              `you commissioned ${open.map((t) => t.id).join(', ')} and it is still open: end your turn without replying to wait for it, or --escalate`,
              { open: open.map((t) => t.id) },
            );
          }
        }
        const effect = dischargeEffect(thread, caller.handle, input.escalate);
        plan.drafts.push(messageDraft(opId, thread.id, author, text, effect, wc));
        if (effect === 'answer' || effect === 'escalate') await planRequesterWake(deps, tx, state, thread, plan);
        intents.push({ type: 'reply', operation: opId, thread: thread.id, by: author, outcome: effect, wake: plan.turns[0] ?? null });
      } else if (thread.escalated && caller.handle !== thread.expected_handle) {
        // On an escalated thread only the handle that escalated can answer the hand-back.
        plan.drafts.push(messageDraft(opId, thread.id, author, text, 'none', wc));
        intents.push({ type: 'reply', operation: opId, thread: thread.id, by: author, outcome: 'none', wake: null });
      } else {
        const effect = thread.state === 'answered' ? 'reopen' : 'none';
        plan.drafts.push(messageDraft(opId, thread.id, author, text, effect, wc));
        // A follow-up to whoever owes the thread. A session waiting on its own round is not
        // disturbed: it reads the follow-up when that round's answer starts it again.
        // A thread addressed to another workspace is that workspace's to start: its node reads the follow-up when
        // it arrives and starts its own session, as it admitted the commission. Nothing here was skipped.
        const target = thread.session === null || elsewhere(thread) ? undefined : state.sessions[thread.session];
        const waiting = target !== undefined && !target.in_turn && openSubRounds(state, target.id).length > 0;
        if (target && !waiting) await planTurn(deps, tx, state, target, 'follow_up', plan, 'step_skipped');
        // A thread owed again, or a turn to start, goes down as a commissioning trigger: the lease may hold it.
        const turn = plan.turns[0] ?? null;
        if (effect === 'reopen' || turn !== null) {
          intents.push({ type: 'reopen', state, thread: thread.id, parent: thread.parent, by: author, target: thread.target, turn });
        } else intents.push({ type: 'reply', operation: opId, thread: thread.id, by: author, outcome: 'none', wake: null });
      }
      const message = plan.drafts.find((d) => d.kind === 'message.posted')!;
      const id = (message.body as { message: string }).message;
      const rework = input.needs_rework === true ? id : null;
      // Policies may refuse the reply (a `--needs-rework` no round declares) or say what it means in a thread they own.
      await core.append(tx, commit, { cause: 'reply', ...plan, intents, state, reply: { thread, author, text, answering, rework }, workingCopy: wc });
      return { operation: opId, message: id, remote: elsewhere(thread) && !answering && thread.target.kind === 'remote' ? { workspace: thread.target.workspace, role: thread.target.role } : null };
    });
    const { warnings, woke, queued, round } = await core.settle(commit);
    return {
      ...(queued === null ? {} : { queued }),
      posted: true,
      thread: input.thread,
      operation: result.operation,
      message: result.message,
      woke: woke[0] ?? null,
      warnings,
      ...(round === undefined ? {} : { round }),
      refs_warning: null,
      working_copy: wc,
      worker_names_a_working_copy: wc !== null,
      working_copy_note: note,
      ...(result.remote === null ? {} : { remote: result.remote }),
    };
  }

  /** A thread owed by a persona of another workspace: only that workspace's node starts its session. */
  function elsewhere(thread: ThreadState): boolean {
    return thread.target.kind === 'remote' && thread.owner !== core.workspace.id;
  }

  return reply;
}

/** How an answer from the thread's owner lands: once per owed turn, and once more only to answer a hand-back. */
function dischargeEffect(thread: ThreadState, handle: string, escalate: boolean) {
  if (thread.state === 'open') return escalate ? ('escalate' as const) : ('answer' as const);
  if (thread.escalated && handle === thread.expected_handle && !escalate) return 'answer' as const;
  return 'none' as const;
}

