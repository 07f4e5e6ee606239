// Human-readable renderings of receipts, status reports and threads. --json prints the objects instead.
import type { PersonaGuide, Transcript } from '../../protocol/commands.js';
import { qualifyHandle, workspaceShort, type WorkspaceId } from '../../protocol/ids.js';
import { windowText } from '../../protocol/round.js';
import type { LastRun, OperationLease, Receipt, StatusReport, StatusRow, ThreadView, WithdrawResult, WrittenBy } from '../../protocol/receipts.js';
import { describeTree, describeWorkingCopy } from '../adapters/git/index.js';
import { renderRoundLine } from '../capabilities/channels/status.js';
import { PLAIN, type Paint } from './colour.js';

/** Who reads a status: the handles that are "you" (the actor, bare and as other workspaces name it), and the colours. */
export type Viewer = { you: readonly string[]; paint: Paint };

const NOBODY: Viewer = { you: [], paint: PLAIN };

/** The workspace a session or qualified handle names (`ab12/coder`, `alice@ab12`), for "refused by ...". */
function workspaceOf(handle: string): string {
  return handle.includes('/') ? handle.slice(0, handle.indexOf('/')) : handle.slice(handle.indexOf('@') + 1);
}

export function renderReceipt(r: Receipt): string {
  const lines = [`posted ${r.message} in ${r.thread} (operation ${r.operation})`];
  if (r.woke) lines.push(`woke ${r.woke.handle} · session ${r.woke.session} · depth ${r.woke.depth} · turn ${r.woke.turn} · pid ${r.woke.pid ?? '?'}`);
  else if (r.queued) {
    lines.push(
      `queued for the working copy: position ${r.queued.position}, behind operation ${r.queued.holder.operation} (thread ${r.queued.holder.thread}); it starts when the copy is free`,
    );
  } else if (r.remote) lines.push(`sent to ${r.remote.role} in workspace ${r.remote.workspace}: its node admits or refuses it`);
  else lines.push('woke nobody');
  lines.push(`working copy: ${r.working_copy_note}`);
  if (r.refs_warning) lines.push(`note: ${r.refs_warning}`);
  if (r.round) lines.push(`round: ${renderRoundLine(r.round)}`);
  for (const w of r.warnings) lines.push(`warning ${w.class}${w.reason ? ` (${w.reason})` : ''}: ${w.message}`);
  return lines.join('\n') + '\n';
}

function rowSuffix(row: StatusRow, lease: OperationLease | null, root: boolean): string {
  const unsandboxed = row.session?.sandbox === 'off' ? ' · NO SANDBOX (sandbox: off)' : '';
  const parked = lease?.state === 'parked' ? lease.parked : null;
  // Once the operation is parked its work is on the park branch: a dirty tree recorded earlier is saved there now.
  const where = parked === null ? '' : ` · work parked on ${parked.branch} at ${parked.commit.slice(0, 12)}`;
  if (row.working_copy === null) return unsandboxed + (root ? where : '');
  const tree = parked !== null && row.working_copy.dirty ? describeTree({ ...row.working_copy, dirty: false }) : describeTree(row.working_copy);
  return `${unsandboxed} · tree ${tree}${root || row.working_copy.dirty ? where : ''}`;
}

/** Who wrote an answer's text, when it was not the agent itself. */
const WRITERS: Record<WrittenBy, string | null> = { agent: null, runtime: 'answer written by the runtime', sidecar: 'answer written by the sidecar' };

/** A session's last run in a few words: `last run budget_exhausted · 3 model calls, 3 tool calls`. */
export function lastRunText(run: LastRun): string {
  const u = run.usage;
  const tokens = u.tokens_in + u.tokens_out > 0 ? `, ${u.tokens_in + u.tokens_out} tokens` : '';
  return `last run ${run.status} · ${u.model_calls} model call${u.model_calls === 1 ? '' : 's'}, ${u.tool_calls} tool call${u.tool_calls === 1 ? '' : 's'}${tokens}`;
}

/**
 * Who a finished root awaits, as the reader sees it: "you" only for the person reading, in the workspace
 * that opened the operation; another workspace's person is named with that workspace's short.
 */
function awaitedBy(row: StatusRow, here: string, viewer: Viewer): string {
  const home = row.awaiting_workspace ?? here;
  if (home !== here) return qualifyHandle(row.opener, workspaceShort(home as WorkspaceId));
  return viewer.you.includes(row.opener) ? 'you' : row.opener;
}

/**
 * A handle as this workspace should read it: a bare person's name in a thread another workspace opened is that
 * workspace's person (`alice@ab23`), never one of ours.
 */
