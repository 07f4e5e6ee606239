// One thread: its status, every message with its working-copy record, and the reply form.
import type { StatusOperation, ThreadView } from '../../../../protocol/receipts.js';
import { dataAttrs, esc, seg, time } from '../html.js';
import { replyForm, withdrawForm } from './forms.js';
import { marks, sessionText, workingCopy } from './operations.js';

const EFFECTS: Record<string, string> = {
  commission: 'commissioned',
  answer: 'answered',
  escalate: 'handed back',
  reopen: 'reopened',
  none: 'wrote',
};

/**
 * Whether the page offers to withdraw from this thread: it is its operation's first thread, a person sent
 * it, and something is left to take back (the operation runs, or the working-copy lease still holds or
 * queues it). Who may do it is the command's to decide, and it refuses as it does on the CLI.
 */
export function withdrawable(view: ThreadView, op: StatusOperation | undefined): boolean {
  if (op === undefined || view.operation !== view.thread.thread || view.messages[0]?.session !== null) return false;
  return !op.finished || op.lease?.state === 'holds' || op.lease?.state === 'queued';
}

export function renderThread(
  w: { id: string; name: string },
  view: ThreadView,
  /** `withdrawable`: this is an operation's first thread, sent by a person, with something left to take back. */
  opts: { actor: string; back: string; notice?: string; text?: string; withdrawable?: boolean },
): string {
  const row = view.thread;
  const parent = row.parent === null ? '' : ` · part of <a href="/w/${seg(w.id)}/t/${seg(row.parent)}">its parent thread</a>`;
  const messages = view.messages
    .map(
      (m, i) => `<li${dataAttrs({ message: m.message, effect: m.effect, author: m.author, 'written-by': m.written_by })}><article class="card" aria-labelledby="m-${i}">
<h2 id="m-${i}">${esc(m.author)} <span class="meta">${esc(EFFECTS[m.effect] ?? m.effect)}${m.written_by !== 'agent' ? ` <span class="tag warn">written by the ${esc(m.written_by)}</span>` : ''}${m.substituted ? ' <span class="tag warn">substituted</span>' : ''} · ${time(m.ts)}</span></h2>
<div class="text">${esc(m.text)}</div>
<p class="meta">${m.session ? `session <code>${esc(m.session)}</code> · ` : 'a person · '}message <code>${esc(m.message)}</code>${m.refs.working_copy ? ` · working copy ${workingCopy(m.refs.working_copy)} <code class="fp">${esc(m.refs.working_copy.fingerprint)}</code>` : ''}</p>
</article></li>`,
    )
    .join('\n');
  return `${opts.notice ?? ''}<h1>${esc(row.subject ?? '(no subject)')}</h1>
<p class="meta" ${dataAttrs({ workspace: w.id, thread: row.thread, state: row.state, escalated: row.escalated, 'awaiting-human': row.awaiting_human })}>${esc(w.name)} · ${marks(row)} · ${esc(row.opener)} → ${esc(row.to)}${sessionText(row)}${parent}</p>
<dl class="kv"><dt>Thread</dt><dd><code>${esc(row.thread)}</code></dd><dt>Operation</dt><dd><a href="/operations#op-${esc(view.operation)}"><code>${esc(view.operation)}</code></a></dd>${row.answered_by ? `<dt>Answered by</dt><dd>${esc(row.answered_by)}</dd>` : ''}</dl>
<h2>Messages (${view.messages.length})</h2>
<ol class="messages">${messages}</ol>
<h2 id="reply-h">Reply</h2>
<p class="meta">Posts as <code>nxc reply --thread ${esc(row.thread)}</code> would, as the person named below.</p>
${replyForm({ workspace: w.id, thread: row.thread, actor: opts.actor, back: opts.back, ...(opts.text === undefined ? {} : { text: opts.text }) })}
${opts.withdrawable ? `<h2 id="withdraw-h">Withdraw</h2>\n${withdrawForm({ workspace: w.id, thread: row.thread, actor: opts.actor, back: opts.back })}` : ''}`;
}
