// The lease's engine: where the chat engine's batches meet the working-copy lease. Inside a batch's transaction
// it turns what the command did into lease events, decides them, keeps back the turns the lease holds and records
// the lease's facts as ops (`hold`, then `record` once the drafts are stored: see policy.ts); after commit it
// carries out the effects in order (fence, restore, park, start...).
import { and, inArray, isNull } from 'drizzle-orm';
import { isNexusError } from '../../../protocol/errors.js';
import { WORKSPACE_OPERATION, type Op } from '../../../protocol/ops.js';
import type { LeaseEffect, LeaseEvent, LeaseOpPayload, LeaseState, ParkRecord, Trigger } from '../../../protocol/leases.js';
import type { Receipt, Warning, Woke } from '../../../protocol/receipts.js';
import { tables } from '../../adapters/store/index.js';
import { appendOps, type Author as Writer, type Exec, type OpDraft, type Tx } from '../../kernel/index.js';
import { emptyPlan, loadOperation, planTurn, startTurns, type EngineDeps, type PlannedTurn } from '../threads/index.js';
import { PersonaLookup, parseTrigger, toEvent, triggerOf, worldFacts, type LeaseIntent } from './events.js';
import { fenceGrant, park, restore, type MoverOptions } from './mover.js';
import { TOKEN_REF } from './repo.js';
import { decide } from './rules.js';
import { loadLease } from './store.js';
import { queuePlace } from './view.js';

/** What a decision leaves to do after its transaction commits. */
export type LeaseAfter = {
  /** The ops the command's own drafts became (what other capabilities, such as channel rounds, follow). */
  appended: Op[];
  effects: LeaseEffect[];
  /** The turns planned (turn_started recorded) for the triggers the effects start, by trigger id. */
  planned: Map<string, PlannedTurn>;
  /** Triggers whose session already runs: nothing to start, but the lease hears that it runs. */
  running: Map<string, string>;
  /** Operations the lease follows after the decision: only their sessions' starts are reported to it. */
  followed: Set<string>;
  warnings: Warning[];
};

export type CarryResult = {
  woke: Woke[];
  queued: NonNullable<Receipt['queued']> | null;
  parked: ParkRecord | null;
};

type Acc = CarryResult & { queuedOp: string | null; startedOps: Set<string>; fenced: Set<string>; retried: boolean };

function newAcc(): Acc {
  return { woke: [], queued: null, queuedOp: null, parked: null, startedOps: new Set(), fenced: new Set(), retried: false };
}

export type HookEnv = { deps: EngineDeps; writer: Writer };

/** What `hold` decided, kept for `record` once the drafts are stored. */
export type Held = { decision: { state: LeaseState; effects: LeaseEffect[]; facts: LeaseOpPayload[] }; planned: Map<string, PlannedTurn> };

export function factDrafts(facts: readonly LeaseOpPayload[]): OpDraft[] {
  return facts.map((f) => ({ operation: WORKSPACE_OPERATION, thread: null, session: null, ...f }) as OpDraft);
}

