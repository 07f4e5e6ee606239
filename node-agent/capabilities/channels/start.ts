// Starting one step the board chose: a session of this workspace in a new step thread, a stamped
// commission to a persona of another workspace (on hold until admitted there), or a skip with its reason.
// Everything here is drafts and planned turns inside the settling transaction; processes start after it.
import { signStamp } from '../../../crypto/index.js';
import { NexusError } from '../../../protocol/errors.js';
import { newSessionId, newThreadId, WorkspaceId } from '../../../protocol/ids.js';
import type { Persona } from '../../../protocol/persona.js';
import type { Warning } from '../../../protocol/receipts.js';
import type { WorkingCopy } from '../../../protocol/working-copy.js';
import type { Exec, OpDraft } from '../../kernel/index.js';
import { messageDraft, newSessionState, planTurn, spendOf, turnsUsed, type EngineDeps, type Intent, type OperationState, type Plan } from '../threads/index.js';
import { resolveAlias } from '../trust/index.js';
import { askMessage, type Board } from './board.js';
import type { StepRef } from './decide.js';
import { stepBrief, type RandomSource, type Texts } from './render.js';
import { channelAuthor, roundDraft } from './records.js';
import { stepDepth, stepStarted, wantsExclusive, windowFor } from './verdicts.js';
import { stepSkippedWarning } from './warnings.js';

/**
 * The working-copy lease's door into a round. Asked before a step of this workspace starts: null
 * lets it start; a hold writes `step.held` (it holds later steps of an ordered run) and the lease,
 * when it promotes the claim, settles the round again, which starts what `nextStartable` names.
 */
export type StepGate = (b: Board, s: StepRef, exclusive: boolean) => { reason: string; message: string } | null;

export type StartContext = {
  deps: EngineDeps;
  /** The settling transaction. */
  tx: Exec;
  operation: string;
  state: OperationState;
  now: Date;
  wc: WorkingCopy | null;
  random: RandomSource;
  texts: Texts;
  drafts: OpDraft[];
  plan: Plan;
  warnings: Warning[];
  gate: StepGate | null;
  /** What the working-copy lease is told of the steps started here (it may hold their turns back). */
  intents: Intent[];
};

/** What became of a step: `held_again` changed nothing (it was held before and still is). */
export type StartOutcome = { kind: 'started'; session: string | null } | { kind: 'held' | 'held_again' | 'skipped' };

function skip(ctx: StartContext, b: Board, s: StepRef, reason: string, message: string): StartOutcome {
  ctx.drafts.push(roundDraft(ctx.operation, b.round, { kind: 'step.skipped', body: { round: b.round, pass: s.pass, step: s.step, reason, message } }));
  ctx.warnings.push(stepSkippedWarning(b, s, reason, message));
  return { kind: 'skipped' };
}

async function personaOf(ctx: StartContext, role: string): Promise<Persona | { reason: string; message: string }> {
  try {
    const persona = await ctx.deps.loadPersona(ctx.deps.workspace.paths.root, role);
    return persona ?? { reason: 'persona_missing', message: `no persona "${role}" is declared in .nxs-personas/` };
  } catch (err) {
    if (!(err instanceof NexusError)) throw err;
    return { reason: 'persona_invalid', message: err.message };
  }
}

function brief(ctx: StartContext, b: Board, s: StepRef): string {
  const ask = ctx.texts.get(askMessage(b)) ?? '(the ask is not available on this node)';
  return stepBrief(b, s, ask, ctx.texts, ctx.random).text;
}