function handleIn(handle: string, row: StatusRow, here: string): string {
  return row.opened_in === here ? handle : qualifyHandle(handle, workspaceShort(row.opened_in as WorkspaceId));
}

function rowText(row: StatusRow, here: string, viewer: Viewer): string {
  const { paint } = viewer;
  const parts: string[] = [];
  // A refusal is nobody's answer: it says who refused and why, not "answered by" a persona that may not exist.
  const outcome = row.rejected_code
    ? `refused by ${workspaceOf(row.to)}`
    : row.withdrawn
      ? `withdrawn by ${row.answered_by ?? '?'}`
      : `answered by ${row.answered_by ?? '?'}`;
  if (row.awaiting_human) parts.push(paint.yellow(`awaiting ${awaitedBy(row, here, viewer)}`) + ` (${outcome})`);
  else if (row.state === 'answered') parts.push(row.done ? `${outcome} · read (nxc done)` : outcome);
  else parts.push(`owed by ${handleIn(row.to, row, here)}`);
  if (row.untrusted) parts.push(paint.red(`UNTRUSTED: opened by ${workspaceShort(row.opened_in as WorkspaceId)}, a workspace this one does not trust`));
  if (row.rejected_code) parts.push(paint.red(`REFUSED ${row.rejected_code}`));
  else if (row.escalated) parts.push(paint.red('ESCALATED'));
  // A withdrawal is its sender's act, not anybody's answer: who wrote the discharge is not news.
  const writer = row.withdrawn || row.written_by === null ? null : WRITERS[row.written_by];
  if (writer !== null) parts.push(writer);
  if (row.waiting_on_sub_round) parts.push('waiting on its own round');
  if (row.session) parts.push(`depth ${row.session.depth}${row.session.running ? ' · running' : ''}`);
  if (row.session?.last_run) parts.push(lastRunText(row.session.last_run));
  if (row.step) parts.push(`step "${row.step.name}" of #${row.step.channel}, pass ${row.step.pass}`);
  return parts.join(' · ');
}

/** Turns used of the operation budget; at the budget nothing more starts there, which a person must see. */
function turnsText(op: StatusReport['operations'][number], viewer: Viewer): string {
  const text = `turns ${op.turns.used} of ${op.turns.budget}`;
  return op.turns.used >= op.turns.budget ? viewer.paint.red(`${text} (budget used up)`) : text;
}

/** `2 finished operations await you`: what the default listing leaves out and a person here must still read. */
function awaitingLines(report: StatusReport, viewer: Viewer): string[] {
  const mine = report.finished_awaiting.filter((a) => viewer.you.includes(a.opener));
  const others = report.finished_awaiting.filter((a) => !viewer.you.includes(a.opener));
  const more = report.finished_awaiting_more === true ? 'more than ' : '';
  const n = (k: number) => `${more}${k} finished operation${k === 1 && more === '' ? '' : 's'} await${k === 1 && more === '' ? 's' : ''}`;
  const lines: string[] = [];
  if (mine.length > 0) lines.push(viewer.paint.yellow(`${n(mine.length)} you`) + ': nxc status --all');
  if (others.length > 0) {
    const names = [...new Set(others.map((a) => a.opener))];
    lines.push(`${n(others.length)} ${names.length === 1 ? names[0] : `other people here (${names.join(', ')})`}: nxc status --all`);
  }
  return lines;
}

/** One counted line for the operations opened by workspaces this one does not trust, which the default listing leaves out. */
function untrustedLine(report: StatusReport): string[] {
  const u = report.untrusted;
  if (u.operations === 0) return [];
  const shorts = u.workspaces.map((w) => workspaceShort(w as WorkspaceId));
  const by = shorts.length <= 3 ? shorts.join(', ') : `${shorts.slice(0, 3).join(', ')} and ${shorts.length - 3} more`;
  const who = shorts.length === 1 ? 'a workspace' : `${shorts.length} workspaces`;
  return [`${u.operations} operation${u.operations === 1 ? '' : 's'} opened by ${who} this one does not trust (${by}), owed by nobody here: nxc status --all lists them`];
}

/** Dollars as a person reads them: cents, or four places below a dollar. */
export function moneyText(n: number): string {
  return `$${n.toFixed(n < 1 ? 4 : 2)}`;
}

