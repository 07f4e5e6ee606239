// Session turns: deciding who wakes (inside the command's transaction) and starting them (after commit).
import { isA2aClientHandle } from '../../../protocol/a2a.js';
import { and, eq, inArray, isNull } from 'drizzle-orm';
import { NexusError } from '../../../protocol/errors.js';
import { compareOps, type Author, type MessageEffect, type Op } from '../../../protocol/ops.js';
import { writtenBy, type Warning, type Woke } from '../../../protocol/receipts.js';
import type { WorkingCopy } from '../../../protocol/working-copy.js';
import { newMessageId } from '../../../protocol/ids.js';
import { opColumns, opsOfThreads, rowToOp, type Exec, type OpDraft } from '../../kernel/index.js';
import { lastDeclaration, loadOperation, threadOps } from './operations.js';
import { openSubRounds, spendOf, type OperationState, type SessionState, type ThreadState } from './fold.js';
import { buildPrompt, readSpec, recordedOperationEnv, recordOperationEnv, REPLY_ONLY_TOOL, sessionDir, type SessionSpec } from '../../adapters/sessions/index.js';
import { tables } from '../../adapters/store/index.js';
import type { EngineDeps } from '../context.js';
import { budgetOf, budgetRefusal, spendToday } from './brakes.js';
import { declaredSpendRules } from '../../adapters/workspace/index.js';
import { NO_SPEND } from '../../../protocol/usage.js';

export type TurnReason = 'commissioned' | 'answered' | 'follow_up';

/** A turn decided inside a transaction, to be started once it commits. */
export type PlannedTurn = {
  session: SessionState;
  operation: string;
  turn: number;
  reason: TurnReason;
  declarationHash: string;
  /** The warning class a failed start is reported under: step_skipped for a commission or follow-up, requester_not_woken for a wake. */
  failureClass: Warning['class'];
  /**
   * Set by the working-copy lease when it lets the turn start: the grant's token (NXC_LEASE_TOKEN; null when the
   * operation holds no copy) and, after a restore, the fixed text telling the session where its work is.
   */
  lease?: { token: number | null; notice: string | null };
  /** Runs under this timeout instead of the persona's (a channel step's window). */
  timeoutMs?: number;
  /** The tokens its operation had left under a `max_tokens` budget when it was planned (NXC_OPERATION_TOKENS_LEFT). */
  tokensLeft?: number;
};

export type Plan = { drafts: OpDraft[]; turns: PlannedTurn[]; warnings: Warning[] };

export function emptyPlan(): Plan {
  return { drafts: [], turns: [], warnings: [] };
}

/** The message draft every post goes through, so the handover record is never forgotten. */
export function messageDraft(
  operation: string,
  thread: string,
  author: Author,
  text: string,
  effect: MessageEffect,
  workingCopy: WorkingCopy | null,
  substituted = false,
): OpDraft {
  return {
    operation,
    thread,
    session: author.session,
    kind: 'message.posted',
    body: { message: newMessageId(), author, text, effect, substituted, refs: { working_copy: workingCopy } },
  };
}

/**
 * Plans a new turn for `session` (the store's anchored depth goes with it unchanged).
 * A session whose process still lives is not started twice: the caller gets the reason instead.
 */
