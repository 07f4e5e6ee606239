// nxc's verbs: each turns argv into a command of protocol/commands.ts and renders the answer. The program
// (nxc.ts) adds the completion verb; a node runs these for the clients that hand a verb over (handover.ts).
import { NexusError } from '../../protocol/errors.js';
import { qualifyHandle } from '../../protocol/ids.js';
import { exitCodeOf, type Warning } from '../../protocol/receipts.js';
import type { RoundStatus } from '../../protocol/round.js';
import { windowUnscheduled } from '../capabilities/channels/warnings.js';
import { findWorkspace, type Workspace } from '../adapters/workspace/index.js';
import { isRegistered, nodePaths, runningNode } from '../host/node/files.js';
import { callerFromEnv, messageText, printJson, routerOf, type Io } from './io.js';
import { bool, str, verbPath, type Verb } from './spec.js';
import { WAIT_VERB, watchStatus } from './watch-cmd.js';
import { paintFor } from './colour.js';
import { renderGuide, renderReceipt, renderStatus, renderThread, renderTranscript, renderWithdraw, type Viewer } from './render.js';
import { visible, visibleDeep } from './visible.js';

const transcriptShow: Verb = {
  path: verbPath('transcripts.show'),
  args: '<session>',
  command: 'transcripts.show',
  arity: [1, 1],
  flags: { turn: { type: 'string', value: 'N', help: 'which turn (default: the latest that has a transcript)' } },
  details:
    'A transcript holds raw tool inputs and results: treat it like the workspace database, not like a message log.\n' +
    'It never leaves this machine, and it is not gated by membership: its file (mode 600) is the boundary.',
  run: async (io, a) => {
    const turnText = str(a, 'turn');
    if (turnText !== undefined && !/^[1-9]\d{0,6}$/.test(turnText)) throw new NexusError('USAGE', `--turn must be a turn number (1, 2, ...), got ${JSON.stringify(turnText)}`);
    const ws = findWorkspace(io.cwd, io.env);
    const input = { session: a.positionals[0]!, turn: turnText === undefined ? null : Number(turnText) };
    const t = (await routerOf(io)(ws, (run) => run('transcripts.show', input), io.env)).result;
    if (a.json) printJson(io, t);
    else io.stdout(renderTranscript(visibleDeep(t)));
  },
};

const guidePersonas: Verb = {
  path: verbPath('guide.personas'),
  command: 'guide.personas',
  run: async (io, a) => {
    const ws = findWorkspace(io.cwd, io.env);
    const g = (await routerOf(io)(ws, (run) => run('guide.personas', {}), io.env)).result;
    if (a.json) printJson(io, g);
    else io.stdout(renderGuide(visibleDeep(g)));
  },
};

const whoami: Verb = {
  path: verbPath('whoami'),
  command: 'whoami',
  run: async (io, a) => {
    const ws = findWorkspace(io.cwd, io.env);
    const w = (await routerOf(io)(ws, (run) => run('whoami', { caller: callerFromEnv(io.env) }), io.env)).result;
    if (a.json) return printJson(io, w);
    const who = w.session === null ? `${w.handle}, a person` : `${w.handle}, session ${w.session} of operation ${w.operation}`;
    io.stdout(`${who} · depth ${w.depth}${w.reply_only ? ' · may only reply' : ''} · workspace ${w.workspace}\n`);
  },
};

const send: Verb = {
  path: verbPath('send'),
  args: "<role | @person | workspace/role | '#channel'> [TEXT | -]",
  command: 'send',
  arity: [1, 2],
  flags: { subject: { type: 'string', short: 's', value: 'S', help: 'what the message is about (a send without one still posts, with refs_warning)' } },
  details:
    'TEXT absent or "-" reads the message from stdin (a heredoc works).\n' +
    "'#name' asks the channel declared in .nxs-channels/<name>.yaml for one round; quote it, since an unquoted # starts a comment in sh.",
  run: async (io, a) => {
    const [to, text] = a.positionals as [string, string | undefined];
    const subject = str(a, 'subject');
    if (subject !== undefined && subject.trim() === '') throw new NexusError('USAGE', '--subject needs text');
    const caller = callerFromEnv(io.env);
    const body = await messageText(io, text);
    const ws = findWorkspace(io.cwd, io.env);
    const r = await routerOf(io)(ws, (run) => run('send', { to, subject: subject ?? null, text: body, caller }), io.env);
    const receipt = withWindowWarning(io, ws, withServiceWarning(r.result, r.serviceWarning), r.result.round);
    if (a.json) printJson(io, receipt);
    else io.stdout(renderReceipt(visibleDeep(receipt)));
    return exitCodeOf(receipt.warnings);
  },
};

