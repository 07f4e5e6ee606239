// nxc send: a commission to a persona here or in another workspace, or a message to a person.
import { sql } from 'drizzle-orm';
import { signStamp } from '../../../crypto/index.js';
import { NexusError } from '../../../protocol/errors.js';
import { Handle, newSessionId, newThreadId, qualifyHandle } from '../../../protocol/ids.js';
import { ROLE_PATTERN } from '../../../protocol/persona.js';
import type { Receipt} from '../../../protocol/receipts.js';
import { commissionDepth } from './depth.js';
import { checkRepeat } from './brakes.js';
import { remoteDeadline } from './lapse.js';
import { type Exec } from '../../kernel/index.js';
import { type SessionState, newSessionState, emptyOperation, spendOf, turnsUsed } from './fold.js';
import { tables } from '../../adapters/store/index.js';
import { resolveWorkspaceRef } from '../trust/index.js';
import type { SendInput} from '../../../protocol/commands.js';
import {
  emptyPlan,
  messageDraft,
  planTurn,
} from './turns.js';

import { authorOf, checkText, resolveCaller, type EngineCore } from './core.js';

export function sendOf(core: EngineCore) {
  const { deps, db, workspace, workingCopy } = core;
  const reap = () => core.reap();

  async function send(input: SendInput): Promise<Receipt> {
    const slash = input.to.startsWith('@') ? -1 : input.to.indexOf('/');
    if (slash >= 0) return sendRemote(input, input.to.slice(0, slash), input.to.slice(slash + 1));
    const text = checkText(input.text);
    const to = input.to.startsWith('@') ? input.to.slice(1) : input.to;
    const persona = input.to.startsWith('@') ? null : await deps.loadPersona(workspace.paths.root, to);
    const { wc, note } = await workingCopy();
    await reap();
    const commit = core.commit();
    const result = await db.transaction(async (tx) => {
      const caller = await resolveCaller(deps, tx, input.caller);
      if (caller.replyOnly) {
        throw new NexusError('REPLY_ONLY', `${caller.handle} is declared with tools: [] and may only run nxc reply`);
      }
      const thread = newThreadId();
      const operation = caller.operation?.id ?? thread;
      const parent = caller.session?.thread ?? null;
      const plan = emptyPlan();
      const author = authorOf(caller);
      let session: SessionState | null = null;
      if (persona !== null) {
        const depth = commissionDepth(caller.depth, persona.role);
        const handle = `${workspace.short}/${persona.role}`;
        if (caller.operation !== null && caller.session !== null) await checkRepeat(tx, caller.operation, caller.session, handle, text);
        plan.drafts.push({
          operation,
          thread,
          session: null,
          kind: 'thread.opened',
          body: { parent, subject: input.subject, opener: author, target: { kind: 'persona', role: persona.role, handle } },
        });
        const id = newSessionId();
        plan.drafts.push({ operation, thread, session: id, kind: 'session.created', body: { role: persona.role, handle, depth } });
        session = newSessionState({ id, workspace: workspace.id, thread, role: persona.role, handle, depth });
      } else {
        if (!Handle.safeParse(to).success || to.includes('/')) {
          throw new NexusError('UNKNOWN_RECIPIENT', `${JSON.stringify(input.to)} is neither a declared persona nor a person's handle`);
        }
        if (!input.to.startsWith('@') && !(await knownPerson(tx, to))) {
          throw new NexusError(
            'UNKNOWN_RECIPIENT',
            `no persona "${to}" is declared in .nxs-personas/, and no person by that handle has posted here; write @${to} to address a person`,
          );
        }
        plan.drafts.push({
          operation,
          thread,
          session: null,
          kind: 'thread.opened',
          body: { parent, subject: input.subject, opener: author, target: { kind: 'person', handle: to } },
        });
      }
      const message = messageDraft(operation, thread, author, text, 'commission', wc);
      plan.drafts.push(message);
      const state = caller.operation ?? emptyOperation(operation);
      if (session !== null) await planTurn(deps, tx, state, session, 'commissioned', plan, 'step_skipped');
      const opened = plan.drafts[0]!;
      const target = opened.kind === 'thread.opened' ? opened.body.target : { kind: 'person' as const, handle: to };
      // A policy (the working-copy lease) may decide whether the commissioned turn starts now or queues for the copy.
      const turn = plan.turns.find((t) => t.session.id === session?.id) ?? null;
      await core.append(tx, commit, { cause: 'send', ...plan, intents: [{ type: 'commission', state, thread, parent, by: author, target, turn }], state });
      return { thread, operation, message: (message.body as { message: string }).message };
    });
    const { warnings, woke, queued } = await core.settle(commit);
    return {
      ...(queued === null ? {} : { queued }),
      posted: true,
      thread: result.thread,
      operation: result.operation,
      message: result.message,
      // A queued commission started nothing of its own, whatever its send set moving (a takeover's hand-off).
      woke: queued === null ? (woke[0] ?? null) : null,
      warnings,
      refs_warning: input.subject === null ? 'no subject was named: the message posted, but nothing says what it refers to (--subject)' : null,
      working_copy: wc,
      worker_names_a_working_copy: wc !== null,
      working_copy_note: note,
    };
  }

  /**
   * `nxc send <workspace-id-or-alias>/<role>`: a commission to a persona of another workspace. The
   * thread is opened here with a stamp signed by this workspace's key; nothing starts here. The
   * target's node admits it (a session there) or refuses it (a `commission.rejected` op).
   */
  async function sendRemote(input: SendInput, where: string, role: string): Promise<Receipt> {
    if (!ROLE_PATTERN.test(role)) {
      throw new NexusError('UNKNOWN_RECIPIENT', `${JSON.stringify(input.to)}: "${role}" is not a role name`);
    }
    const target = resolveWorkspaceRef(workspace.paths, where, workspace.id);
    if (target === null) {
      throw new NexusError('UNKNOWN_RECIPIENT', `${JSON.stringify(where)} is neither a workspace id, the start of a trusted one, nor the alias of a trusted workspace (nxs sync trust add --name)`);
    }
    // Addressed to this very workspace: an ordinary commission.
    if (target === workspace.id) return send({ ...input, to: role });
    const text = checkText(input.text);
    const { wc, note } = await workingCopy();
    await reap();
    const handle = `${target.slice(0, 4)}/${role}`;
    const commit = core.commit();
    const result = await db.transaction(async (tx) => {
      const caller = await resolveCaller(deps, tx, input.caller);
      if (caller.replyOnly) {
        throw new NexusError('REPLY_ONLY', `${caller.handle} is declared with tools: [] and may only run nxc reply`);
      }
      // The receiver checks the stamped depth; refusing here first spares a round trip.
      commissionDepth(caller.depth, input.to);
      if (caller.operation !== null && caller.session !== null) await checkRepeat(tx, caller.operation, caller.session, handle, text);
      const thread = newThreadId();
      const operation = caller.operation?.id ?? thread;
      const parent = caller.session?.thread ?? null;
      // Beyond this workspace a person is `name@short`: the thread, its first message and the stamp say so.
      const author = { ...authorOf(caller), handle: qualifyHandle(caller.handle, workspace.short) };
      const stamp = await signStamp(deps.keys.key, {
        sub: author.handle,
        role: caller.session?.role ?? null,
        aud: target,
        target_role: role,
        thread,
        depth: caller.depth,
        // The receiver's operation budget counts on from what this operation has used.
        turns: caller.operation === null ? 0 : turnsUsed(caller.operation),
        // And its token and cost budgets count on from what this operation has spent.
        ...(caller.operation === null ? {} : { usage: spendOf(caller.operation) }),
      });
      const message = messageDraft(operation, thread, author, text, 'commission', wc);
      const remote = { kind: 'remote' as const, workspace: target, role, handle };
      const plan = emptyPlan();
      plan.drafts.push(
        { operation, thread, session: null, kind: 'thread.opened', body: { parent, subject: input.subject, opener: author, target: remote, stamp } },
        message,
      );
      // Nothing starts here; inside an operation holding the copy the lease notes what it now waits for.
      const state = caller.operation ?? emptyOperation(operation);
      await core.append(tx, commit, { cause: 'send', ...plan, intents: [{ type: 'commission', state, thread, parent, by: author, target: remote, turn: null }], state });
      return { thread, operation, message: (message.body as { message: string }).message };
    });
    await core.settle(commit);
    // A node sets a timer for the instant it stops waiting to be taken up (see lapse.ts).
    deps.scheduleTick?.(await remoteDeadline(deps, { workspace: target, role }, deps.now().toISOString()));
    return {
      posted: true,
      thread: result.thread,
      operation: result.operation,
      message: result.message,
      woke: null,
      warnings: [],
      refs_warning: input.subject === null ? 'no subject was named: the message posted, but nothing says what it refers to (--subject)' : null,
      working_copy: wc,
      worker_names_a_working_copy: wc !== null,
      working_copy_note: note,
      remote: { workspace: target, role },
    };
  }

  async function knownPerson(db2: Exec, handle: string): Promise<boolean> {
    const rows = await db2.execute(
      sql`select 1 from ${tables.ops} where ${tables.ops.kind} = 'message.posted' and ${tables.ops.body}->'author'->>'handle' = ${handle} limit 1`,
    );
    return (rows as unknown as { rows: unknown[] }).rows.length > 0;
  }

  return send;
}
