// The chat engine: send, reply, and a turn's end. One engine, whatever host (CLI or node) runs it.
import { sql } from 'drizzle-orm';
import { signStamp } from '../../../crypto/index.js';
import { NexusError } from '../../../protocol/errors.js';
import { Handle, newSessionId, newThreadId, WorkspaceId } from '../../../protocol/ids.js';
import type { Author, Op, OpOf } from '../../../protocol/ops.js';
import { ROLE_PATTERN } from '../../../protocol/persona.js';
import type { Receipt, Warning } from '../../../protocol/receipts.js';
import { callerDepth, commissionDepth } from './depth.js';
import { describeWorkingCopy } from '../../adapters/git/index.js';
import { appendOps, type Exec } from '../../kernel/index.js';
import { loadOperation, operationOfSession, operationOfThread } from './operations.js';
import { openSubRounds, type OperationState, type SessionState, type ThreadState, newSessionState } from './fold.js';
import { readSpec, sessionDir } from '../../adapters/sessions/index.js';
import { tables } from '../../adapters/store/index.js';
import { certifiedKeys } from '../keys/index.js';
import { admitStamp, resolveAlias } from '../trust/index.js';
import type { CallerClaim, ReplyInput, SendInput, TurnEnd } from '../../../protocol/commands.js';
import type { EngineDeps } from '../context.js';
import {
  emptyPlan,
  markProcessEnded,
  messageDraft,
  planRequesterWake,
  planTurn,
  startTurns,
  type Plan,
  unreportedDeadTurns,
} from './turns.js';

/** Messages above this size are refused: a message is a note, not a file transfer. */
export const MAX_MESSAGE_BYTES = 256 * 1024;

type Caller = {
  handle: string;
  session: SessionState | null;
  operation: OperationState | null;
  depth: number;
  replyOnly: boolean;
};

function checkText(text: string): string {
  if (text.trim().length === 0) throw new NexusError('EMPTY_MESSAGE', 'the message is empty');
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_MESSAGE_BYTES) {
    throw new NexusError('MESSAGE_TOO_LARGE', `the message is ${bytes} bytes; the limit is ${MAX_MESSAGE_BYTES}`);
  }
  return text;
}

async function resolveCaller(deps: EngineDeps, db: Exec, claim: CallerClaim): Promise<Caller> {
  if (claim.session === null) {
    return { handle: claim.actor, session: null, operation: null, depth: callerDepth(null, claim.hop), replyOnly: false };
  }
  const opId = await operationOfSession(db, claim.session);
  if (opId === null) {
    throw new NexusError('UNKNOWN_SESSION', `NXC_SESSION=${claim.session} is not a session of this workspace`);
  }
  const operation = await loadOperation(db, opId);
  const session = operation.sessions[claim.session];
  if (!session) throw new NexusError('UNKNOWN_SESSION', `session ${claim.session} is not in its operation's fold`);
  const spec = readSpec(sessionDir(deps.workspace.paths.sessions, session.id));
  return {
    handle: session.handle,
    session,
    operation,
    depth: callerDepth(session.depth, claim.hop),
    replyOnly: spec?.reply_only ?? false,
  };
}

function authorOf(caller: Caller): Author {
  return { handle: caller.handle, session: caller.session?.id ?? null };
}

export type { ReplyInput, SendInput, TurnEnd };