const reply: Verb = {
  path: verbPath('reply'),
  args: '[TEXT | -]',
  command: 'reply',
  summary: 'answer a thread, hand it back up with --escalate, or send a channel step back with --needs-rework',
  arity: [0, 1],
  flags: {
    thread: { type: 'string', short: 't', value: 'ID', help: 'the thread to answer (required)', required: true },
    escalate: { type: 'boolean', help: 'hand the task back up: "I cannot reach the result on my own, or this needs a decision"' },
    'needs-rework': {
      type: 'boolean',
      help: 'a channel step that declares rework: sends the work it assessed back (TEXT says why)',
    },
  },
  details: 'TEXT absent or "-" reads the message from stdin (a heredoc works).',
  run: async (io, a) => {
    const thread = str(a, 'thread');
    if (thread === undefined) throw new NexusError('USAGE', 'nxc reply needs --thread <id>');
    const rework = bool(a, 'needs-rework');
    if (rework && bool(a, 'escalate')) throw new NexusError('USAGE', '--needs-rework and --escalate cannot go together: send the work back, or hand the task up');
    const caller = callerFromEnv(io.env);
    const body = await messageText(io, a.positionals[0]);
    const ws = findWorkspace(io.cwd, io.env);
    const input = { thread, escalate: bool(a, 'escalate'), ...(rework ? { needs_rework: true } : {}), text: body, caller };
    const r = await routerOf(io)(ws, (run) => run('reply', input), io.env);
    const receipt = withWindowWarning(io, ws, withServiceWarning(r.result, r.serviceWarning), r.result.round);
    if (a.json) printJson(io, receipt);
    else io.stdout(renderReceipt(visibleDeep(receipt)));
    return exitCodeOf(receipt.warnings);
  },
};

const status: Verb = {
  path: verbPath('status'),
  command: 'status',
  summary: 'open operations (--all: finished ones too), thread by thread',
  flags: {
    all: { type: 'boolean', short: 'a', help: 'finished operations too' },
    watch: { type: 'boolean', short: 'w', help: 'redraw whenever something changes, until Ctrl-C' },
  },
  run: async (io, a) => {
    const ws = findWorkspace(io.cwd, io.env);
    if (bool(a, 'watch')) {
      if (a.json) throw new NexusError('USAGE', '--watch draws for people; scripts use nxc wait, or nxc status --json in a loop');
      return watchStatus(io, ws, bool(a, 'all'), (r) => renderStatus(visibleDeep(r), viewerOf(io, ws)));
    }
    const report = (await routerOf(io)(ws, (run) => run('status', { all: bool(a, 'all') }), io.env)).result;
    if (a.json) printJson(io, report);
    else io.stdout(renderStatus(visibleDeep(report), viewerOf(io, ws)));
  },
};

const done: Verb = {
  path: verbPath('done'),
  args: '<operation | thread>',
  command: 'done',
  arity: [1, 1],
  details:
    'Marks the result read: the operation awaits you no more (awaiting_human is false on every workspace that holds it),\n' +
    'it leaves Needs you on the dashboard and the count of finished operations in nxc status; nxc status --all still lists it.\n' +
    'Nothing is posted and nobody is woken, so a reply that only says thanks is not needed. A newer answer awaits you again.\n' +
    'Any thread of the operation names it; only the person who opened it, in the workspace that opened it, may.',
  run: async (io, a) => {
    const caller = callerFromEnv(io.env);
    const ws = findWorkspace(io.cwd, io.env);
    const done = (await routerOf(io)(ws, (run) => run('done', { thread: a.positionals[0]!, caller }), io.env)).result;
    if (a.json) return printJson(io, done);
    const r = visibleDeep(done);
    const what = `operation ${r.operation}${r.subject ? ` "${r.subject}"` : ''}${r.answered_by ? ` (answered by ${r.answered_by})` : ''}`;
    io.stdout(r.op === null ? `${what} was already marked read: nothing written\n` : `marked read: ${what}; it awaits nobody now (nxc status --all still lists it)\n`);
  },
};

const threadsShow: Verb = {
  path: verbPath('threads.show'),
  args: '<id>',
  command: 'threads.show',
  arity: [1, 1],
  run: async (io, a) => {
    const ws = findWorkspace(io.cwd, io.env);
    const view = (await routerOf(io)(ws, (run) => run('threads.show', { thread: a.positionals[0]! }), io.env)).result;
    if (a.json) printJson(io, view);
    else io.stdout(renderThread(visibleDeep(view)));
  },
};

