// The seam for ordered runs (a channel's flow: sequential or steps:): which granted triggers may start now.
//
// Every trigger granted to the holder passes through here before it starts. A trigger without a run starts
// at once. Of the steps of one run, only the earliest waiting step may start, and only once every earlier step
// of that run has answered (or its window has lapsed) and its session is over; an earlier step whose start
// failed and is to be retried still owes, so it holds the later ones too. Channels describe their runs by
// putting `run: {id, step}` on each trigger; nothing else is needed from them.
import type { Area, ThreadFact, Trigger } from '../../../protocol/leases.js';

function busy(t: ThreadFact, now: number): boolean {
  const lapsed = t.window_ms !== null && now >= t.since + t.window_ms;
  return (t.owing && !lapsed) || t.proc === 'starting' || t.proc === 'running';
}

/** Splits granted triggers into those that may start now and those that stay in line, keeping their order. */
export function splitOrdered(area: Area, triggers: readonly Trigger[], now: number): { start: Trigger[]; hold: Trigger[] } {
  const start: Trigger[] = [];
  const hold: Trigger[] = [];
  const startedRuns = new Set<string>();
  // The earliest waiting step of each run is the only candidate for that run.
  const earliest = new Map<string, number>();
  for (const t of triggers) {
    if (t.run === null) continue;
    const seen = earliest.get(t.run.id);
    if (seen === undefined || t.run.step < seen) earliest.set(t.run.id, t.run.step);
  }
  for (const t of triggers) {
    if (t.run === null) {
      start.push(t);
      continue;
    }
    const run = t.run;
    const blocked =
      startedRuns.has(run.id) ||
      earliest.get(run.id) !== run.step ||
      Object.entries(area.threads).some(
        ([id, other]) => id !== t.thread && other.run?.id === run.id && other.run.step < run.step && busy(other, now),
      ) ||
      // Never two steps of one run side by side: a step still running keeps every other step of its run waiting.
      Object.entries(area.threads).some(
        ([id, other]) => id !== t.thread && other.run?.id === run.id && (other.proc === 'starting' || other.proc === 'running'),
      );
    if (blocked) hold.push(t);
    else {
      start.push(t);
      startedRuns.add(run.id);
    }
  }
  return { start, hold };
}
