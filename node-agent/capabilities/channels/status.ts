// How `nxc status` and `nxc threads show` present a round: a JSON row and one line of text.
import type { RoundStatus, RoundStepStatus } from '../../../protocol/round.js';
import { escalates, inFlight, ownerIndex, ownerRecord, passesUsed, runRecords, stepName, type Board, type StepRecord } from './board.js';
import { holdsForHandBack, nextDeadline } from './decide.js';

function stepState(b: Board, r: StepRecord | null): RoundStepStatus['state'] {
  if (r === null) return b.completed !== null ? 'not_reached' : 'pending';
  if (r.state !== 'answered') return r.state;
  if (r.outcome === 'needs_rework' && !escalates(b, r)) return 'needs_rework';
  return escalates(b, r) ? 'escalated' : 'answered';
}

function row(b: Board, step: number, r: StepRecord | null): RoundStepStatus {
  const spec = b.channel.steps[step];
  return {
    name: stepName(b, step),
    kind: spec === undefined ? 'owner' : 'member',
    address: spec?.address ?? b.channel.owner ?? '',
    handle: r?.handle ?? null,
    pass: r?.pass ?? null,
    state: stepState(b, r),
    thread: r?.thread ?? null,
    session: r?.session ?? null,
    running: r !== null && inFlight(r) && r.session !== null,
    window_ms: r?.window_ms ?? null,
    deadline: r?.deadline ?? null,
    reason: r?.reason ?? null,
    warning: r?.state === 'lapsed' ? 'step_unanswered' : r?.state === 'skipped' ? 'step_skipped' : null,
  };
}

/** The round as status shows it: the current run in declared order, the owner's fold last. */
export function roundStatus(b: Board): RoundStatus {
  const steps = runRecords(b).map((r, i) => row(b, i, r));
  const owner = ownerIndex(b);
  if (owner !== null) steps.push(row(b, owner, ownerRecord(b)));
  return {
    round: b.round,
    channel: b.channel.name,
    flow: b.channel.flow,
    state: b.completed === null ? 'running' : b.completed.outcome,
    reason: b.completed?.reason ?? null,
    requester: b.requester.handle,
    pass: b.pass,
    passes_used: passesUsed(b),
    passes_limit: b.channel.passes,
    steps,
    next_deadline: nextDeadline(b),
    holds_hand_back: holdsForHandBack(b),
    boundary: b.completed?.boundary ?? null,
  };
}

/** One line for the text status: `#review running · pass 2 of 3 · coder answered · reviewer running (until 12:30:00Z)`. */
export function renderRoundLine(s: RoundStatus): string {
  const head = s.state === 'running' ? 'running' : `${s.state} (${s.reason})`;
  const pass = s.steps.some((x) => x.state === 'needs_rework') || s.passes_used > 1 ? ` · pass ${s.passes_used} of ${s.passes_limit}` : '';
  const steps = s.steps.map((x) => {
    const until = x.state === 'running' || x.state === 'on_hold' ? (x.deadline ? ` (until ${x.deadline.slice(11, 19)}Z)` : ' (no window)') : '';
    const why = x.state === 'skipped' || x.state === 'held' ? ` (${x.reason})` : x.warning !== null ? ` (${x.warning})` : '';
    return `${x.name} ${x.state.replace('_', ' ')}${until}${why}`;
  });
  const hold = s.holds_hand_back ? ' · handed back: reply in this thread to ask again' : '';
  return `#${s.channel} ${head}${pass} · ${steps.join(' · ')}${hold}`;
}