/** Starts, holds or skips `s`. The caller appends the drafts and starts the planned turns after commit. */
export async function startStep(ctx: StartContext, b: Board, s: StepRef): Promise<StartOutcome> {
  const { deps } = ctx;
  const where = s.workspace;
  if (where !== null) {
    const target = WorkspaceId.safeParse(where).success ? where : resolveAlias(deps.workspace.paths, where);
    if (target === null) return skip(ctx, b, s, 'UNKNOWN_RECIPIENT', `"${where}" is neither a workspace id nor the alias of a trusted workspace`);
    if (target !== deps.workspace.id) return startRemote(ctx, b, s, target);
  }
  const persona = await personaOf(ctx, s.role);
  if (!('role' in persona)) return skip(ctx, b, s, persona.reason, persona.message);
  const hold = ctx.gate?.(b, s, wantsExclusive(b, persona.working_tree)) ?? null;
  if (hold !== null) {
    if (s.held) return { kind: 'held_again' };
    ctx.drafts.push(roundDraft(ctx.operation, b.round, { kind: 'step.held', body: { round: b.round, pass: s.pass, step: s.step, ...hold } }));
    return { kind: 'held' };
  }
  const thread = newThreadId();
  const session = newSessionId();
  const handle = `${deps.workspace.short}/${persona.role}`;
  const depth = stepDepth(b);
  const windowMs = windowFor(b, s, persona.timeout_ms);
  const channel = channelAuthor(deps.workspace.short, b);
  const subject = ctx.state.threads[b.round]?.subject ?? null;
  ctx.drafts.push(
    { operation: ctx.operation, thread, session: null, kind: 'thread.opened', body: { parent: b.round, subject, opener: channel, target: { kind: 'persona', role: persona.role, handle } } },
    { operation: ctx.operation, thread, session, kind: 'session.created', body: { role: persona.role, handle, depth } },
    messageDraft(ctx.operation, thread, channel, brief(ctx, b, s), 'commission', ctx.wc),
    roundDraft(ctx.operation, b.round, stepStarted(b, s, { thread, session, handle, now: ctx.now, windowMs, onHold: false })),
  );
  const before = ctx.plan.turns.length;
  await planTurn(deps, ctx.tx, ctx.state, newSessionState({ id: session, workspace: deps.workspace.id, thread, role: persona.role, handle, depth }), 'commissioned', ctx.plan, 'step_skipped');
  // The step's window is its turn's timeout: the turn's supervisor stops it when the window ends.
  const planned = ctx.plan.turns[before];
  if (planned !== undefined && windowMs !== null) planned.timeoutMs = windowMs;
  // The lease decides whether the step's turn starts now or waits for the copy, as for any commission. The
  // steps of an ordered flow form a run, one run per pass, so two of them never start side by side.
  ctx.intents.push({
    type: 'commission',
    state: ctx.state,
    thread,
    parent: b.round,
    by: channel,
    target: { kind: 'persona', role: persona.role, handle },
    turn: planned ?? null,
    exclusive: wantsExclusive(b, persona.working_tree),
    window_ms: windowMs,
    run: b.channel.flow === 'sequential' ? { id: `${b.round}:${s.pass}`, step: s.step } : null,
  });
  return { kind: 'started', session };
}

/**
 * A member of another workspace: a commission stamped by this workspace, as `nxc send <ws>/<role>`
 * writes it. A stamp vouches for a handle, so the thread's opener is the requester's handle (with no
 * session: the requester waits on the round, not on this thread). Nothing starts here; the step is
 * on hold at the availability boundary until that workspace admits it.
 */
async function startRemote(ctx: StartContext, b: Board, s: StepRef, target: string): Promise<StartOutcome> {
  const thread = newThreadId();
  const handle = `${target.slice(0, 4)}/${s.role}`;
  const asker = b.requester.handle;
  const stamp = await signStamp(ctx.deps.keys.key, {
    sub: asker,
    role: asker.includes('/') ? asker.slice(asker.indexOf('/') + 1) : null,
    aud: target,
    target_role: s.role,
    thread,
    depth: b.requester.depth,
    turns: turnsUsed(ctx.state),
    usage: spendOf(ctx.state),
  });
  const opener = { handle: asker, session: null };
  const subject = ctx.state.threads[b.round]?.subject ?? null;
  ctx.drafts.push(
    { operation: ctx.operation, thread, session: null, kind: 'thread.opened', body: { parent: b.round, subject, opener, target: { kind: 'remote', workspace: target, role: s.role, handle }, stamp } },
    messageDraft(ctx.operation, thread, opener, brief(ctx, b, s), 'commission', ctx.wc),
    roundDraft(ctx.operation, b.round, stepStarted(b, s, { thread, session: null, handle, now: ctx.now, windowMs: windowFor(b, s, null), onHold: true })),
  );
  return { kind: 'started', session: null };
}