export function createLeaseHook(env: HookEnv) {
  const { deps, writer } = env;
  const dir = deps.workspace.paths.root;
  const ws = deps.workspace.id;
  /**
   * A move's options. The journal goes where no session can write it, and the store, which no session writes
   * either, says which grant is the latest: a token ref a session moved is set back, and said so.
   */
  const mover = (warnings: Warning[]): MoverOptions => ({
    journalDir: deps.workspace.paths.nxs,
    authority: {
      lastGranted: async () => (await loadLease(deps.db, ws)).token,
      onReset: ({ token, found }) =>
        warnings.push({
          class: 'lease_token_reset',
          message: `${TOKEN_REF} held ${found}, which no grant of this workspace's lease wrote (a session, a person or an earlier workspace in this repository put it there); it was set back to token ${token}, the latest grant`,
        }),
    },
  });
  const now = () => deps.now().getTime();

  /**
   * Decides in order from `state`: lease events as they are, or a command's intents turned into events. The
   * world's facts are gathered at most once for the whole batch, and only when a decision may read them.
   */
  async function decideAll(db: Exec, state: LeaseState, items: Array<LeaseEvent | { intent: LeaseIntent }>) {
    const personas = new PersonaLookup(deps);
    let facts: Awaited<ReturnType<typeof worldFacts>> | null = null;
    const source = async () => (facts ??= await worldFacts(deps, db, state));
    const effects: LeaseEffect[] = [];
    const recorded: LeaseOpPayload[] = [];
    for (const item of items) {
      const event = 'intent' in item ? await toEvent(item.intent, state, personas, source, (op) => loadOperation(db, op)) : item;
      const d = decide(state, event, now());
      state = d.state;
      effects.push(...d.effects);
      recorded.push(...d.facts);
    }
    return { state, effects, facts: recorded };
  }

  /**
   * Plans the turns the effects start that no command planned yet (a queue promoted, a restore finished), in
   * the deciding transaction, so their turn_started ops commit with the decision.
   */
  async function planStarts(tx: Tx, effects: readonly LeaseEffect[], planned: Map<string, PlannedTurn>, after: LeaseAfter): Promise<OpDraft[]> {
    const drafts: OpDraft[] = [];
    const sessions = new Set([...planned.values()].map((t) => t.session.id));
    for (const e of effects) {
      if (e.type !== 'start') continue;
      for (const t of e.triggers) {
        if (planned.has(t.id)) continue;
        const p = parseTrigger(t);
        if (p === null) continue;
        const state = await loadOperation(tx, e.operation);
        const session = state.sessions[p.session];
        // One start per session: a second trigger for it is already served by the first.
        if (!session || sessions.has(session.id)) {
          if (session) after.running.set(t.id, session.id);
          continue;
        }
        const plan = emptyPlan();
        await planTurn(deps, tx, state, session, p.reason, plan, p.reason === 'answered' ? 'requester_not_woken' : 'step_skipped');
        after.warnings.push(...plan.warnings);
        drafts.push(...plan.drafts);
        const turn = plan.turns[0];
        if (turn) {
          planned.set(t.id, turn);
          sessions.add(session.id);
        } else if (session.in_turn) after.running.set(t.id, session.id);
      }
    }
    return drafts;
  }

  /**
   * Before a batch is stored: decides what the command did, and leaves out the turn_started of every turn the
   * lease holds back. Every turn the batch planned is the lease's to start now: it takes them out of the batch.
   */
  async function hold(tx: Tx, batch: { drafts: OpDraft[]; turns: PlannedTurn[]; intents: readonly LeaseIntent[] }): Promise<Held> {
    const { drafts, turns, intents } = batch;
    const named = new Set(intents.flatMap((i) => ('turn' in i && i.turn ? [i.turn] : 'wake' in i && i.wake ? [i.wake] : [])));
    const d = await decideAll(tx, await loadLease(tx, ws), intents.map((intent) => ({ intent })));
    // A turn no intent names is none of the lease's business: it starts as it always did.
    const stray = turns.filter((t) => !named.has(t));
    for (const t of stray) d.effects.unshift({ type: 'start', operation: t.operation, triggers: [triggerOf(t)], token: null, notice: null });
    const starting = new Set(d.effects.flatMap((e) => (e.type === 'start' ? e.triggers.map((t) => t.id) : [])));
    const planned = new Map<string, PlannedTurn>();
    const held = new Set<PlannedTurn>();
    for (const t of turns) {
      if (starting.has(triggerOf(t).id)) planned.set(triggerOf(t).id, t);
      else held.add(t);
    }
    const kept = drafts.filter(
      (x) => !(x.kind === 'session.turn_started' && [...held].some((t) => t.session.id === x.session && t.turn === x.body.turn)),
    );
    drafts.splice(0, drafts.length, ...kept);
    turns.splice(0);
    return { decision: d, planned };
  }

  /** Once the batch's drafts are stored as `appended`: the turns the effects start, and the lease's facts, appended after them. */
  async function record(tx: Tx, held: Held, appended: readonly Op[]): Promise<LeaseAfter> {
    const after = { ...emptyAfter(held.decision.effects, held.planned, held.decision.state), appended: [...appended] };
    const more = await planStarts(tx, held.decision.effects, held.planned, after);
    await appendOps(tx, writer, [...more, ...factDrafts(held.decision.facts)]);
    return after;
  }

  /** Decides one event in its own transaction (reading the stored lease), then carries its effects out. */
  async function decideNow(events: LeaseEvent[], warnings: Warning[], acc: Acc): Promise<void> {
    const after = await deps.db.transaction(async (tx) => {
      const d = await decideAll(tx, await loadLease(tx, ws), events);
      const out = emptyAfter(d.effects, new Map(), d.state);
      const more = await planStarts(tx, d.effects, out.planned, out);
      await appendOps(tx, writer, [...more, ...factDrafts(d.facts)]);
      return out;
    });
    await run(after, warnings, acc);
  }

  /** After commit: carries the effects out in order. Never throws for a move that failed: it warns instead. */
  async function carryOut(after: LeaseAfter, warnings: Warning[]): Promise<CarryResult> {
    const acc = newAcc();
    await run(after, warnings, acc);
    // Taken up within the same command (a takeover): it did not stay queued.
    if (acc.queuedOp !== null && acc.startedOps.has(acc.queuedOp)) acc.queued = null;
    // The place as the lease stands once every effect is carried out (a hand-off in the same step moves it), read
    // by the function status reads it with: a receipt never names a holder status no longer shows.
    if (acc.queued !== null && acc.queuedOp !== null) {
      const place = queuePlace(await loadLease(deps.db, ws), acc.queuedOp);
      const holder = place?.behind == null ? acc.queued.holder : { operation: place.behind, thread: place.behind };
      acc.queued = place === null ? null : { position: place.position, holder };
    }
    return { woke: acc.woke, queued: acc.queued, parked: acc.parked };
  }

  async function run(after: LeaseAfter, warnings: Warning[], acc: Acc): Promise<void> {
    warnings.push(...after.warnings);
    for (const e of after.effects) {
      switch (e.type) {
        case 'start':
          await launch(e, after, warnings, acc);
          break;
        case 'queued':
          acc.queued = { position: e.position, holder: e.holder };
          acc.queuedOp = e.operation;
          break;
        case 'fence': {
          const moved = await move(e.operation, warnings, acc, () => fenceGrant(dir, e.token, mover(warnings)));
          if (moved !== null) await decideNow([{ type: 'base_recorded', operation: e.operation, token: e.token, branch: moved.branch }], warnings, acc);
          break;
        }
        case 'restore': {
          if (acc.fenced.has(e.operation)) break;
          const out = await move(e.operation, warnings, acc, () => restore(dir, { operation: e.operation, token: e.token, record: e.record }, mover(warnings)));
          if (out !== null) {
            const result = { applied: out.applied, notice: out.notice };
            await decideNow([{ type: 'restore_result', operation: e.operation, token: e.token, result }], warnings, acc);
          }
          break;
        }
        case 'park': {
          const result = await move(e.operation, warnings, acc, () =>
            park(dir, { operation: e.operation, base: e.base, token: e.token, now: now() }, mover(warnings)),
          );
          if (result === null) break;
          if (result.outcome === 'parked') acc.parked = result.record;
          await decideNow([{ type: 'park_result', operation: e.operation, token: e.token, result }], warnings, acc);
          break;
        }
        case 'schedule_tick':
          deps.scheduleTick?.(e.at);
          break;
        case 'warn':
          warnings.push({ class: e.class, reason: e.reason, thread: e.operation, message: e.message });
          break;
        case 'stop':
          await stopSessions(deps.db, e.sessions);
          break;
        case 'mark':
          // Status reads the mark from the lease state; nothing to do here.
          break;
      }
    }
  }

  /**
   * Runs a move of the mover. LEASE_FENCED means this node decided on a grant the repository no longer
   * honours: nothing moved. The lease is read again and decided once more (a tick); the grant's starts are
   * skipped, so no session ever starts in a checkout its grant does not hold.
   */
  async function move<T>(operation: string, warnings: Warning[], acc: Acc, fn: () => Promise<T>): Promise<T | null> {
    try {
      return await fn();
    } catch (err) {
      if (!isNexusError(err) || err.code !== 'LEASE_FENCED') throw err;
      // Said once per command, however often the decision asks for it again.
      if (acc.fenced.has(operation)) return null;
      acc.fenced.add(operation);
      warnings.push({
        class: 'step_skipped',
        reason: 'lease_fenced',
        thread: operation,
        message: `the working copy was not touched for ${operation}: ${err.message}`,
      });
      if (!acc.retried) {
        acc.retried = true;
        await tickIn(warnings, acc);
      }
      return null;
    }
  }

  async function launch(e: Extract<LeaseEffect, { type: 'start' }>, after: LeaseAfter, warnings: Warning[], acc: Acc): Promise<void> {
    const blocked = e.token !== null && acc.fenced.has(e.operation);
    const turns = e.triggers.flatMap((t) => after.planned.get(t.id) ?? []);
    for (const t of turns) t.lease = { token: e.token, notice: e.notice };
    const w: Warning[] = [];
    if (blocked) {
      // Recorded as started when decided: a start_failed warning lets the engine settle the turn it never ran.
      for (const t of turns.splice(0)) {
        w.push({
          class: 'step_skipped',
          reason: 'start_failed',
          role: t.session.role,
          session: t.session.id,
          thread: t.session.thread,
          message: `${t.session.handle} was not started: its grant of the working copy is no longer the repository's`,
        });
      }
    }
    const woke = await startTurns(deps, turns, w);
    warnings.push(...w);
    acc.woke.push(...woke);
    if (woke.length > 0) acc.startedOps.add(e.operation);
    if (!after.followed.has(e.operation)) return;
    // Every start is reported before the next command: the lease counts a start nobody reported as lost.
    const started = new Set(woke.map((x) => x.session));
    const reports: LeaseEvent[] = e.triggers.map((t: Trigger) => {
      const session = after.planned.get(t.id)?.session.id ?? after.running.get(t.id) ?? null;
      return session !== null && (started.has(session) || after.running.has(t.id))
        ? { type: 'session_started', operation: e.operation, thread: t.thread, session }
        : { type: 'start_failed', operation: e.operation, thread: t.thread };
    });
    await decideNow(reports, warnings, acc);
  }

  /** A tick decided in its own transaction, with the facts of the moment. */
  async function tickIn(warnings: Warning[], acc: Acc): Promise<void> {
    const after = await deps.db.transaction(async (tx) => {
      const state = await loadLease(tx, ws);
      if (state.holder === null && state.queue.length === 0 && state.pending === null && state.refusal === null) return null;
      const facts = await worldFacts(deps, tx, state);
      const d = await decideAll(tx, state, [{ type: 'tick', facts }]);
      const out = emptyAfter(d.effects, new Map(), d.state);
      const more = await planStarts(tx, d.effects, out.planned, out);
      await appendOps(tx, writer, [...more, ...factDrafts(d.facts)]);
      return out;
    });
    if (after !== null) await run(after, warnings, acc);
  }

  /** The lease's clock: contention, the bound, the dead-holder sweep, a refused park tried again. */
  async function tick(): Promise<Warning[]> {
    const warnings: Warning[] = [];
    await tickIn(warnings, newAcc());
    return warnings;
  }

  /** Asks each named session's current turn to stop: its supervisor ends the process group. */
  async function stopSessions(db: Exec, sessions: readonly string[]): Promise<void> {
    if (sessions.length === 0) return;
    const rows = await db
      .select()
      .from(tables.sessionProcs)
      .where(and(inArray(tables.sessionProcs.session, [...sessions]), isNull(tables.sessionProcs.endedAt)));
    for (const r of rows) deps.stopSession?.({ sidecarPid: r.sidecarPid, runtimePid: r.runtimePid });
  }

  return { hold, record, carryOut, tick, decideAll, planStarts, run: carryOut, stopSessions };
}

export type LeaseHook = ReturnType<typeof createLeaseHook>;

function emptyAfter(effects: LeaseEffect[], planned: Map<string, PlannedTurn>, state: LeaseState): LeaseAfter {
  return { appended: [], effects, planned, running: new Map(), followed: new Set(Object.keys(state.areas)), warnings: [] };
}