/** Tokens and cost against the operation's budgets: `tokens 12400 of 50000 · cost $0.0312 (2 turns unpriced)`. */
function usageText(op: StatusReport['operations'][number], viewer: Viewer): string {
  const u = op.usage;
  if (u === undefined) return '';
  const over = (u.budget.max_tokens !== null && u.tokens >= u.budget.max_tokens) || (u.budget.max_cost !== null && u.cost >= u.budget.max_cost);
  const tokens = `tokens ${u.tokens}${u.budget.max_tokens === null ? '' : ` of ${u.budget.max_tokens}`}`;
  const cost = `cost ${moneyText(u.cost)}${u.budget.max_cost === null ? '' : ` of ${moneyText(u.budget.max_cost)}`}${u.unpriced_turns > 0 ? ` (${u.unpriced_turns} turn${u.unpriced_turns === 1 ? '' : 's'} unpriced)` : ''}`;
  const text = `${tokens} · ${cost}`;
  return ' · ' + (over ? viewer.paint.red(`${text} (budget used up)`) : text);
}

/** The workspace's spend today against its daily ceiling, when it declares one or has spent anything. */
function todayText(report: StatusReport): string | null {
  const t = report.spend_today;
  if (t === undefined || (t.tokens === 0 && t.cost === 0 && t.budget.max_tokens === null && t.budget.max_cost === null)) return null;
  const tokens = `${t.tokens}${t.budget.max_tokens === null ? '' : ` of ${t.budget.max_tokens}`} tokens`;
  const cost = `${moneyText(t.cost)}${t.budget.max_cost === null ? '' : ` of ${moneyText(t.budget.max_cost)}`}`;
  return `spent today (${t.day} UTC): ${tokens}, ${cost}; resets at ${t.resets_at}`;
}

/** One turn's end as `threads show` lists it: `turn 2 replied · 1200 in, 340 out · $0.0120 (runtime)`. */
export function turnText(t: NonNullable<ThreadView['turns']>[number]): string {
  const u = t.usage;
  if (u === null) return `turn ${t.turn} ${t.outcome} · no usage reported`;
  const cost = u.cost === null ? 'cost unknown' : `${moneyText(u.cost)} (${u.cost_source ?? '?'})`;
  return `turn ${t.turn} ${t.outcome} · ${u.tokens_in} in, ${u.tokens_out} out (${u.tokens_source}) · ${cost}${u.model === null ? '' : ` · ${u.model}`}`;
}

export function renderStatus(report: StatusReport, viewer: Viewer = NOBODY): string {
  const lines: string[] = [];
  const held = awaitingLines(report, viewer);
  if (report.operations.length === 0) lines.push(held.length > 0 ? 'no open operations' : 'no open operations (nxc status --all shows finished ones)');
  for (const op of report.operations) {
    const subject = op.subject ? ` "${op.subject}"` : '';
    const root = op.threads.find((r) => r.thread === op.operation) ?? op.threads[0];
    const foreign = op.untrusted && root !== undefined ? ` · ${viewer.paint.red(`opened by untrusted workspace ${workspaceShort(root.opened_in as WorkspaceId)}`)}` : '';
    lines.push(viewer.paint.bold(`operation ${op.operation}${subject}`) + `  ${op.threads.length} thread(s), ${op.open} open · ${turnsText(op, viewer)}${usageText(op, viewer)}${op.finished ? ' · finished' : ''}${foreign}`);
    if (op.lease !== null) lines.push(`  working copy: ${op.lease.text}`);
    const depthOf = new Map<string, number>();
    for (const row of op.threads) {
      const indent = row.parent !== null && depthOf.has(row.parent) ? depthOf.get(row.parent)! + 1 : 0;
      depthOf.set(row.thread, indent);
      lines.push(`${'  '.repeat(indent + 1)}${row.thread}  ${handleIn(row.opener, row, report.workspace.id)} -> ${handleIn(row.to, row, report.workspace.id)}  ${rowText(row, report.workspace.id, viewer)}${rowSuffix(row, op.lease, row.thread === op.operation)}`);
      if (row.round) lines.push(`${'  '.repeat(indent + 2)}${renderRoundLine(row.round)}`);
    }
  }
  lines.push(...held, ...untrustedLine(report));
  const today = todayText(report);
  if (today !== null) lines.push(today);
  for (const note of report.notes) lines.push(`note: ${note}`);
  return lines.join('\n') + '\n';
}

export function renderWithdraw(r: WithdrawResult): string {
  const lines = [`withdrew operation ${r.operation}: ${r.discharged.length} thread(s) discharged, ${r.stopping.length} session(s) asked to stop`];
  if (r.parked !== null) lines.push(`its work is parked on ${r.parked.branch} at ${r.parked.commit.slice(0, 12)}`);
  else if (r.stopping.length > 0) lines.push('what it left uncommitted is parked once its sessions are gone, and the working copy handed on');
  for (const w of r.woke) lines.push(`the working copy went on to ${w.handle} · session ${w.session}`);
  for (const w of r.warnings) lines.push(`warning ${w.class}${w.reason ? ` (${w.reason})` : ''}: ${w.message}`);
  return lines.join('\n') + '\n';
}

