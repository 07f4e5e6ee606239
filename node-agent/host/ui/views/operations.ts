// Operations: per workspace, each operation's thread tree with state, marks, session and the
// working copy its newest message named. Rows carry their status fields as data-* attributes,
// the same values `nxc status --all --json` prints.
import type { LastRun, OperationLease, StatusOperation, StatusRow } from '../../../../protocol/receipts.js';
import type { WorkingCopy } from '../../../../protocol/working-copy.js';
import { dataAttrs, esc, extras, seg, time } from '../html.js';
import type { WorkspaceSnapshot } from '../data.js';

const ROW_FIELDS = new Set([
  'thread', 'parent', 'subject', 'opener', 'to', 'state', 'escalated', 'substituted', 'waiting_on_sub_round',
  'awaiting_human', 'answered_by', 'session', 'messages', 'updated', 'working_copy', 'rejected_code', 'written_by', 'withdrawn',
  'done', 'opened_in', 'untrusted',
]);
const SESSION_FIELDS = new Set(['id', 'handle', 'depth', 'turn', 'running', 'declaration_hash', 'last_run']);
const OPERATION_FIELDS = new Set(['operation', 'subject', 'opener', 'finished', 'threads', 'open', 'turns', 'usage', 'lease', 'untrusted']);

/** Dollars as the CLI prints them. */
function money(n: number): string {
  return `$${n.toFixed(n < 1 ? 4 : 2)}`;
}

/** An operation's tokens and cost against its budgets, and a mark once one is used up. */
function usageText(op: StatusOperation): string {
  const u = op.usage;
  if (u === undefined) return '';
  const over = (u.budget.max_tokens !== null && u.tokens >= u.budget.max_tokens) || (u.budget.max_cost !== null && u.cost >= u.budget.max_cost);
  const tokens = `tokens ${u.tokens}${u.budget.max_tokens === null ? '' : ` of ${u.budget.max_tokens}`}`;
  const cost = `cost ${money(u.cost)}${u.budget.max_cost === null ? '' : ` of ${money(u.budget.max_cost)}`}${u.unpriced_turns > 0 ? ` (${u.unpriced_turns} unpriced)` : ''}`;
  return ` <span class="meta usage"${dataAttrs({ tokens: u.tokens, cost: u.cost })}>· ${tokens} · ${esc(cost)}</span>${over ? ' <span class="tag warn">spend budget used up</span>' : ''}`;
}

/** A workspace's spend today against its daily ceiling, above its operations. */
function todayLine(w: WorkspaceSnapshot): string {
  const t = w.status?.spend_today;
  if (t === undefined) return '';
  const tokens = `${t.tokens}${t.budget.max_tokens === null ? '' : ` of ${t.budget.max_tokens}`} tokens`;
  const cost = `${money(t.cost)}${t.budget.max_cost === null ? '' : ` of ${money(t.budget.max_cost)}`}`;
  return `<p class="meta spend-today"${dataAttrs({ tokens: t.tokens, cost: t.cost })}>Spent today (${esc(t.day)} UTC): ${tokens}, ${esc(cost)} · resets at ${esc(t.resets_at)}</p>`;
}

/** Where the working copy stood: the short commit on its branch, and whether anything was uncommitted. */
export function workingCopy(wc: WorkingCopy | null): string {
  if (wc === null) return '';
  const at = wc.commit === null ? 'no commit yet' : `<code title="${esc(wc.commit)}">${esc(wc.commit.slice(0, 10))}</code>`;
  const on = wc.branch === null ? 'detached HEAD' : `<code>${esc(wc.branch)}</code>`;
  return `<span class="wc">${at} on ${on} ${wc.dirty ? '<span class="tag warn">dirty</span>' : '<span class="tag plain">clean</span>'}</span>`;
}

/** A declaration hash as a person compares them: the first 12 hex digits (as the declaration_changed warning prints them), the whole in the title. */
export function declaration(hash: string | null): string {
  if (hash === null) return '';
  const hex = hash.startsWith('sha256:') ? hash.slice(7) : hash;
  return ` · declaration <code title="${esc(hash)}">${esc(hex.slice(0, 12))}</code>`;
}

/** Short marks for an operation's working-copy lease: what it does with the copy, and what is wrong. */
export function leaseMarks(l: OperationLease | null): string {
  if (l === null) return '';
  const m: string[] = [];
  if (l.state === 'holds') m.push('<span class="tag ok">holds the working copy</span>');
  else if (l.state === 'queued') m.push(`<span class="tag plain">queued for the working copy, position ${l.position ?? '?'}</span>`);
  else m.push('<span class="tag plain">parked</span>');
  if (l.held_for_handback !== null) m.push('<span class="tag warn">held for its hand-back</span>');
  if (l.withdrawn) m.push('<span class="tag plain">withdrawn</span>');
  if (l.park_refused !== null) m.push('<span class="tag bad">PARK REFUSED</span>');
  return ` <span class="marks">${m.join(' ')}</span>`;
}

/** The lease line `nxc status` prints under the operation, word for word. */
function leaseLine(l: OperationLease | null): string {
  return l === null ? '' : `<p class="meta lease">working copy: ${esc(l.text)}</p>`;
}

function leaseAttrs(l: OperationLease | null): string {
  return dataAttrs({
    'lease-state': l?.state ?? null,
    'lease-token': l?.token ?? null,
    'lease-position': l?.position ?? null,
    'lease-behind': l?.behind ?? null,
    'lease-held-for-handback': l?.held_for_handback ?? null,
    'lease-park-refused': l?.park_refused ?? null,
    'lease-withdrawn': l === null ? null : l.withdrawn,
    'lease-parked-branch': l?.parked?.branch ?? null,
  });
}

