// Human-readable renderings of receipts, status reports and threads. --json prints the objects instead.
import type { Receipt, StatusReport, StatusRow, ThreadView, WithdrawResult } from '../../protocol/receipts.js';
import { describeTree, describeWorkingCopy } from '../adapters/git/index.js';

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
  for (const w of r.warnings) lines.push(`warning ${w.class}${w.reason ? ` (${w.reason})` : ''}: ${w.message}`);
  return lines.join('\n') + '\n';
}

function rowSuffix(row: StatusRow): string {
  if (row.working_copy === null) return '';
  return ` · tree ${describeTree(row.working_copy)}`;
}

function rowText(row: StatusRow): string {
  const parts: string[] = [];
  if (row.awaiting_human) parts.push(`awaiting you (answered by ${row.answered_by ?? '?'})`);
  else if (row.state === 'answered') parts.push(`answered by ${row.answered_by ?? '?'}`);
  else parts.push(`owed by ${row.to}`);
  if (row.rejected_code) parts.push(`REFUSED ${row.rejected_code}`);
  else if (row.escalated) parts.push('ESCALATED');
  if (row.substituted) parts.push('answer written by the runtime');
  if (row.waiting_on_sub_round) parts.push('waiting on its own round');
  if (row.session) parts.push(`depth ${row.session.depth}${row.session.running ? ' · running' : ''}`);
  return parts.join(' · ');
}

export function renderStatus(report: StatusReport): string {
  const lines: string[] = [];
  if (report.operations.length === 0) lines.push('no open operations (nxc status --all shows finished ones)');
  for (const op of report.operations) {
    const subject = op.subject ? ` "${op.subject}"` : '';
    lines.push(`operation ${op.operation}${subject}  ${op.threads.length} thread(s), ${op.open} open${op.finished ? ' · finished' : ''}`);
    if (op.lease !== null) lines.push(`  working copy: ${op.lease.text}`);
    const depthOf = new Map<string, number>();
    for (const row of op.threads) {
      const indent = row.parent !== null && depthOf.has(row.parent) ? depthOf.get(row.parent)! + 1 : 0;
      depthOf.set(row.thread, indent);
      lines.push(`${'  '.repeat(indent + 1)}${row.thread}  ${row.opener} -> ${row.to}  ${rowText(row)}${rowSuffix(row)}`);
    }
  }
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
  lines.push(`state: ${t.state}${t.escalated ? ' · escalated' : ''}${t.substituted ? ' · substituted' : ''}${t.waiting_on_sub_round ? ' · waiting on its own round' : ''}`);
  for (const m of view.messages) {
    const kind = m.effect === 'escalate' ? ' [escalation]' : m.effect === 'reopen' ? ' [follow-up]' : '';
    lines.push('', `${m.author} · ${m.ts}${kind}${m.substituted ? ' [written by the runtime]' : ''}`);
    lines.push(...m.text.replace(/\n$/, '').split('\n').map((l) => `  ${l}`));
    lines.push(`  working copy: ${describeWorkingCopy(m.refs.working_copy)}`);
  }
  return lines.join('\n') + '\n';
}