export async function planTurn(
  deps: EngineDeps,
  db: Exec,
  state: OperationState,
  session: SessionState,
  reason: TurnReason,
  plan: Plan,
  failureClass: 'step_skipped' | 'requester_not_woken',
): Promise<void> {
  if (session.workspace !== deps.workspace.id || !session.handle.startsWith(`${deps.workspace.short}/`)) {
    // A session of another workspace, known here through sync: only its own node may start it. (Its
    // handle alone does not say so: another workspace may name a session of its own with our short.)
    plan.warnings.push({
      class: 'step_skipped',
      reason: 'foreign_session',
      session: session.id,
      thread: session.thread,
      role: session.role,
      message: `${session.handle} belongs to another workspace; only its own node starts it`,
    });
    return;
  }
  if (session.in_turn || plan.turns.some((t) => t.session.id === session.id)) {
    // An answer reaching a requester still in the turn that asked (the commonest fan-in) is delivered: the
    // input is newer than the turn, so the turn's end starts it again with the answer (settle.ts), and a
    // turn already planned here reads it in its prompt. Nobody is left untold; nothing to warn about.
    if (reason === 'answered') return;
    plan.warnings.push({
      class: failureClass,
      reason: 'already_running',
      session: session.id,
      thread: session.thread,
      role: session.role,
      message: `${session.handle} (${session.id}) still has a live process; the message is posted, and the session is started again when its current turn ends if it still owes an answer`,
    });
    return;
  }
  // The operation budget: a loop at a fixed depth never reaches the depth guard, but it spends turns, tokens
  // and money; the workspace's daily ceiling counts what all its operations spent today.
  const now = deps.now();
  const { daily } = declaredSpendRules(deps.workspace.paths);
  const today = daily === null ? NO_SPEND : await spendToday(db, deps.workspace.id, now);
  const planned = plan.turns.filter((t) => t.operation === state.id).length;
  const budget = await budgetOf(deps, state);
  const refused = budgetRefusal(state, session, planned, budget, failureClass, { today, rule: daily, now });
  if (refused !== null) {
    plan.warnings.push(refused);
    return;
  }
  let persona;
  try {
    persona = await deps.loadPersona(deps.workspace.paths.root, session.role);
  } catch (err) {
    if (!(err instanceof NexusError)) throw err;
    plan.warnings.push({
      class: failureClass,
      reason: 'persona_invalid',
      role: session.role,
      session: session.id,
      thread: session.thread,
      message: `${session.role} was not started: ${err.message}`,
    });
    return;
  }
  if (persona === null) {
    plan.warnings.push({
      class: failureClass,
      reason: 'persona_missing',
      role: session.role,
      session: session.id,
      thread: session.thread,
      message: `${session.role} was not started: its declaration is gone from .nxs-personas/`,
    });
    return;
  }
  const previous = await lastDeclaration(db, deps.workspace.id, session.role);
  if (previous !== null && previous !== persona.hash) {
    plan.warnings.push({
      class: 'declaration_changed',
      role: session.role,
      session: session.id,
      declaration: { hash: persona.hash, previous_hash: previous },
      message: `${session.role} starts under a declaration that differs from its previous run (${previous.slice(7, 19)} -> ${persona.hash.slice(7, 19)})`,
    });
  }
  const turn = session.turn + 1;
  plan.drafts.push({
    operation: state.id,
    thread: session.thread,
    session: session.id,
    kind: 'session.turn_started',
    body: { role: session.role, turn, reason, declaration_hash: persona.hash },
  });
  const tokensLeft = budget.max_tokens === null ? undefined : Math.max(0, budget.max_tokens - spendOf(state).tokens);
  plan.turns.push({ session, operation: state.id, turn, reason, declarationHash: persona.hash, failureClass, ...(tokensLeft === undefined ? {} : { tokensLeft }) });
}

/**
 * What discharging `thread` (an answer or a hand-back) sets in motion: the session
 * that commissioned it is started again, at the depth it already had, once none
 * of its rounds is still open.
 */
export async function planRequesterWake(deps: EngineDeps, db: Exec, state: OperationState, thread: ThreadState, plan: Plan): Promise<void> {
  const requester = thread.opener.session === null ? undefined : state.sessions[thread.opener.session];
  // A requester of another workspace is woken by its own node when the answer reaches it.
  if (!requester || !requester.handle.startsWith(`${deps.workspace.short}/`)) return;
  const owes = state.threads[requester.thread];
  if (!owes || owes.state !== 'open') return;
  const stillOpen = openSubRounds(state, requester.id).filter((t) => t.id !== thread.id);
  if (stillOpen.length > 0) return;
  await planTurn(deps, db, state, requester, 'answered', plan, 'requester_not_woken');
}

/** Starts the planned turns' processes. A start that fails is recorded and reported, never thrown. */
export async function startTurns(deps: EngineDeps, turns: PlannedTurn[], warnings: Warning[]): Promise<Woke[]> {
  const woke: Woke[] = [];
  for (const t of turns) {
    const result = await startTurn(deps, t);
    if (result.error === null) {
      if (result.sandboxOff === true) {
        warnings.push({ class: 'sandbox_off', role: t.session.role, session: t.session.id, thread: t.session.thread, message: `${t.session.handle} runs with no sandbox around it: .nxs/config.json declares "sandbox": "off", so it reads and writes whatever you can` });
      }
      woke.push({
        session: t.session.id,
        handle: t.session.handle,
        role: t.session.role,
        depth: t.session.depth,
        turn: t.turn,
        thread: t.session.thread,
        pid: result.runtimePid,
      });
    } else {
      warnings.push({
        class: t.failureClass,
        reason: result.code === 'SANDBOX_UNAVAILABLE' ? 'sandbox_unavailable' : 'start_failed',
        role: t.session.role,
        session: t.session.id,
        thread: t.session.thread,
        message: `${t.session.handle} could not be started: ${result.error}. The message is posted and the thread is still owed.`,
      });
    }
  }
  return woke;
}

/**
 * The one place a turn's environment is built. `baseEnv` is what its processes start from: the environment
 * recorded for its operation when its sender opened it (or, for a session that ran before that record existed,
 * the one its last turn ran with), never the environment of the command that happens to start the turn: a
 * queue promoted by a tick or by somebody else's send or reply, a round moved on, a wake by an answer from
 * another workspace, the node. Only with no record at all (an operation older than it) does the caller's stand
 * in. `env` is the session's identity on top of it.
 */