export function marks(row: StatusRow): string {
  const m: string[] = [];
  m.push(row.state === 'open' ? '<span class="tag plain">open</span>' : '<span class="tag ok">answered</span>');
  if (row.escalated) m.push('<span class="tag bad">escalated</span>');
  if (row.withdrawn) m.push('<span class="tag plain">withdrawn</span>');
  else if (row.written_by === 'runtime' || row.written_by === 'sidecar') m.push(`<span class="tag warn">written by the ${row.written_by}</span>`);
  if (row.substituted) m.push('<span class="tag warn">substituted</span>');
  if (row.waiting_on_sub_round) m.push('<span class="tag plain">waiting on its round</span>');
  if (row.awaiting_human) m.push('<span class="tag warn">awaits a person</span>');
  if (row.done) m.push('<span class="tag ok">read</span>');
  if (row.untrusted) m.push(`<span class="tag bad" title="opened by ${esc(row.opened_in)}">opened by an untrusted workspace</span>`);
  if (row.rejected_code !== null) m.push(`<span class="tag bad">refused <code>${esc(row.rejected_code)}</code></span>`);
  return `<span class="marks">${m.join(' ')}</span>`;
}

export function sessionText(row: StatusRow): string {
  const s = row.session;
  if (s === null) return '';
  const rest = extras(s as Record<string, unknown>, SESSION_FIELDS);
  return ` · session <span title="${esc(s.id)}">${esc(s.handle)}</span> depth ${s.depth} turn ${s.turn} ${s.running ? '<span class="tag ok">running</span>' : '<span class="tag plain">idle</span>'}${declaration(s.declaration_hash)}${lastRun(s.last_run)}${rest}`;
}

/** A session's last run: how it stands or ended, and what it spent (the run-state file's numbers). */
function lastRun(run: LastRun | null): string {
  if (run === null) return '';
  const tag = run.status === 'completed' ? 'ok' : run.status === 'running' || run.status === 'waiting_approval' ? 'plain' : 'bad';
  const u = run.usage;
  return ` · last run <span class="tag ${tag}"${run.reason ? ` title="${esc(run.reason)}"` : ''}>${esc(run.status)}</span> ${u.model_calls} model calls, ${u.tool_calls} tool calls`;
}

/** Written out by hand: this runs for every thread of every operation on the page. */
function rowAttrs(workspace: string, row: StatusRow): string {
  const s = row.session;
  const wc = row.working_copy;
  return (
    ` data-workspace="${esc(workspace)}" data-thread="${esc(row.thread)}" data-parent="${esc(row.parent)}" data-state="${esc(row.state)}"` +
    ` data-escalated="${row.escalated}" data-substituted="${row.substituted}" data-waiting-on-sub-round="${row.waiting_on_sub_round}"` +
    ` data-awaiting-human="${row.awaiting_human}" data-answered-by="${esc(row.answered_by)}" data-messages="${row.messages}"` +
    ` data-session-running="${s ? s.running : ''}" data-session-turn="${s ? s.turn : ''}" data-session-depth="${s ? s.depth : ''}"` +
    ` data-session-declaration="${esc(s?.declaration_hash)}" data-rejected-code="${esc(row.rejected_code)}"` +
    ` data-written-by="${esc(row.written_by)}" data-withdrawn="${row.withdrawn}" data-run-status="${esc(s?.last_run?.status)}" data-run-model-calls="${s?.last_run ? s.last_run.usage.model_calls : ''}"` +
    ` data-wc-commit="${esc(wc?.commit)}" data-wc-branch="${esc(wc?.branch)}" data-wc-dirty="${wc ? wc.dirty : ''}"` +
    ` data-done="${row.done}" data-opened-in="${esc(row.opened_in)}" data-untrusted="${row.untrusted}"`
  );
}

function threadLine(workspace: string, row: StatusRow): string {
  return `<div class="row"><a href="/w/${seg(workspace)}/t/${seg(row.thread)}">${esc(row.subject ?? '(no subject)')}</a> ${marks(row)}
<span class="meta">${esc(row.opener)} → ${esc(row.to)} · ${row.messages} message(s) · ${time(row.updated)}${sessionText(row)}${row.working_copy ? ` · working copy ${workingCopy(row.working_copy)}` : ''}</span>${extras(row as Record<string, unknown>, ROW_FIELDS)}</div>`;
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
    `<details class="op" id="op-${esc(op.operation)}"${op.finished ? '' : ' open'}${dataAttrs({ operation: op.operation, finished: op.finished, untrusted: op.untrusted })}${leaseAttrs(op.lease)}>
<summary><strong>${esc(op.subject ?? '(no subject)')}</strong> ${state}${op.untrusted ? ' <span class="tag bad">opened by an untrusted workspace</span>' : ''}${leaseMarks(op.lease)} <span class="meta">opened by ${esc(op.opener)} · ${op.threads.length} thread(s) · turns ${op.turns.used} of ${op.turns.budget}</span>${op.turns.used >= op.turns.budget ? ' <span class="tag warn">budget used up</span>' : ''}${usageText(op)}</summary>
${leaseLine(op.lease)}${extras(op as Record<string, unknown>, OPERATION_FIELDS)}`,
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
  out.push(`<section aria-labelledby="ws-${esc(w.id)}"${dataAttrs({ workspace: w.id })}>${head}${todayLine(w)}${notes}\n<h3>Open (${open.length})</h3>`);
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
