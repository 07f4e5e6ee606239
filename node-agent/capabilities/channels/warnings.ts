// The receipt warnings a round raises, built in one place so each names its round and step.
import type { Warning } from '../../../protocol/receipts.js';
import type { RoundStatus } from '../../../protocol/round.js';
import { stepName, type Board } from './board.js';
import { nextDeadline } from './decide.js';
import type { StepRef } from './decide.js';

/** step_skipped for a step whose start failed: the round goes on without it, and nothing retries it. */
export function stepSkippedWarning(b: Board, s: StepRef, reason: string, message: string, where: { thread?: string; session?: string } = {}): Warning {
  return {
    class: 'step_skipped',
    reason,
    role: s.role,
    round: b.round,
    step: s.name,
    ...where,
    message: `step "${s.name}" of #${b.channel.name} was not started (${message}); the round goes on without it`,
  };
}

/** `tick_unscheduled` for a round whose window `deadline` is open and nothing keeps this workspace's clock. */
function unscheduled(round: string, channel: string, step: string | undefined, deadline: string, clock: { registered: boolean }): Warning {
  const missing = clock.registered
    ? 'no node is running (start one with `nxs node start`)'
    : 'this workspace is not registered with a node (`nxs node register`, then `nxs node start`)';
  return {
    class: 'tick_unscheduled',
    reason: clock.registered ? 'no_node' : 'not_registered',
    round,
    ...(step === undefined ? {} : { step }),
    message: `#${channel} has a step window open until ${deadline}, and nothing keeps this workspace's clock: ${missing}; the deadline is recorded, and \`nxc tick --thread ${round}\` checks it by hand`,
  };
}

/**
 * tick_unscheduled when a window of this round is open and nothing keeps the clock: the call did
 * what it was asked, the deadline is recorded, but nothing will lapse the step until a tick runs.
 * Null when no window is open or a node serves the workspace.
 */
export function tickUnscheduled(b: Board, clock: { registered: boolean; running: boolean }): Warning | null {
  const deadline = nextDeadline(b);
  if (deadline === null || (clock.registered && clock.running)) return null;
  const open = Object.values(b.steps).find((r) => (r.state === 'running' || r.state === 'on_hold') && r.deadline === deadline)!;
  return unscheduled(b.round, b.channel.name, stepName(b, open.step), deadline, clock);
}

/**
 * The same warning from a round's status row, for a caller that holds only the status (the CLI,
 * which alone knows whether a node keeps this workspace's clock). Null when no window is open or
 * a node serves the workspace.
 */
export function windowUnscheduled(s: RoundStatus, clock: { registered: boolean; running: boolean }): Warning | null {
  if (s.next_deadline === null || s.state !== 'running' || (clock.registered && clock.running)) return null;
  const open = s.steps.find((x) => (x.state === 'running' || x.state === 'on_hold') && x.deadline === s.next_deadline);
  return unscheduled(s.round, s.channel, open?.name, s.next_deadline, clock);
}
