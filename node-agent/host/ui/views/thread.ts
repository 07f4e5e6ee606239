// One thread: its status, every message with its working-copy record, and the reply form.
import type { ThreadView } from '../../../../protocol/receipts.js';
import { dataAttrs, esc, seg, time } from '../html.js';
import { replyForm } from './forms.js';
import { marks, sessionText, workingCopy } from './operations.js';

const EFFECTS: Record<string, string> = {
  commission: 'commissioned',
  answer: 'answered',
  escalate: 'handed back',
  reopen: 'reopened',
  none: 'wrote',
};

export function renderThread(
  w: { id: string; name: string },
  view: ThreadView,
  opts: { actor: string; back: string; notice?: string; text?: string },
): string {
  const row = view.thread;
  const parent = row.parent === null ? '' : ` · part of <a href="/w/${seg(w.id)}/t/${seg(row.parent)}">its parent thread</a>`;
  const messages = view.messages
    .map(
      (m, i) => `<li${dataAttrs({ message: m.message, effect: m.effect, author: m.author })}><article class="card" aria-labelledby="m-${i}">
<h2 id="m-${i}">${esc(m.author)} <span class="meta">${esc(EFFECTS[m.effect] ?? m.effect)}${m.substituted ? ' <span class="tag warn">substituted</span>' : ''} · ${time(m.ts)}</span></h2>
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
${replyForm({ workspace: w.id, thread: row.thread, actor: opts.actor, back: opts.back, ...(opts.text === undefined ? {} : { text: opts.text }) })}`;
}