export function turnEnvironment(deps: EngineDeps, t: PlannedTurn, model: string, allowed: readonly string[] | null): { baseEnv: Record<string, string>; env: Record<string, string> } {
  const { workspace } = deps;
  const s = t.session;
  const baseEnv =
    recordedOperationEnv(workspace.paths.sessions, t.operation) ?? readSpec(sessionDir(workspace.paths.sessions, s.id))?.base_env ?? deps.baseEnv();
  const env: Record<string, string> = {
    NXC_SESSION: s.id,
    NXC_THREAD: s.thread,
    NXC_HOP: String(s.depth),
    NXC_ACTOR: s.handle,
    NXC_WORKSPACE: workspace.id,
    NXC_WORKSPACE_DIR: workspace.paths.root,
    NXC_TURN: String(t.turn),
    NXC_MODEL: model,
  };
  if (allowed !== null) env['NXC_ALLOWED_TOOLS'] = allowed.join(',');
  if (t.tokensLeft !== undefined) env['NXC_OPERATION_TOKENS_LEFT'] = String(t.tokensLeft);
  const token = t.lease?.token ?? null;
  if (token !== null) env['NXC_LEASE_TOKEN'] = String(token);
  return { baseEnv, env };
}

/** Records, once, the environment a new operation's sessions start from: the environment of the command that opens it. */
export function recordSenderEnv(deps: EngineDeps, drafts: readonly OpDraft[]): void {
  for (const d of drafts) {
    const opens = (d.kind === 'thread.opened' && (d.body as { parent: string | null }).parent === null) || d.kind === 'session.created';
    if (opens) recordOperationEnv(deps.workspace.paths.sessions, d.operation, deps.baseEnv());
  }
}

async function startTurn(deps: EngineDeps, t: PlannedTurn): Promise<{ runtimePid: number | null; error: string | null; code?: string | undefined; sandboxOff?: boolean | undefined }> {
  const { workspace } = deps;
  const s = t.session;
  const persona = await deps.loadPersona(workspace.paths.root, s.role).catch(() => null);
  const dir = sessionDir(workspace.paths.sessions, s.id);
  let error: string | null = null;
  let runtimePid: number | null = null;
  let sidecarPid: number | null = null;
  let code: string | undefined;
  let sandboxOff: boolean | undefined;
  if (persona === null || persona.hash !== t.declarationHash) {
    error = 'its declaration changed or vanished while the command ran';
  } else {
    // One truth for the engine and the runtime: bypassPermissions approves everything, whatever tools: says.
    const bypass = persona.permissions === 'bypassPermissions';
    const replyOnly = Array.isArray(persona.tools) && persona.tools.length === 0 && !bypass;
    const allowed = persona.tools === undefined || bypass ? null : persona.tools.length === 0 ? [REPLY_ONLY_TOOL] : persona.tools;
    const { baseEnv, env } = turnEnvironment(deps, t, persona.model, allowed);
    const composed = await composePrompt(deps, t, persona.system_prompt, replyOnly);
    const notice = t.lease?.notice ?? null;
    const prompt = notice === null ? composed : `${composed.trimEnd()}\n\n## Your working copy\n\n${notice}\n`;
    const spec: SessionSpec = {
      session: s.id,
      turn: t.turn,
      reason: t.reason,
      workspace: workspace.id,
      workspace_dir: workspace.paths.root,
      operation: t.operation,
      thread: s.thread,
      role: s.role,
      handle: s.handle,
      depth: s.depth,
      declaration: {
        file: persona.file,
        hash: persona.hash,
        model: persona.model,
        tools: persona.tools ?? null,
        permissions: persona.permissions,
        working_tree: persona.working_tree,
        timeout_ms: t.timeoutMs ?? persona.timeout_ms,
        command: persona.runtime.command,
      },
      allowed_tools: allowed,
      reply_only: replyOnly,
      env,
      base_env: baseEnv,
      prompt_file: `${dir}/turn-${t.turn}.prompt`,
      transcript_file: `${dir}/turn-${t.turn}.log`,
      written_at: deps.now().toISOString(),
    };
    const launched = await deps.launch({ spec, prompt, dir });
    sidecarPid = launched.sidecarPid > 0 ? launched.sidecarPid : null;
    runtimePid = launched.runtimePid;
    error = launched.error;
    code = launched.code;
    sandboxOff = launched.sandboxOff;
  }
  await deps.db
    .insert(tables.sessionProcs)
    .values({
      session: s.id,
      turn: t.turn,
      sidecarPid,
      runtimePid,
      startedAt: deps.now().toISOString(),
      endedAt: error === null ? null : deps.now().toISOString(),
    })
    .onConflictDoNothing();
  return { runtimePid, error, code, sandboxOff };
}