export function createEngine(deps: EngineDeps) {
  const { db, workspace } = deps;
  // The signer is read at each append: a key rotation switches it under a running engine.
  const writer = {
    workspace: workspace.id,
    origin: deps.origin,
    now: deps.now,
    projections: deps.projections,
    get signer() {
      return deps.keys.signer;
    },
  };

  async function workingCopy() {
    const wc = await deps.readWorkingCopy(workspace.paths.root);
    return { wc, note: describeWorkingCopy(wc) };
  }

  /** Ends turns whose sidecar died without reporting, so nothing stays "running" for ever. */
  async function reap(): Promise<number> {
    const dead = await unreportedDeadTurns(deps);
    for (const d of dead) {
      await finishTurn({ session: d.session, turn: d.turn, exitCode: null, signal: 'lost', timedOut: false });
    }
    return dead.length;
  }

  async function send(input: SendInput): Promise<Receipt> {
    const slash = input.to.startsWith('@') ? -1 : input.to.indexOf('/');
    if (slash >= 0) return sendRemote(input, input.to.slice(0, slash), input.to.slice(slash + 1));
    const text = checkText(input.text);
    const to = input.to.startsWith('@') ? input.to.slice(1) : input.to;
    const persona = input.to.startsWith('@') ? null : await deps.loadPersona(workspace.paths.root, to);
    const { wc, note } = await workingCopy();
    await reap();
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
        plan.drafts.push({
          operation,
          thread,
          session: null,
          kind: 'thread.opened',
          body: { parent, subject: input.subject, opener: author, target: { kind: 'persona', role: persona.role, handle } },
        });
        const id = newSessionId();
        plan.drafts.push({ operation, thread, session: id, kind: 'session.created', body: { role: persona.role, handle, depth } });
        session = newSessionState({ id, thread, role: persona.role, handle, depth });
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
      if (session !== null) {
        const state = caller.operation ?? { id: operation, threads: {}, sessions: {}, head: null };
        await planTurn(deps, tx, state, session, 'commissioned', plan, 'step_skipped');
      }
      await appendOps(tx, writer, plan.drafts);
      return { plan, thread, operation, message: (message.body as { message: string }).message };
    });
    const warnings = [...result.plan.warnings];
    const woke = await startTurns(deps, result.plan.turns, warnings);
    await recordStartFailures(warnings);
    return {
      posted: true,
      thread: result.thread,
      operation: result.operation,
      message: result.message,
      woke: woke[0] ?? null,
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
    const target = WorkspaceId.safeParse(where).success ? where : resolveAlias(workspace.paths, where);
    if (target === null) {
      throw new NexusError('UNKNOWN_RECIPIENT', `${JSON.stringify(where)} is neither a workspace id nor the alias of a trusted workspace (nxs sync trust add --name)`);
    }
    // Addressed to this very workspace: an ordinary commission.
    if (target === workspace.id) return send({ ...input, to: role });
    const text = checkText(input.text);
    const { wc, note } = await workingCopy();
    await reap();
    const handle = `${target.slice(0, 4)}/${role}`;
    const result = await db.transaction(async (tx) => {
      const caller = await resolveCaller(deps, tx, input.caller);
      if (caller.replyOnly) {
        throw new NexusError('REPLY_ONLY', `${caller.handle} is declared with tools: [] and may only run nxc reply`);
      }
      // The receiver checks the stamped depth; refusing here first spares a round trip.
      commissionDepth(caller.depth, input.to);
      const thread = newThreadId();
      const operation = caller.operation?.id ?? thread;
      const parent = caller.session?.thread ?? null;
      const author = authorOf(caller);
      const stamp = await signStamp(deps.keys.key, {
        sub: caller.handle,
        role: caller.session?.role ?? null,
        aud: target,
        target_role: role,
        thread,
        depth: caller.depth,
      });
      const message = messageDraft(operation, thread, author, text, 'commission', wc);
      await appendOps(tx, writer, [
        {
          operation,
          thread,
          session: null,
          kind: 'thread.opened',
          body: { parent, subject: input.subject, opener: author, target: { kind: 'remote', workspace: target, role, handle }, stamp },
        },
        message,
      ]);
      return { thread, operation, message: (message.body as { message: string }).message };
    });
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

  /**
   * What ops taken in from another workspace set in motion here (called by the node after they are
   * stored): a commission addressed to this workspace is admitted (a session starts at the stamped
   * depth + 1) or refused (`commission.rejected`); an answer, hand-back or refusal of a thread a
   * local session opened wakes that session; a follow-up to a local session's thread wakes it.
   */
  async function react(ops: readonly Op[]): Promise<{ started: number; rejected: number; warnings: Warning[] }> {
    const warnings: Warning[] = [];
    let started = 0;
    let rejected = 0;
    for (const op of ops) {
      if (op.workspace === workspace.id || op.thread === null) continue;
      let plan: Plan | null = null;
      if (op.kind === 'thread.opened' && op.body.target.kind === 'remote' && op.body.target.workspace === workspace.id) {
        const out = await admit(op as OpOf<'thread.opened'>);
        if (out === 'rejected') rejected++;
        else plan = out;
      } else if (op.kind === 'message.posted' || op.kind === 'commission.rejected') {
        plan = await db.transaction(async (tx) => {
          const state = await loadOperation(tx, op.operation);
          const thread = state.threads[op.thread!];
          if (!thread) return null;
          const p = emptyPlan();
          const local = (id: string | null) => id !== null && state.sessions[id]?.handle.startsWith(`${workspace.short}/`) === true;
          const effect = op.kind === 'message.posted' ? op.body.effect : 'escalate';
          if ((effect === 'answer' || effect === 'escalate') && local(thread.opener.session)) {
            await planRequesterWake(deps, tx, state, thread, p);
          } else if (effect === 'reopen' && local(thread.session)) {
            const s = state.sessions[thread.session!]!;
            if (s.in_turn || openSubRounds(state, s.id).length === 0) await planTurn(deps, tx, state, s, 'follow_up', p, 'step_skipped');
          }
          await appendOps(tx, writer, p.drafts);
          return p;
        });
      }
      if (plan === null) continue;
      const w = [...plan.warnings];
      started += (await startTurns(deps, plan.turns, w)).length;
      await recordStartFailures(w);
      warnings.push(...w);
    }
    return { started, rejected, warnings };
  }

  /** A remote commission addressed here: its persona must be addressable and its stamp admitted. */
  async function admit(op: OpOf<'thread.opened'>): Promise<Plan | 'rejected' | null> {
    const target = op.body.target;
    if (target.kind !== 'remote') return null;
    const before = (await loadOperation(db, op.operation)).threads[op.thread!];
    if (!before || before.session !== null || before.rejected) return null;
    let refusal: { code: string; message: string } | null = null;
    let depth = 0;
    // The asker's key chain as this node verified it: a stamp signed after `nxs key rotate` verifies
    // with a key certified from the trusted genesis key. A chain that cannot be read offers none.
    const chain = await certifiedKeys(db, op.workspace).catch(() => []);
    const verdict = await admitStamp(workspace.paths, op.body.stamp, {
      now: deps.now(),
      certified: (iss) => (iss === op.workspace ? chain : []),
    });
    if (!verdict.ok) refusal = { code: verdict.code, message: verdict.message };
    else {
      const c = verdict.claims;
      if (c.iss !== op.workspace || c.thread !== op.thread || c.target_role !== target.role || c.sub !== op.body.opener.handle) {
        refusal = { code: 'STAMP_FORGED', message: 'the stamp does not vouch for this commission (issuer, thread, role or asker differ)' };
      }
      depth = verdict.sessionDepth;
    }
    if (refusal === null) {
      const persona = await deps.loadPersona(workspace.paths.root, target.role).catch(() => null);
      if (persona === null || !persona.addressable.external) {
        refusal = {
          code: 'NOT_ADDRESSABLE',
          message: persona === null ? `no persona "${target.role}" is declared in ${workspace.id}` : `${target.role} is not declared addressable: {external: true}`,
        };
      }
    }
    return db.transaction(async (tx) => {
      const state = await loadOperation(tx, op.operation);
      const thread = state.threads[op.thread!];
      if (!thread || thread.session !== null || thread.rejected) return null;
      if (refusal !== null) {
        await appendOps(tx, writer, [{ operation: op.operation, thread: op.thread, session: null, kind: 'commission.rejected', body: refusal }]);
        return 'rejected' as const;
      }
      const plan = emptyPlan();
      const id = newSessionId();
      const handle = `${workspace.short}/${target.role}`;
      plan.drafts.push({ operation: op.operation, thread: op.thread, session: id, kind: 'session.created', body: { role: target.role, handle, depth } });
      const session = newSessionState({ id, thread: op.thread!, role: target.role, handle, depth });
      await planTurn(deps, tx, state, session, 'commissioned', plan, 'step_skipped');
      await appendOps(tx, writer, plan.drafts);
      return plan;
    });
  }

  async function knownPerson(db2: Exec, handle: string): Promise<boolean> {
    const rows = await db2.execute(
      sql`select 1 from ${tables.ops} where ${tables.ops.kind} = 'message.posted' and ${tables.ops.body}->'author'->>'handle' = ${handle} limit 1`,
    );
    return (rows as unknown as { rows: unknown[] }).rows.length > 0;
  }

  /** A turn whose start failed is over: record it, so the session is not taken for running. */
  async function recordStartFailures(warnings: Warning[]): Promise<void> {
    const failed = warnings.filter((w) => w.reason === 'start_failed' && w.session !== undefined);
    if (failed.length === 0) return;
    await db.transaction(async (tx) => {
      for (const w of failed) {
        const opId = await operationOfSession(tx, w.session!);
        if (opId === null) continue;
        const s = (await loadOperation(tx, opId)).sessions[w.session!];
        if (!s || !s.in_turn) continue;
        await appendOps(tx, writer, [
          {
            operation: opId,
            thread: s.thread,
            session: s.id,
            kind: 'session.turn_ended',
            body: { turn: s.turn, outcome: 'start_failed', exit_code: null, signal: null, timed_out: false },
          },
        ]);
      }
    });
  }

  async function reply(input: ReplyInput): Promise<Receipt> {
    const text = checkText(input.text);
    const { wc, note } = await workingCopy();
    await reap();
    const result = await db.transaction(async (tx) => {
      const caller = await resolveCaller(deps, tx, input.caller);
      const opId = await operationOfThread(tx, input.thread);
      if (opId === null) throw new NexusError('UNKNOWN_THREAD', `no thread ${input.thread} in this workspace`);
      const state = await loadOperation(tx, opId);
      const thread = state.threads[input.thread]!;
      const plan = emptyPlan();
      const author = authorOf(caller);
      const answering =
        (caller.session !== null && caller.session.id === thread.session) ||
        (caller.session === null && caller.handle === thread.target.handle);
      if (answering) {
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
      } else if (thread.escalated && caller.handle !== thread.expected_handle) {
        // On an escalated thread only the handle that escalated can answer the hand-back.
        plan.drafts.push(messageDraft(opId, thread.id, author, text, 'none', wc));
      } else {
        plan.drafts.push(messageDraft(opId, thread.id, author, text, thread.state === 'answered' ? 'reopen' : 'none', wc));
        // A follow-up to whoever owes the thread. A session waiting on its own round is not
        // disturbed: it reads the follow-up when that round's answer starts it again.
        const target = thread.session === null ? undefined : state.sessions[thread.session];
        const waiting = target !== undefined && !target.in_turn && openSubRounds(state, target.id).length > 0;
        if (target && !waiting) await planTurn(deps, tx, state, target, 'follow_up', plan, 'step_skipped');
      }
      await appendOps(tx, writer, plan.drafts);
      const message = plan.drafts.find((d) => d.kind === 'message.posted')!;
      return { plan, operation: opId, message: (message.body as { message: string }).message };
    });
    const warnings = [...result.plan.warnings];
    const woke = await startTurns(deps, result.plan.turns, warnings);
    await recordStartFailures(warnings);
    return {
      posted: true,
      thread: input.thread,
      operation: result.operation,
      message: result.message,
      woke: woke[0] ?? null,
      warnings,
      refs_warning: null,
      working_copy: wc,
      worker_names_a_working_copy: wc !== null,
      working_copy_note: note,
    };
  }

  /**
   * A turn's process has ended. Settles what it left: a session that owes its thread
   * and is not waiting on a round of its own gets an answer written in its name.
   */
  async function finishTurn(end: TurnEnd): Promise<{ outcome: string; woke: number }> {
    const at = deps.now().toISOString();
    const result = await db.transaction(async (tx) => {
      await markProcessEnded(tx, end.session, end.turn, { exitCode: end.exitCode, signal: end.signal, at });
      const opId = await operationOfSession(tx, end.session);
      if (opId === null) return null;
      const state = await loadOperation(tx, opId);
      const s = state.sessions[end.session];
      if (!s || s.turn !== end.turn || !s.in_turn) return null;
      const thread = state.threads[s.thread]!;
      const plan = emptyPlan();
      const crashed = end.timedOut || end.exitCode !== 0;
      let outcome: 'replied' | 'waiting' | 'substituted';
      if (s.last_answer_at > s.turn_started_at || thread.state === 'answered') outcome = 'replied';
      else if (openSubRounds(state, s.id).length > 0 || s.last_input_at > s.turn_started_at) outcome = 'waiting';
      else outcome = 'substituted';
      if (outcome === 'substituted') {
        const why = end.timedOut
          ? 'ran past its declared timeout and was stopped'
          : end.signal !== null
            ? `was ended by ${end.signal === 'lost' ? 'a crash (its supervisor is gone)' : end.signal}`
            : end.exitCode !== 0
              ? `exited with code ${end.exitCode}`
              : 'exited normally';
        const textOut = `[runtime] ${s.handle} ${why} without replying; this answer is written in its name.${crashed ? '' : ' Check the tools its declaration grants.'}`;
        const effect = crashed ? 'escalate' : 'answer';
        plan.drafts.push(messageDraft(opId, thread.id, { handle: s.handle, session: s.id }, textOut, effect, null, true));
        await planRequesterWake(deps, tx, state, thread, plan);
      }
      plan.drafts.push({
        operation: opId,
        thread: s.thread,
        session: s.id,
        kind: 'session.turn_ended',
        body: { turn: end.turn, outcome, exit_code: end.exitCode, signal: end.signal, timed_out: end.timedOut },
      });
      await appendOps(tx, writer, plan.drafts);
      // Input that arrived while the process lived (an answer, a follow-up) starts it again now.
      const after = await loadOperation(tx, opId);
      const s2 = after.sessions[s.id]!;
      const owes = after.threads[s.thread]!.state === 'open';
      if (owes && openSubRounds(after, s.id).length === 0 && s2.last_input_at > s2.turn_started_at) {
        const again = emptyPlan();
        await planTurn(deps, tx, after, s2, s2.last_answer_at > s2.turn_started_at ? 'follow_up' : 'answered', again, 'requester_not_woken');
        await appendOps(tx, writer, again.drafts);
        plan.turns.push(...again.turns);
        plan.warnings.push(...again.warnings);
      }
      return { plan, outcome };
    });
    if (result === null) return { outcome: 'already_settled', woke: 0 };
    const warnings = [...result.plan.warnings];
    const woke = await startTurns(deps, result.plan.turns, warnings);
    await recordStartFailures(warnings);
    return { outcome: result.outcome, woke: woke.length };
  }

  return { send, reply, finishTurn, reap, workingCopy, react };
}

/** How an answer from the thread's owner lands: once per owed turn, and once more only to answer a hand-back. */
function dischargeEffect(thread: ThreadState, handle: string, escalate: boolean) {
  if (thread.state === 'open') return escalate ? ('escalate' as const) : ('answer' as const);
  if (thread.escalated && handle === thread.expected_handle && !escalate) return 'answer' as const;
  return 'none' as const;
}

export type Engine = ReturnType<typeof createEngine>;
