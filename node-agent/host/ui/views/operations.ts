// Operations: per workspace, each operation's thread tree with state, marks, session and the
// working copy its newest message named. Rows carry their status fields as data-* attributes,
// the same values `nxc status --all --json` prints.
import type { StatusOperation, StatusRow } from '../../../../protocol/receipts.js';
import type { WorkingCopy } from '../../../../protocol/working-copy.js';
import { dataAttrs, esc, extras, seg, time } from '../html.js';
import type { WorkspaceSnapshot } from '../data.js';

const ROW_FIELDS = new Set([
  'thread', 'parent', 'subject', 'opener', 'to', 'state', 'escalated', 'substituted', 'waiting_on_sub_round',
  'awaiting_human', 'answered_by', 'session', 'messages', 'updated', 'working_copy', 'rejected_code',
]);
const SESSION_FIELDS = new Set(['id', 'handle', 'depth', 'turn', 'running']);
const OPERATION_FIELDS = new Set(['operation', 'subject', 'opener', 'finished', 'threads', 'open', 'turns']);

export function workingCopy(wc: WorkingCopy | null): string {
  if (wc === null) return '';
  const at = wc.commit === null ? 'no commit yet' : `<code>${esc(wc.commit.slice(0, 10))}</code>`;
  return `${esc(wc.branch ?? 'detached')} @ ${at}${wc.dirty ? ' <span class="tag warn">dirty</span>' : ''}`;
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

/** Written out by hand: this runs for every thread of every operation on the page. */
function rowAttrs(workspace: string, row: StatusRow): string {
  const s = row.session;
  return (
    ` data-workspace="${esc(workspace)}" data-thread="${esc(row.thread)}" data-parent="${esc(row.parent)}" data-state="${esc(row.state)}"` +
    ` data-escalated="${row.escalated}" data-substituted="${row.substituted}" data-waiting-on-sub-round="${row.waiting_on_sub_round}"` +
    ` data-awaiting-human="${row.awaiting_human}" data-answered-by="${esc(row.answered_by)}" data-messages="${row.messages}"` +
    ` data-session-running="${s ? s.running : ''}" data-session-turn="${s ? s.turn : ''}" data-session-depth="${s ? s.depth : ''}"` +
    ` data-rejected-code="${esc(row.rejected_code)}"`
  );
}

function threadLine(workspace: string, row: StatusRow): string {
  return `<div class="row"><a href="/w/${seg(workspace)}/t/${seg(row.thread)}">${esc(row.subject ?? '(no subject)')}</a> ${marks(row)}
<span class="meta">${esc(row.opener)} → ${esc(row.to)} · ${row.messages} message(s) · ${time(row.updated)}${sessionText(row)}${row.working_copy ? ` · ${workingCopy(row.working_copy)}` : ''}</span>${extras(row as Record<string, unknown>, ROW_FIELDS)}</div>`;
}

/** The rows (already in depth-first order) as nested lists, so the tree reads to a screen reader too. */
function tree(out: string[], workspace: string, rows: StatusRow[]): void {
  const children = new Map<string | null, StatusRow[]>();
  const ids = new Set(rows.map((r) => r.thread));
  for (const r of rows) {
    const key = r.parent !== null && ids.has(r.parent) ? r.parent : null;
    const list = children.get(key);
    if (list) list.push(r);
    else children.set(key, [r]);
  }
  const walk = (parent: string | null): void => {
    const list = children.get(parent);
    if (!list) return;
    out.push('<ul class="tree">');
    for (const r of list) {
      out.push(`<li${rowAttrs(workspace, r)}>`, threadLine(workspace, r));
      walk(r.thread);
      out.push('</li>');
    }
    out.push('</ul>');
  };
  walk(null);
}

/** One operation, its parts pushed onto `out`: a page of a thousand is joined once, not copied at every level. */
export function operation(out: string[], workspace: string, op: StatusOperation): void {
  const state = op.finished ? '<span class="tag ok">finished</span>' : `<span class="tag plain">${op.open} open</span>`;
  out.push(
    `<details class="op" id="op-${esc(op.operation)}"${op.finished ? '' : ' open'}${dataAttrs({ operation: op.operation, finished: op.finished })}>
<summary><strong>${esc(op.subject ?? '(no subject)')}</strong> ${state} <span class="meta">opened by ${esc(op.opener)} · ${op.threads.length} thread(s) · turns ${op.turns.used} of ${op.turns.budget}</span>${op.turns.used >= op.turns.budget ? ' <span class="tag warn">budget used up</span>' : ''}</summary>
${extras(op as Record<string, unknown>, OPERATION_FIELDS)}`,
  );
  tree(out, workspace, op.threads);
  out.push('</details>\n');
}

function workspaceSection(out: string[], w: WorkspaceSnapshot): void {
  const head = `<h2 id="ws-${esc(w.id)}">${esc(w.name)} <span class="meta"><code>${esc(w.id)}</code></span></h2>`;
  if (w.error) {
    out.push(`<section aria-labelledby="ws-${esc(w.id)}">${head}<p class="notice bad"><code>${esc(w.error.code)}</code> ${esc(w.error.message)}</p></section>`);
    return;
  }
  const ops = w.status?.operations ?? [];
  const open = ops.filter((o) => !o.finished).reverse();
  const done = ops.filter((o) => o.finished).reverse();
  const notes = (w.status?.notes ?? []).map((n) => `<p class="meta">${esc(n)}</p>`).join('');
  out.push(`<section aria-labelledby="ws-${esc(w.id)}"${dataAttrs({ workspace: w.id })}>${head}${notes}\n<h3>Open (${open.length})</h3>`);
  if (open.length === 0) out.push('<p class="meta">No open operation.</p>');
  for (const o of open) operation(out, w.id, o);
  out.push(`<h3>Finished (${done.length})</h3>`);
  if (done.length === 0) out.push('<p class="meta">None yet.</p>');
  for (const o of done) operation(out, w.id, o);
  out.push('</section>\n');
}

export function renderOperations(workspaces: WorkspaceSnapshot[]): string {
  const total = workspaces.reduce((n, w) => n + (w.status?.operations.length ?? 0), 0);
  const out: string[] = [
    `<h1>Operations</h1>
<p class="meta">${total} operation(s) in ${workspaces.length} workspace(s), newest first.</p>
${workspaces.length > 1 ? `<nav aria-label="Workspaces"><ul class="plain">${workspaces.map((w) => `<li><a href="#ws-${esc(w.id)}">${esc(w.name)}</a></li>`).join('')}</ul></nav>` : ''}
`,
  ];
  for (const w of workspaces) workspaceSection(out, w);
  return out.join('');
}