export function renderThread(view: ThreadView): string {
  const t = view.thread;
  const lines = [`thread ${t.thread}${t.subject ? ` "${t.subject}"` : ''}  ${t.opener} -> ${t.to}  (operation ${view.operation})`];
  const by = t.withdrawn ? ' · withdrawn' : t.written_by !== null && t.written_by !== 'agent' ? ` · written by the ${t.written_by}` : '';
  lines.push(`state: ${t.state}${t.escalated ? ' · escalated' : ''}${t.substituted ? ' · substituted' : ''}${by}${t.waiting_on_sub_round ? ' · waiting on its own round' : ''}`);
  const run = t.session?.last_run;
  if (run) lines.push(`${lastRunText(run)} (session ${t.session!.id} turn ${run.turn}${run.reason ? `: ${run.reason}` : ''})`);
  for (const turn of view.turns ?? []) lines.push(turnText(turn));
  if (t.round) {
    lines.push(`round: ${renderRoundLine(t.round)}`);
    for (const s of t.round.steps) {
      lines.push(`  ${s.name} (${s.kind}, ${s.address}): ${s.state}${s.thread ? ` · thread ${s.thread}` : ''}${s.window_ms ? ` · window ${windowText(s.window_ms)}` : ''}${s.deadline ? ` until ${s.deadline}` : ''}${s.reason ? ` · ${s.reason}` : ''}${s.warning ? ` · ${s.warning}` : ''}`);
    }
  }
  if (t.step) lines.push(`step "${t.step.name}" of #${t.step.channel} (round ${t.step.round}), pass ${t.step.pass}`);
  if (t.rejected_code) lines.push(`refused by ${workspaceOf(t.to)}: ${t.rejected_code}${t.rejected_reason ? `: ${t.rejected_reason}` : ''} (nothing ran there)`);
  for (const m of view.messages) {
    const kind = m.effect === 'escalate' ? ' [escalation]' : m.effect === 'reopen' ? ' [follow-up]' : '';
    lines.push('', `${m.author} · ${m.ts}${kind}${m.written_by !== 'agent' ? ` [written by the ${m.written_by}]` : ''}`);
    lines.push(...m.text.replace(/\n$/, '').split('\n').map((l) => `  ${l}`));
    lines.push(`  working copy: ${describeWorkingCopy(m.refs.working_copy)}`);
  }
  return lines.join('\n') + '\n';
}

export function renderTranscript(t: Transcript): string {
  const head = `transcript of ${t.session} turn ${t.turn} (${t.file}, mode ${t.mode}, ${t.bytes} bytes${t.truncated ? ', showing its end' : ''}; turns with one: ${t.turns.join(', ')})`;
  return `${head}\n${t.text}${t.text.endsWith('\n') || t.text === '' ? '' : '\n'}`;
}

export function renderGuide(g: PersonaGuide): string {
  const lines = [`workspace ${g.workspace.name} (${g.workspace.id}); handles here look like ${g.workspace.short}/<role>`, ''];
  lines.push(g.personas.length === 0 ? 'personas: none declared (.nxs-personas/<role>.yaml)' : 'personas:');
  for (const p of g.personas) {
    const from = p.address_from_elsewhere === null ? 'this workspace only' : `also from trusting workspaces as ${p.address_from_elsewhere}`;
    lines.push(`  ${p.role}  (${p.file}) · ${from}${p.timeout_ms ? ` · timeout ${Math.round(p.timeout_ms / 1000)} s` : ''}${p.working_tree === 'exclusive' ? ' · working_tree exclusive' : ''}`);
    if (p.description) lines.push(`      ${p.description}`);
  }
  lines.push('', g.channels.length === 0 ? 'channels: none declared (.nxs-channels/<name>.yaml)' : "channels (nxc send '#name'; this workspace only):");
  for (const c of g.channels) {
    const steps = c.steps.map((s) => `${s.name}${s.address !== s.name ? `=${s.address}` : ''}${s.rework ? ` (rework: ${s.rework})` : ''}`).join(c.flow === 'sequential' ? ' -> ' : ', ');
    lines.push(`  ${c.address}  ${c.flow}: ${steps}${c.owner ? ` · owner ${c.owner}` : ''}${c.steps.some((s) => s.rework) ? ` · passes ${c.passes}` : ''}${c.working_tree === 'exclusive' ? ' · working_tree exclusive' : ''}`);
    if (c.description) lines.push(`      ${c.description}`);
  }
  for (const e of g.errors) lines.push(`invalid ${e.kind} ${e.file}${e.field ? ` field ${e.field}` : ''}: ${e.reason}`);
  return lines.join('\n') + '\n';
}
