// nxc done <operation|thread>: the person who opened an operation says they have read its result. One op in
// the operation's first thread, synced like any other; the fold takes it only from the workspace that opened
// the operation, and from then on the root awaits nobody, here and on every workspace that holds it, until a
// newer answer comes. Nothing is posted and nobody is woken: reading is not a reply.
import type { DoneInput, DoneResult } from '../../../protocol/commands.js';
import { NexusError } from '../../../protocol/errors.js';
import { qualifyHandle } from '../../../protocol/ids.js';
import { isDone } from './fold.js';
import { loadOperation, operationOfThread } from './operations.js';
import { resolveCaller, type EngineCore } from './core.js';

export function doneOf(core: EngineCore) {
  const { deps, db, workspace } = core;

  return async function done(input: DoneInput): Promise<DoneResult> {
    const commit = core.commit();
    const result = await db.transaction(async (tx) => {
      const caller = await resolveCaller(deps, tx, input.caller);
      const operation = await operationOfThread(tx, input.thread);
      if (operation === null) throw new NexusError('UNKNOWN_THREAD', `no thread ${input.thread} in this workspace`);
      const state = await loadOperation(tx, operation);
      const root = state.threads[operation] ?? Object.values(state.threads).find((t) => t.parent === null);
      if (root === undefined) throw new NexusError('UNKNOWN_THREAD', `operation ${operation} has no first thread here`);
      const base = { operation, thread: root.id, subject: root.subject, answered_by: root.answered_by };
      // The opener's own name, as this workspace writes it: bare here, `name@short` in a thread to another workspace.
      const mine = caller.session === null && (root.opener.handle === caller.handle || root.opener.handle === qualifyHandle(caller.handle, workspace.short));
      if (root.workspace !== workspace.id || root.opener.session !== null || !mine) {
        const who = root.opener.session !== null ? `a session (${root.opener.handle})` : root.workspace !== workspace.id ? `${root.opener.handle} of workspace ${root.workspace}` : root.opener.handle;
        throw new NexusError('DONE_NOT_OPENER', `operation ${operation} was opened by ${who}: only that person, in that workspace, marks its result read`, {
          opener: root.opener.handle,
          opened_in: root.workspace,
        });
      }
      if (root.state !== 'answered') {
        throw new NexusError('DONE_NOT_ANSWERED', `${root.id} has no answer yet: nothing to mark read (nxc withdraw --thread ${root.id} takes the commission back)`);
      }
      if (isDone(root)) return { ...base, op: null };
      const drafts = [{ operation, thread: root.id, session: null, kind: 'thread.done' as const, body: { by: root.opener.handle } }];
      const [op] = await core.append(tx, commit, { cause: 'done', drafts, turns: [], intents: [], warnings: [], state });
      return { ...base, op: op?.id ?? null };
    });
    await core.settle(commit);
    return result;
  };
}