async function composePrompt(deps: EngineDeps, t: PlannedTurn, systemPrompt: string, replyOnly: boolean): Promise<string> {
  const { db, workspace } = deps;
  // Only what the fold took: an inert message (from a workspace with no say in this thread) is never read to an agent.
  const ops = await threadOps(db, t.session.thread, { effective: true });
  const messages = ops.flatMap((op) =>
    op.kind === 'message.posted'
      ? [{ author: op.body.author.handle, ts: op.ts, text: op.body.text, effect: op.body.effect, substituted: op.body.substituted, written_by: writtenBy(op.body), foreign: op.workspace !== workspace.id || isA2aClientHandle(op.body.author.handle) }]
      : [],
  );
  const opened = ops.find((op) => op.kind === 'thread.opened');
  const subject = opened?.kind === 'thread.opened' ? opened.body.subject : null;
  const state = await loadOperation(db, t.operation);
  const own = Object.values(state.threads).filter((th) => th.opener.session === t.session.id);
  const lastPosts = await lastPostsOf(db, own.filter((th) => th.state === 'answered').map((th) => th.id));
  const rounds = [];
  for (const th of own) {
    const last = th.state === 'answered' ? lastPosts.get(th.id) : undefined;
    rounds.push({
      thread: th.id,
      to: th.target.handle,
      answered_by: th.answered_by,
      escalated: th.escalated,
      text: last?.kind === 'message.posted' ? last.body.text : null,
      foreign: last !== undefined && last.workspace !== workspace.id,
    });
  }
  return buildPrompt({
    handle: t.session.handle,
    session: t.session.id,
    turn: t.turn,
    workspace: { id: workspace.id, name: workspace.name },
    thread: t.session.thread,
    subject,
    depth: t.session.depth,
    system_prompt: systemPrompt,
    messages,
    rounds,
    reply_only: replyOnly,
  });
}

/**
 * The last message each of these threads holds (only what the fold took), in one query: an orchestrator's
 * prompt lists every round it opened, and a query per round made each turn cost more than the one before.
 */
async function lastPostsOf(db: Exec, threads: readonly string[]): Promise<Map<string, Op>> {
  const last = new Map<string, Op>();
  for (const op of await opsOfThreads(db, threads, and(eq(tables.ops.kind, 'message.posted'), isNull(tables.ops.inert))!)) {
    const seen = last.get(op.thread!);
    if (seen === undefined || compareOps(seen, op) < 0) last.set(op.thread!, op);
  }
  return last;
}

/** Turns this machine started whose sidecar is gone without reporting: they ended, badly. */
export async function unreportedDeadTurns(deps: EngineDeps): Promise<Array<{ session: string; turn: number }>> {
  // A worker that cannot tell liveness never takes a turn for dead: it runs until it reports its end.
  if (deps.answersLiveness === false) return [];
  const rows = await deps.db.select().from(tables.sessionProcs).where(isNull(tables.sessionProcs.endedAt));
  return rows.filter((r) => r.sidecarPid === null || !deps.alive(r.sidecarPid)).map((r) => ({ session: r.session, turn: r.turn }));
}

/**
 * A command of `session`'s own was refused: noted on its running turn (device-local), so that if the
 * session then exits without answering, the answer written in its name is a hand-back, not a quiet
 * "answered". A session with no running turn here (another workspace's, or none) notes nothing.
 */
export async function noteRefusal(db: Exec, session: string, refusal: { code: string; message: string }): Promise<void> {
  await db
    .update(tables.sessionProcs)
    .set({ refusedCode: refusal.code, refusedMessage: refusal.message.slice(0, 2000) })
    .where(and(eq(tables.sessionProcs.session, session), isNull(tables.sessionProcs.endedAt)));
}

/** The refusal noted on a turn, or null. */
export async function refusalOf(db: Exec, session: string, turn: number): Promise<{ code: string; message: string } | null> {
  const rows = await db
    .select({ code: tables.sessionProcs.refusedCode, message: tables.sessionProcs.refusedMessage })
    .from(tables.sessionProcs)
    .where(and(eq(tables.sessionProcs.session, session), eq(tables.sessionProcs.turn, turn)));
  const r = rows[0];
  return r?.code == null ? null : { code: r.code, message: r.message ?? '' };
}

export async function markProcessEnded(
  db: Exec,
  session: string,
  turn: number,
  end: { exitCode: number | null; signal: string | null; at: string },
): Promise<void> {
  await db
    .update(tables.sessionProcs)
    .set({ endedAt: end.at, exitCode: end.exitCode, signal: end.signal })
    .where(and(eq(tables.sessionProcs.session, session), eq(tables.sessionProcs.turn, turn)));
}