const tick: Verb = {
  path: verbPath('tick'),
  command: 'tick',
  summary: 'do the clock’s work now: settle dead turns, run the working-copy lease’s timers, check that a round’s step windows have a clock (the node does this on its own)',
  flags: { thread: { type: 'string', short: 't', value: 'ID', help: 'also check the clock of this round’s windows' } },
  run: async (io, a) => {
    const thread = str(a, 'thread');
    const ws = findWorkspace(io.cwd, io.env);
    const r = await routerOf(io)(
      ws,
      async (run) => {
        const view = thread !== undefined ? await run('threads.show', { thread }) : null;
        const done = await run('tick', {});
        // The round's thread is checked after the tick, so its windows are as the tick left them.
        const round = view?.thread.round !== undefined ? (await run('threads.show', { thread: thread! })).thread.round : undefined;
        return { ...done, round };
      },
      io.env,
    );
    const base = { warnings: [...(r.result.warnings ?? []), ...(r.serviceWarning ? [r.serviceWarning] : [])] };
    const { warnings } = withWindowWarning(io, ws, base, r.result.round);
    const out = { ticked: true, via: r.via, settled: r.result.settled, thread: thread ?? null, warnings };
    if (a.json) printJson(io, out);
    else {
      io.stdout(`tick done via ${r.via}: ${r.result.settled} dead turn(s) settled\n`);
      for (const w of warnings) io.stdout(`warning ${w.class}: ${visible(w.message)}\n`);
    }
    return exitCodeOf(warnings);
  },
};

const withdraw: Verb = {
  path: verbPath('withdraw'),
  command: 'withdraw',
  flags: { thread: { type: 'string', short: 't', value: 'ID', help: "the operation's first thread: the one your send handed back (required)", required: true } },
  details:
    'Discharges every open thread of the operation, asks its sessions to stop, and once they are gone parks what they\n' +
    'left uncommitted onto a branch and hands the working copy on. A later message in the same thread brings the work back.',
  run: async (io, a) => {
    const thread = str(a, 'thread');
    if (thread === undefined) throw new NexusError('USAGE', 'nxc withdraw needs --thread <id>');
    const caller = callerFromEnv(io.env);
    const ws = findWorkspace(io.cwd, io.env);
    const r = await routerOf(io)(ws, (run) => run('withdraw', { thread, caller }), io.env);
    const out = withServiceWarning(r.result, r.serviceWarning);
    if (a.json) printJson(io, out);
    else io.stdout(renderWithdraw(visibleDeep(out)));
  },
};

/**
 * tick_unscheduled: a channel round has a step window open and no node keeps this workspace's
 * clock, so nothing lapses the step on its own. A persona's turn timeout is not such a deadline:
 * the turn's sidecar stops the process at it with or without a node, so it raises nothing here.
 */
function withWindowWarning<T extends { warnings: Warning[] }>(io: Io, ws: Workspace, receipt: T, round?: RoundStatus): T {
  if (round === undefined) return receipt;
  const paths = nodePaths(io.env['NEXUS_HOME'] ? io.env['NEXUS_HOME'] : undefined);
  const warning = windowUnscheduled(round, { registered: isRegistered(paths, ws.id), running: runningNode(paths) !== null });
  return warning === null ? receipt : { ...receipt, warnings: [...receipt.warnings, warning] };
}

/** The person reading, as this workspace and others name them; "you" in status is only ever them. */
function viewerOf(io: Io, ws: Workspace): Viewer {
  let actor: string | null = null;
  try {
    actor = callerFromEnv(io.env).actor;
  } catch {
    // A malformed NXC_ACTOR is refused by the commands that act; reading status names nobody "you".
  }
  return { you: actor === null ? [] : [actor, qualifyHandle(actor, ws.short)], paint: paintFor(io.stdoutIsTty, io.env) };
}

/** The service warning rides every send, reply and tick of a registered workspace while no node runs. */
function withServiceWarning<T extends { warnings: Warning[] }>(receipt: T, warning: Warning | null): T {
  return warning === null ? receipt : { ...receipt, warnings: [...receipt.warnings, warning] };
}

/** What nxc says of itself in its help. */
export const NXC_ABOUT = {
  name: 'nxc',
  summary: 'talk to personas and people in a Nexus workspace',
  footer: 'Identity: NXC_ACTOR names a person; sessions get NXC_SESSION, NXC_HOP, NXC_ACTOR set for them.',
} as const;

/** Every nxc verb but completion (which needs the table of nxs too). */
export const NXC_VERBS: readonly Verb[] = [send, reply, done, status, threadsShow, withdraw, tick, transcriptShow, guidePersonas, whoami, WAIT_VERB];
