// What the chat engine tells the lease, in the engine's own words (its batches' intents), and how those become the lease's
// events: the operation's threads as the lease needs them, the personas' declarations, and the device-local facts
// (which sessions are alive, what waits at an availability boundary).
import { isNull } from 'drizzle-orm';
import type { LeaseActor, LeaseEvent, LeaseState, ThreadSnapshot, Trigger, WorldFacts } from '../../../protocol/leases.js';
import type { Author } from '../../../protocol/ops.js';
import { tables } from '../../adapters/store/index.js';
import type { Exec } from '../../kernel/index.js';
import { loadOperation, type EngineDeps, type Intent, type OperationState, type PlannedTurn, type TurnReason } from '../threads/index.js';
import { wakeWaits } from './rules.js';

/** One thing a command did that the lease must hear about (the chat engine's `Intent`). */
export type LeaseIntent = Intent;

export function actor(a: Author): LeaseActor {
  return { handle: a.handle, session: a.session };
}

/** A planned turn as the lease knows it: the id names the session and why it starts, so it can be planned again later. */
export function triggerOf(turn: PlannedTurn): Trigger {
  return { id: `${turn.session.id}/${turn.reason}`, thread: turn.session.thread, run: null };
}

export function parseTrigger(t: Trigger): { session: string; reason: TurnReason } | null {
  const m = /^([^/]+)\/(commissioned|answered|follow_up)$/.exec(t.id);
  return m ? { session: m[1]!, reason: m[2] as TurnReason } : null;
}

/** Declarations read once per decision: whether a role needs the copy alone, and its declared window. */
export class PersonaLookup {
  private readonly cache = new Map<string, { exclusive: boolean; window_ms: number | null }>();
  constructor(private readonly deps: EngineDeps) {}

  async of(role: string): Promise<{ exclusive: boolean; window_ms: number | null }> {
    const known = this.cache.get(role);
    if (known) return known;
    // A declaration that cannot be read starts nothing, so it claims nothing either.
    const p = await this.deps.loadPersona(this.deps.workspace.paths.root, role).catch(() => null);
    const out = { exclusive: p?.working_tree === 'exclusive', window_ms: p?.timeout_ms ?? null };
    this.cache.set(role, out);
    return out;
  }
}

/** The operation's threads as the lease follows them, read from the engine's fold. */
export async function snapshotArea(state: OperationState, personas: PersonaLookup): Promise<ThreadSnapshot[]> {
  const out: ThreadSnapshot[] = [];
  for (const t of Object.values(state.threads)) {
    const s = t.session === null ? undefined : state.sessions[t.session];
    const windowMs = t.target.kind === 'persona' ? (await personas.of(t.target.role)).window_ms : null;
    out.push({
      thread: t.id,
      parent: t.parent,
      opener: t.opener.handle,
      // Owed by a person or by another workspace: no process here to watch, and an answer may still come.
      person: t.target.kind !== 'persona',
      owing: t.state === 'open',
      since: Date.parse(t.updated_ts),
      window_ms: windowMs,
      handback: t.state === 'answered' && t.escalated ? 'escalation' : null,
      expected: t.state === 'answered' && t.escalated ? t.expected_handle : null,
      session: t.session,
      proc: s === undefined ? 'none' : s.in_turn ? 'running' : s.turn > 0 ? 'ended' : 'none',
      run: null,
    });
  }
  return out;
}

/**
 * What this worker knows now: whether it can tell liveness, which sessions have a live process, and which
 * followed operations wait on another workspace (a commission there, answered or admitted or not, whose
 * progress this node cannot watch).
 */
export async function worldFacts(deps: EngineDeps, db: Exec, state: LeaseState): Promise<WorldFacts> {
  const known = deps.answersLiveness !== false;
  const rows = await db
    .select({ session: tables.sessionProcs.session, pid: tables.sessionProcs.sidecarPid })
    .from(tables.sessionProcs)
    .where(isNull(tables.sessionProcs.endedAt));
  const alive = rows.filter((r) => !known || (r.pid !== null && deps.alive(r.pid))).map((r) => r.session);
  const boundary: string[] = [];
  for (const op of Object.keys(state.areas)) {
    const st = await loadOperation(db, op);
    if (Object.values(st.threads).some((t) => t.target.kind === 'remote' && t.state === 'open')) boundary.push(op);
  }
  return { liveness_known: known, alive: [...new Set(alive)], boundary };
}

/** Facts are gathered only when a decision may read them: while somebody holds the copy. */
export type FactSource = () => Promise<WorldFacts>;

const NO_FACTS: WorldFacts = { liveness_known: true, alive: [], boundary: [] };

export async function toEvent(
  intent: LeaseIntent,
  state: LeaseState,
  personas: PersonaLookup,
  facts: FactSource,
  load: (operation: string) => Promise<OperationState>,
): Promise<LeaseEvent> {
  switch (intent.type) {
    case 'commission':
    case 'reopen': {
      const st = intent.state;
      const target = intent.target;
      const decl = target.kind === 'persona' ? await personas.of(target.role) : { exclusive: false, window_ms: null };
      const exclusive = decl.exclusive || intent.exclusive === true;
      const rootThread = st.threads[st.id];
      // The operation's threads are read only when this commission may make the lease start following it.
      const mayFollow = state.areas[st.id] === undefined && (exclusive || state.parked[st.id] !== undefined) && intent.turn !== null;
      return {
        type: intent.type,
        operation: st.id,
        thread: intent.thread,
        parent: intent.parent,
        by: actor(intent.by),
        person: target.kind !== 'persona',
        exclusive,
        window_ms: intent.window_ms !== undefined ? intent.window_ms : decl.window_ms,
        trigger: intent.turn === null ? null : { ...triggerOf(intent.turn), run: intent.run ?? null },
        root: rootThread ? actor(rootThread.opener) : actor(intent.by),
        area: mayFollow ? await snapshotArea(st, personas) : [],
        facts: state.holder === null ? NO_FACTS : await facts(),
      };
    }
    case 'reply': {
      // The operation's threads are read only when its woken session must wait for the copy and the lease does not follow it yet.
      const mayFollow = intent.wake !== null && wakeWaits(state, intent.operation) && state.areas[intent.operation] === undefined;
      const st = mayFollow ? await load(intent.operation) : null;
      const rootThread = st?.threads[st.id];
      return {
        type: 'reply',
        operation: intent.operation,
        thread: intent.thread,
        by: actor(intent.by),
        outcome: intent.outcome,
        wakes: intent.wake === null ? null : triggerOf(intent.wake),
        root: rootThread ? actor(rootThread.opener) : actor(intent.by),
        area: st === null ? [] : await snapshotArea(st, personas),
        facts: mayFollow && state.holder !== null ? await facts() : NO_FACTS,
      };
    }
    case 'session_ended':
    case 'session_crashed':
      return { type: intent.type, operation: intent.operation, thread: intent.thread, session: intent.session };
    case 'answered_from_above':
      return { type: 'answered_from_above', operation: intent.operation, thread: intent.thread, by: intent.by === null ? null : actor(intent.by) };
  }
}
