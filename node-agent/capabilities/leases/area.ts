// Questions about one claim area (an operation the lease follows): does it owe, is it held for a hand-back,
// what is its bound, is anything in it alive, is it provably gone. Pure.
import { LEASE_TIMES, type Area, type ThreadFact, type Trigger, type WorldFacts } from '../../../protocol/leases.js';

export function threadsOf(area: Area): Array<[string, ThreadFact]> {
  return Object.entries(area.threads);
}

/** Somebody in the area still owes an answer. */
export function owes(area: Area): boolean {
  return threadsOf(area).some(([, t]) => t.owing);
}

/**
 * The thread whose hand-back holds the copy, or null: nothing owes, the newest discharge was a hand-back, and
 * a hand-back is still unanswered. (A chain that moved on past an escalation, answering its own requester,
 * does not hold: the last word was not a hand-back.)
 */
export function heldForHandback(area: Area): string | null {
  if (owes(area) || area.last_word !== 'handback') return null;
  const open = threadsOf(area).filter(([, t]) => t.handback !== null);
  if (open.length === 0) return null;
  // The newest hand-back is the one status names.
  open.sort(([a, x], [b, y]) => y.since - x.since || (a < b ? -1 : 1));
  return open[0]![0];
}

/** The operation is finished as far as the lease is concerned: nothing owes and no hand-back holds. */
export function finished(area: Area): boolean {
  return !owes(area) && heldForHandback(area) === null;
}

/**
 * The area's bound: the latest declared window still outstanding; a single outstanding obligation with no
 * window puts the whole area on the flat two hours, counted from its newest obligation. Null when nothing
 * owes (a copy held for a hand-back is governed by the contention clock, not by a bound).
 */
export function bound(area: Area): number | null {
  const open = threadsOf(area).filter(([, t]) => t.owing);
  if (open.length === 0) return null;
  if (open.some(([, t]) => t.window_ms === null)) {
    return Math.max(...open.map(([, t]) => t.since)) + LEASE_TIMES.flat_bound_ms;
  }
  return Math.max(...open.map(([, t]) => t.since + (t.window_ms ?? 0)));
}

/**
 * Whether anything in the area may still have a live process. A running session counts unless the worker can
 * tell liveness and says it is gone: a session whose liveness cannot be told counts as running until it
 * reports its end. A session being started counts while no facts are at hand; an event that brings facts
 * comes in a later command, and the engine reports every start (session_started or start_failed) before it
 * takes the next one, so a start still unreported then was lost with no process behind it.
 */
export function anyAlive(area: Area, facts: WorldFacts | null): boolean {
  const alive = facts?.liveness_known ? new Set(facts.alive) : null;
  return threadsOf(area).some(([, t]) => {
    if (t.proc === 'starting') return facts === null;
    if (t.proc !== 'running') return false;
    return alive === null || (t.session !== null && alive.has(t.session));
  });
}

/**
 * Whether the holder is provably gone. Strict on purpose, because taking a checkout away writes into it: the
 * worker can tell liveness; something owes; nothing has a live process; no owing thread's session reported an
 * end (an orderly shutdown is not a crash); nothing is on hold at an availability boundary; no owing thread is
 * a person's (a person may still answer); and nothing granted is still waiting to start.
 */
export function provablyDead(
  operation: string,
  area: Area,
  facts: WorldFacts,
  waiting: readonly Trigger[],
): boolean {
  if (!facts.liveness_known || waiting.length > 0) return false;
  const open = threadsOf(area).filter(([, t]) => t.owing);
  if (open.length === 0) return false;
  if (anyAlive(area, facts)) return false;
  if (open.some(([, t]) => t.proc === 'ended' || t.person)) return false;
  return !facts.boundary.includes(operation);
}

/** Whether `thread` lies strictly beneath `above` in the area's tree. */
export function isBelow(area: Area, thread: string, above: string): boolean {
  let at = area.threads[thread]?.parent ?? null;
  for (let hops = 0; at !== null && hops < 10_000; hops++) {
    if (at === above) return true;
    at = area.threads[at]?.parent ?? null;
  }
  return false;
}

/** The sessions of the area that may still run: what a withdrawal asks to stop. */
export function liveSessions(area: Area): string[] {
  return threadsOf(area)
    .filter(([, t]) => (t.proc === 'running' || t.proc === 'starting') && t.session !== null)
    .map(([, t]) => t.session!);
}
