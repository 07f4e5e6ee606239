// The first view: everything waiting on a person, across every workspace the node serves.
import { dataAttrs, esc, seg, time } from '../html.js';
import type { NeedItem } from '../needs.js';
import { replyForm } from './forms.js';

function threadLink(i: { workspace: string; thread: string; subject: string | null }): string {
  return `<a href="/w/${seg(i.workspace)}/t/${seg(i.thread)}">${esc(i.subject ?? '(no subject)')}</a>`;
}

function where(i: { workspace: string; workspace_name: string }): string {
  return `<span title="${esc(i.workspace)}">${esc(i.workspace_name)}</span>`;
}

function item(i: NeedItem, n: number, actor: string): string {
  const h = `need-${n}`;
  switch (i.kind) {
    case 'escalated':
    case 'awaiting': {
      const tag = i.kind === 'escalated' ? '<span class="tag bad">Handed back</span>' : '<span class="tag warn">Answered, waiting for you</span>';
      const said = i.kind === 'escalated' ? `${esc(i.by)} handed it back` : `${esc(i.by)} answered`;
      return `<li class="card"${dataAttrs({ kind: i.kind, workspace: i.workspace, thread: i.thread })}><article aria-labelledby="${h}">
<h2 id="${h}">${tag} ${threadLink(i)}</h2>
<p class="meta">${where(i)} · ${said} · ${time(i.ts)} · opened by ${esc(i.opener)} for ${esc(i.to)}</p>
<div class="text">${esc(i.text)}</div>
${replyForm({ workspace: i.workspace, thread: i.thread, actor, back: '/', done: true })}
</article></li>`;
    }
    case 'rejected':
      return `<li class="card"${dataAttrs({ kind: i.kind, workspace: i.workspace, thread: i.thread, code: i.code })}><article aria-labelledby="${h}">
<h2 id="${h}"><span class="tag bad">Refused</span> ${threadLink(i)}</h2>
<p class="meta">${where(i)} · the commission to ${esc(i.to)} was refused with <code>${esc(i.code)}</code> · ${time(i.ts)}</p>
</article></li>`;
    case 'park_refused':
      return `<li class="card"${dataAttrs({ kind: i.kind, workspace: i.workspace, thread: i.thread })}><article aria-labelledby="${h}">
<h2 id="${h}"><span class="tag bad">PARK REFUSED</span> ${threadLink(i)}</h2>
<p class="meta">${where(i)} · the working copy is due to move on, and this operation's work cannot be parked until this is finished in the tree:</p>
<div class="text" data-what>${esc(i.what)}</div>
<p class="meta">The node tries again on every tick; the copy moves on by itself once the tree is fixed (or <code>nxc withdraw --thread ${esc(i.thread)}</code>).</p>
</article></li>`;
    case 'lapsed':
      return `<li class="card"${dataAttrs({ kind: i.kind, workspace: i.workspace, thread: i.thread, step: i.step, 'step-thread': i.step_thread })}><article aria-labelledby="${h}">
<h2 id="${h}"><span class="tag warn">Step unanswered</span> ${threadLink(i)}</h2>
<p class="meta">${where(i)} · channel <code>#${esc(i.channel)}</code>, step <strong>${esc(i.step)}</strong> (${esc(i.address)}) ${i.deadline ? `lapsed at ${time(i.deadline)}` : 'lapsed'} without an answer; the round went on without it${i.step_thread ? ` · <a href="/w/${seg(i.workspace)}/t/${seg(i.step_thread)}">the step's thread</a>` : ''}</p>
</article></li>`;
    case 'queued': {
      const ahead = i.holder !== null
        ? `the working copy is held by <a href="/w/${seg(i.workspace)}/t/${seg(i.holder.thread)}">${esc(i.holder.subject ?? '(no subject)')}</a> (<code>${esc(i.holder.thread)}</code>)`
        : i.behind !== null
          ? `behind <code>${esc(i.behind)}</code>`
          : 'next for the working copy';
      return `<li class="card"${dataAttrs({ kind: i.kind, workspace: i.workspace, thread: i.thread, position: i.position, behind: i.behind, holder: i.holder?.thread ?? null })}><article aria-labelledby="${h}">
<h2 id="${h}"><span class="tag plain">Queued</span> ${threadLink(i)}</h2>
<p class="meta">${where(i)} · waiting for the working copy, position <strong>${i.position}</strong> · ${ahead} · to ${esc(i.to)}, sent by ${esc(i.opener)}</p>
</article></li>`;
    }
    case 'service':
      return `<li class="card"${dataAttrs({ kind: i.kind, workspace: i.workspace, code: i.code })}><article aria-labelledby="${h}">
<h2 id="${h}"><span class="tag bad">Service</span> ${where(i)}</h2>
<p><code>${esc(i.code)}</code> ${esc(i.message)}</p>
</article></li>`;
    case 'sync':
      return `<li class="card"${dataAttrs({ kind: i.kind, workspace: i.workspace, problems: i.problems.map((p) => p.code).join(' ') })}><article aria-labelledby="${h}">
<h2 id="${h}"><span class="tag warn">Sync</span> ${where(i)} <a href="/sync#ws-${esc(i.workspace)}">details</a></h2>
<ul>${i.problems.map((p) => `<li${dataAttrs({ problem: p.code })}>${esc(p.text)}</li>`).join('')}</ul>
</article></li>`;
  }
}

export function renderNeeds(items: NeedItem[], opts: { actor: string; workspaces: number; notice?: string; undetailed?: number }): string {
  const people = items.filter((i) => i.kind === 'escalated' || i.kind === 'awaiting').length;
  const summary =
    items.length === 0
      ? `<p class="notice ok" data-empty="true">Nothing needs you across ${opts.workspaces} workspace(s).</p>`
      : `<p class="meta">${items.length} item(s) across ${opts.workspaces} workspace(s); ${people} wait for an answer.</p>`;
  return `${opts.notice ?? ''}<h1>Needs you</h1>
${summary}
<ol class="needs">${items.map((i, n) => item(i, n, opts.actor)).join('\n')}</ol>
${opts.undetailed ? `<p class="meta" data-undetailed="${opts.undetailed}">${opts.undetailed} older finished operation(s) may also wait on a person; they are not read here. See <a href="/operations">Operations</a>.</p>` : ''}`;
}
