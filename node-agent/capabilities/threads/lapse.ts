// Commissions to another workspace that nobody there took up. Each has a deadline counted from its send:
// the target persona's declared timeout where this machine can read that declaration, else two hours.
// Past it, with neither a session nor a refusal from that workspace, the runtime hands the thread back
// to the asker as an escalation naming the workspace whose node never answered. The tick does it.
import { and, eq, inArray } from 'drizzle-orm';
import { LEASE_TIMES } from '../../../protocol/leases.js';
import type { Warning } from '../../../protocol/receipts.js';
import { tables } from '../../adapters/store/index.js';
import { opsOfThreads } from '../../kernel/index.js';
import type { EngineDeps } from '../context.js';
import { findTrust } from '../trust/index.js';
import type { EngineCore } from './core.js';
import type { ThreadState } from './fold.js';
import { loadOperation, withParts } from './operations.js';
import { emptyPlan, messageDraft, planRequesterWake } from './turns.js';

/** How long a commission waits for another workspace's node when the target's declaration cannot be read: the lease's flat bound. */
export const REMOTE_DEFAULT_TIMEOUT_MS = LEASE_TIMES.flat_bound_ms;

type RemoteTarget = { workspace: string; role: string; handle: string };

/** How long a commission to `target` may wait to be taken up, and whether the target's declaration said so. */
export async function remoteTimeout(deps: EngineDeps, target: Pick<RemoteTarget, 'workspace' | 'role'>): Promise<{ ms: number; declared: boolean }> {
  const root = deps.peerRoot?.(target.workspace) ?? null;
  if (root !== null) {
    const persona = await deps.loadPersona(root, target.role).catch(() => null);
    if (persona !== null && persona.timeout_ms !== null) return { ms: persona.timeout_ms, declared: true };
  }
  return { ms: REMOTE_DEFAULT_TIMEOUT_MS, declared: false };
}

/** The instant a commission opened at `openedTs` stops waiting (ms since the epoch). */
export async function remoteDeadline(deps: EngineDeps, target: Pick<RemoteTarget, 'workspace' | 'role'>, openedTs: string): Promise<number> {
  return Date.parse(openedTs) + (await remoteTimeout(deps, target)).ms;
}

function duration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Math.round(ms / 1000)} s`;
}

/**
 * This workspace's own commissions to other workspaces that are still waiting to be taken up: open, no
 * session there, no refusal. A channel step's thread is left to its round, whose window decides. A synced
 * log carries other workspaces' commissions too; only the ones this workspace opened are its to hand back.
 */
async function waitingForAdmission(deps: EngineDeps): Promise<Array<{ operation: string; thread: ThreadState & { target: { kind: 'remote' } & RemoteTarget } }>> {
  const rows = await deps.db.select({ id: tables.operations.id, state: tables.operations.state }).from(tables.operations).where(eq(tables.operations.finished, false));
  const found: Array<{ operation: string; thread: ThreadState & { target: { kind: 'remote' } & RemoteTarget } }> = [];
  for (const state of await withParts(deps.db, rows)) {
    for (const t of Object.values(state.threads)) {
      if (t.target.kind !== 'remote' || t.state !== 'open' || t.session !== null || t.rejected) continue;
      if (t.parent !== null && state.threads[t.parent]?.target.kind === 'channel') continue;
      found.push({ operation: state.id, thread: t as ThreadState & { target: { kind: 'remote' } & RemoteTarget } });
    }
  }
  if (found.length === 0) return [];
  const mine = await opsOfThreads(deps.db, found.map((f) => f.thread.id), and(eq(tables.ops.kind, 'thread.opened'), eq(tables.ops.workspace, deps.workspace.id))!);
  const ours = new Set(mine.map((m) => m.thread));
  return found.filter((f) => ours.has(f.thread.id));
}

export function lapseOf(core: EngineCore) {
  const { deps, db } = core;

  /**
   * Hands back every commission of this workspace whose deadline passed before another workspace's node
   * took it up, and asks the host for a tick at the next deadline still ahead.
   */
  return async function lapse(): Promise<{ lapsed: string[]; warnings: Warning[] }> {
    const now = deps.now().getTime();
    const lapsed: string[] = [];
    const warnings: Warning[] = [];
    for (const { operation, thread } of await waitingForAdmission(deps)) {
      const target = thread.target;
      const timeout = await remoteTimeout(deps, target);
      const at = Date.parse(thread.opened_ts) + timeout.ms;
      if (now < at) {
        deps.scheduleTick?.(at);
        continue;
      }
      const alias = findTrust(deps.workspace.paths, target.workspace)?.name;
      const named = `workspace ${target.workspace}${alias ? ` ("${alias}")` : ''}`;
      const why = timeout.declared ? `${target.role}'s declared timeout` : `the default, since ${target.role}'s declaration cannot be read from this machine`;
      const text =
        `sidecar: no node serving ${named} took this commission up within ${duration(timeout.ms)} (${why}): ` +
        `it was neither admitted nor refused there, and nothing ran. Start a node for that workspace ` +
        `(nxs node register, then nxs node start, where it lives), or bind both workspaces to one relay stream, then send again.`;
      const commit = core.commit();
      // The stand-in records the working copy as every message does (read outside the transaction: git is).
      const { wc } = await core.workingCopy();
      const done = await db.transaction(async (tx) => {
        const state = await loadOperation(tx, operation);
        const t = state.threads[thread.id];
        // Taken up, refused or answered since it was read: nothing to hand back.
        if (!t || t.state !== 'open' || t.session !== null || t.rejected) return null;
        const plan = emptyPlan();
        // Written in the target's name as a stand-in (substituted), as the runtime does for a session that went quiet.
        const by = { handle: t.target.handle, session: null };
        plan.drafts.push(messageDraft(operation, t.id, by, text, 'escalate', wc, true));
        await planRequesterWake(deps, tx, state, t, plan);
        await core.append(tx, commit, { cause: 'lapse', ...plan, state, workingCopy: wc, intents: [{ type: 'reply', operation, thread: t.id, by, outcome: 'escalate', wake: plan.turns[0] ?? null }] });
        return true;
      });
      if (done === null) continue;
      lapsed.push(thread.id);
      warnings.push(...(await core.settle(commit)).warnings);
    }
    return { lapsed, warnings };
  };
}
