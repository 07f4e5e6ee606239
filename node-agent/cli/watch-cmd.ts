// Watching from a script or a terminal, so nobody has to poll: `nxc wait --thread <id>` returns when the
// thread is answered (its exit code says how), and `nxc status --watch` redraws when anything changes.
// Both ask the workspace's existing commands (threads.show, status) every so often: through the node
// that is one small request; without a node, a short store open.
import { NexusError } from '../../protocol/errors.js';
import { waitOutcome, type StatusReport, type StatusRow, type WaitOutcome } from '../../protocol/receipts.js';
import { findWorkspace, type Workspace } from '../adapters/workspace/index.js';
import { Outcome, printJson, routerOf, untilStopped, type Io } from './io.js';
import { str, type Verb } from './spec.js';
import { visible } from './visible.js';

/** The exit codes of `nxc wait`, beside 0 (answered) and the usual 1 and 2. */
export const WAIT_EXIT = { escalated: 3, timed_out: 4 } as const;

export type { WaitOutcome };

/** What an answered thread means for whoever waited: escalated (a refusal is one too) or answered. */
export const outcomeOf = waitOutcome;

/** `--timeout S`: seconds (a fraction allowed), or none: wait for ever. */
export function timeoutOption(raw: string | undefined): number | null {
  if (raw === undefined) return null;
  const s = /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : NaN;
  if (!(s > 0)) throw new NexusError('USAGE', `--timeout needs a number of seconds above 0 (got ${JSON.stringify(raw)})`);
  return s * 1000;
}

/** How often to ask: a node answers a request cheaply; without one, each look opens the store (PGlite). */
const DIRECT_EVERY_MS = 2_000;

const pause = (ms: number, stop: Promise<void>) => Promise.race([new Promise<void>((r) => setTimeout(r, ms)), stop]);

async function wait(io: Io, ws: Workspace, thread: string, timeoutMs: number | null, json: boolean, everyMs: number): Promise<void> {
  const deadline = timeoutMs === null ? Infinity : Date.now() + timeoutMs;
  const signal = untilStopped();
  let stopped = false;
  void signal.stopped.then(() => (stopped = true));
  try {
    for (;;) {
      const r = await routerOf(io)(ws, (run) => run('threads.show', { thread }), io.env);
      const view = r.result;
      const outcome = outcomeOf(view.thread);
      const over = outcome === null && (Date.now() >= deadline || stopped);
      if (outcome !== null || over) {
        const said = outcome ?? 'timed_out';
        if (json) printJson(io, { outcome: said, thread: view.thread });
        else io.stdout(visible(`${thread}: ${describe(said, view.thread)}\n`));
        if (said === 'answered') return;
        throw new Outcome(said === 'timed_out' ? WAIT_EXIT.timed_out : WAIT_EXIT.escalated);
      }
      const every = r.via === 'node' ? everyMs : Math.max(everyMs, DIRECT_EVERY_MS);
      await pause(Math.min(every, Math.max(0, deadline - Date.now())), signal.stopped);
    }
  } finally {
    signal.dispose();
  }
}

function describe(outcome: WaitOutcome, row: StatusRow): string {
  switch (outcome) {
    case 'answered':
      return `answered by ${row.answered_by ?? '?'}`;
    case 'escalated':
      return `escalated by ${row.answered_by ?? '?'}: it needs a decision (nxc threads show ${row.thread})`;
    case 'refused':
      return `refused: ${row.rejected_code}${row.rejected_reason ? `: ${row.rejected_reason}` : ''}`;
    case 'timed_out':
      return `still open (owed by ${row.to}); gave up waiting`;
  }
}

/** The part of a status that, when it changes, is worth a redraw (not the clock of the last update). */
function fingerprint(report: StatusReport): string {
  return JSON.stringify(report.operations.map((o) => [o.operation, o.finished, o.threads.map((t) => [t.thread, t.state, t.escalated, t.messages, t.session?.running, t.session?.turn, t.rejected_code])]));
}

/**
 * Redraws the status whenever it changes, until Ctrl-C. On a terminal the screen is cleared and
 * drawn again; elsewhere each new picture is printed under a timestamped line.
 */
export async function watchStatus(io: Io, ws: Workspace, all: boolean, render: (r: StatusReport) => string, everyMs = 1_000): Promise<void> {
  const signal = untilStopped();
  let stopped = false;
  void signal.stopped.then(() => (stopped = true));
  let last = '';
  try {
    while (!stopped) {
      const r = await routerOf(io)(ws, (run) => run('status', { all }), io.env);
      const report = r.result;
      const now = fingerprint(report);
      if (now !== last) {
        last = now;
        const stamp = `nxc status${all ? ' --all' : ''} · ${new Date().toISOString()} · Ctrl-C to stop`;
        if (io.stdoutIsTty) io.stdout(`\x1b[H\x1b[2J${stamp}\n\n${render(report)}`);
        else io.stdout(`--- ${stamp}\n${render(report)}`);
      }
      await pause(r.via === 'node' ? everyMs : Math.max(everyMs, DIRECT_EVERY_MS), signal.stopped);
    }
  } finally {
    signal.dispose();
  }
}

export const WAIT_VERB: Verb = {
  path: ['wait'],
  summary: 'wait until a thread is answered; the exit code says how (0 answered, 3 escalated or refused, 4 timed out)',
  flags: {
    thread: { type: 'string', short: 't', value: 'ID', help: 'the thread to wait for (required)', required: true },
    timeout: { type: 'string', value: 'S', help: 'give up after S seconds (exit 4); default: wait for ever' },
  },
  details:
    'Exit codes: 0 answered; 3 answered with an escalation (a hand-back that needs a decision, or a commission\n' +
    'another workspace refused); 4 still open when --timeout ran out (or on Ctrl-C); 2 a refusal such as UNKNOWN_THREAD.',
  run: async (io, a) => {
    const thread = str(a, 'thread');
    if (thread === undefined) throw new NexusError('USAGE', 'nxc wait needs --thread <id>');
    const timeoutMs = timeoutOption(str(a, 'timeout'));
    await wait(io, findWorkspace(io.cwd, io.env), thread, timeoutMs, a.json, 500);
  },
};
