// Operations: per workspace, each operation's thread tree with state, marks, session and the
// working copy its newest message named. Rows carry their status fields as data-* attributes,
// the same values `nxc status --all --json` prints.
import type { StatusOperation, StatusRow } from '../../../../protocol/receipts.js';
import type { WorkingCopy } from '../../../../protocol/working-copy.js';
import { dataAttrs, esc, extras, seg, short, time } from '../html.js';
import type { WorkspaceSnapshot } from '../data.js';

const ROW_FIELDS = new Set([
  'thread', 'parent', 'subject', 'opener', 'to', 'state', 'escalated', 'substituted', 'waiting_on_sub_round',
  'awaiting_human', 'answered_by', 'session', 'messages', 'updated', 'working_copy', 'rejected_code',
]);
const SESSION_FIELDS = new Set(['id', 'handle', 'depth', 'turn', 'running']);
const OPERATION_FIELDS = new Set(['operation', 'subject', 'opener', 'finished', 'threads', 'open']);

export function workingCopy(wc: WorkingCopy | null): string {
  if (wc === null) return '';
  const at = wc.commit === null ? 'no commit yet' : short(wc.commit, 10);
  return `<span class="wc" title="${esc(wc.fingerprint)}">${esc(wc.branch ?? 'detached')} @ ${at}${wc.dirty ? ' <span class="tag warn">dirty</span>' : ''}</span>`;
}

export function marks(row: StatusRow): string {
  const m: string[] = [];
  m.push(row.state === 'open' ? '<span class="tag plain">open</span>' : '<span class="tag ok">answered</span>');
  if (row.escalated) m.push('<span class="tag bad">escalated</span>');
  if (row.substituted) m.push('<span class="tag warn">substituted</span>');
  if (row.waiting_on_sub_round) m.push('<span class="tag plain">waiting on its round</span>');
  if (row.awaiting_human) m.push('<span class="tag warn">awaits a person</span>');
  if (row.rejected_code !== null) m.push(`<span class="tag bad">refused <code>${esc(row.rejected_code)}</code></span>`);
  return `<span class="marks">${m.join(' ')}</span>`;
}

export function sessionText(row: StatusRow): string {
  const s = row.session;
  if (s === null) return '';
  const rest = extras(s as Record<string, unknown>, SESSION_FIELDS);
  return ` · session <span title="${esc(s.id)}">${esc(s.handle)}</span> depth ${s.depth} turn ${s.turn} ${s.running ? '<span class="tag ok">running</span>' : '<span class="tag plain">idle</span>'}${rest}`;
}

function rowAttrs(workspace: string, row: StatusRow): string {
  return dataAttrs({
    workspace,
    thread: row.thread,
    parent: row.parent,
    state: row.state,
    escalated: row.escalated,
    substituted: row.substituted,
    'waiting-on-sub-round': row.waiting_on_sub_round,
    'awaiting-human': row.awaiting_human,
    'answered-by': row.answered_by,
    messages: row.messages,
    'session-running': row.session?.running ?? null,
    'session-turn': row.session?.turn ?? null,
    'session-depth': row.session?.depth ?? null,
    'rejected-code': row.rejected_code,
  });
}

function threadLine(workspace: string, row: StatusRow): string {
  return `<div class="row"><a href="/w/${seg(workspace)}/t/${seg(row.thread)}">${esc(row.subject ?? '(no subject)')}</a> ${marks(row)}
<span class="meta">${esc(row.opener)} → ${esc(row.to)} · ${row.messages} message(s) · ${time(row.updated)}${sessionText(row)}${row.working_copy ? ` · ${workingCopy(row.working_copy)}` : ''}</span>${extras(row as Record<string, unknown>, ROW_FIELDS)}</div>`;
}

/** The rows (already in depth-first order) as nested lists, so the tree reads to a screen reader too. */
function tree(workspace: string, rows: StatusRow[]): string {
  const children = new Map<string | null, StatusRow[]>();
  const ids = new Set(rows.map((r) => r.thread));
  for (const r of rows) {
    const key = r.parent !== null && ids.has(r.parent) ? r.parent : null;
    const list = children.get(key);
    if (list) list.push(r);
    else children.set(key, [r]);
  }
  const walk = (parent: string | null): string => {
    const list = children.get(parent);
    if (!list) return '';
    let out = '<ul class="tree">';
    for (const r of list) out += `<li${rowAttrs(workspace, r)}>${threadLine(workspace, r)}${walk(r.thread)}</li>`;
    return out + '</ul>';
  };
  return walk(null);
}

export function operation(workspace: string, op: StatusOperation): string {
  const state = op.finished ? '<span class="tag ok">finished</span>' : `<span class="tag plain">${op.open} open</span>`;
  return `<details class="op" id="op-${esc(op.operation)}"${op.finished ? '' : ' open'}${dataAttrs({ operation: op.operation, finished: op.finished })}>
<summary><strong>${esc(op.subject ?? '(no subject)')}</strong> ${state} <span class="meta">opened by ${esc(op.opener)} · ${op.threads.length} thread(s)</span></summary>
${extras(op as Record<string, unknown>, OPERATION_FIELDS)}${tree(workspace, op.threads)}
</details>`;
}

function workspaceSection(w: WorkspaceSnapshot): string {
  const head = `<h2 id="ws-${esc(w.id)}">${esc(w.name)} <span class="meta"><code>${esc(w.id)}</code></span></h2>`;
  if (w.error) return `<section aria-labelledby="ws-${esc(w.id)}">${head}<p class="notice bad"><code>${esc(w.error.code)}</code> ${esc(w.error.message)}</p></section>`;
  const ops = w.status?.operations ?? [];
  const open = ops.filter((o) => !o.finished).reverse();
  const done = ops.filter((o) => o.finished).reverse();
  const notes = (w.status?.notes ?? []).map((n) => `<p class="meta">${esc(n)}</p>`).join('');
  return `<section aria-labelledby="ws-${esc(w.id)}"${dataAttrs({ workspace: w.id })}>${head}${notes}
<h3>Open (${open.length})</h3>${open.length === 0 ? '<p class="meta">No open operation.</p>' : open.map((o) => operation(w.id, o)).join('\n')}
<h3>Finished (${done.length})</h3>${done.length === 0 ? '<p class="meta">None yet.</p>' : done.map((o) => operation(w.id, o)).join('\n')}
</section>`;
}

export function renderOperations(workspaces: WorkspaceSnapshot[]): string {
  const total = workspaces.reduce((n, w) => n + (w.status?.operations.length ?? 0), 0);
  return `<h1>Operations</h1>
<p class="meta">${total} operation(s) in ${workspaces.length} workspace(s), newest first.</p>
${workspaces.length > 1 ? `<nav aria-label="Workspaces"><ul class="plain">${workspaces.map((w) => `<li><a href="#ws-${esc(w.id)}">${esc(w.name)}</a></li>`).join('')}</ul></nav>` : ''}
${workspaces.map(workspaceSection).join('\n')}`;
}
