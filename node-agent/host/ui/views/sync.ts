// Sync: per workspace its stream (cursor, head, lag, outbox, last error), its own keys, and the
// workspaces it trusts with their key history.
import type { KeyReport, SyncReport, TrustReport } from '../../../../protocol/commands.js';
import type { Failure, WorkspaceSnapshot } from '../data.js';
import { dataAttrs, esc, short, time } from '../html.js';
import { syncProblems } from '../needs.js';

export type SyncPageEntry = { workspace: WorkspaceSnapshot; keys: KeyReport | Failure; trust: TrustReport | Failure };

const failed = (x: object): x is Failure => 'code' in x && 'message' in x && !('workspace' in x);

function stream(r: SyncReport | null): string {
  if (r === null) return '<p class="meta">Sync status could not be read.</p>';
  if (!r.bound) return '<p class="meta" data-sync="unbound">Not bound to a relay stream (<code>nxs sync bind</code>).</p>';
  const problems = syncProblems(r);
  const rejected = Object.entries(r.rejected).filter(([, n]) => n > 0);
  const kv: Array<[string, string, string]> = [
    ['relay', 'Relay', `<code>${esc(r.relay)}</code>`],
    ['stream', 'Stream', `<code>${esc(r.stream)}</code>`],
    ['connected', 'Connected', r.connected ? '<span class="tag ok">yes</span>' : '<span class="tag bad">no</span>'],
    ['cursor', 'Cursor', String(r.cursor)],
    ['head', 'Head', r.head === undefined ? '?' : String(r.head)],
    ['lag', 'Lag', r.lag === undefined ? '?' : String(r.lag)],
    ['outbox', 'Outbox', String(r.outbox)],
    ['pending', 'Pending (unknown key)', String(r.pending)],
    ['rejected', 'Rejected', rejected.length === 0 ? '0' : rejected.map(([why, n]) => `${esc(why)} ${n}`).join(', ')],
    ['last-error', 'Last error', r.last_error === null ? 'none' : esc(r.last_error)],
  ];
  return `${problems.length > 0 ? `<p class="notice bad" data-sync="trouble">${problems.map((p) => esc(p.text)).join('<br>')}</p>` : '<p class="notice ok" data-sync="ok">In step with the relay.</p>'}
<dl class="kv">${kv.map(([k, label, v]) => `<dt>${label}</dt><dd${dataAttrs({ field: k })}>${v}</dd>`).join('')}</dl>`;
}

/** A key history, oldest first: the genesis key (from which the id derives), then each rotation and the key that signed it. */
function history(rows: KeyReport['history'], caption: string): string {
  return `<div class="scroll" role="region" aria-label="${esc(caption)}" tabindex="0"><table class="keys"><caption class="vh">${esc(caption)}</caption>
<thead><tr><th scope="col">#</th><th scope="col">Key</th><th scope="col">Signed by</th><th scope="col">Op</th><th scope="col">When</th></tr></thead>
<tbody>${rows
    .map(
      (h, i) =>
        `<tr${dataAttrs({ key: h.key, 'signed-by': h.signed_by, op: h.op })}><td>${i}</td><td>${short(h.key, 16)}${i === rows.length - 1 ? ' <span class="tag ok">signs now</span>' : ''}</td><td>${h.signed_by ? short(h.signed_by, 16) : 'genesis'}</td><td>${short(h.op, 16)}</td><td>${time(h.ts)}</td></tr>`,
    )
    .join('')}</tbody></table></div>`;
}

function keys(k: KeyReport | Failure): string {
  if (failed(k)) return `<p class="notice bad"><code>${esc(k.code)}</code> ${esc(k.message)}</p>`;
  return `<div${dataAttrs({ keys: k.workspace, generation: k.generation })}><p>Signing key ${short(k.key, 16)}, generation ${k.generation} (${k.generation} rotation(s))${k.rotation_in_progress ? ' <span class="tag warn">rotation unfinished</span>' : ''}. <code>nxs key show</code> prints the public key to give a workspace that should trust this one.</p>${history(k.history, `key history of ${k.workspace}`)}</div>`;
}

function trust(t: TrustReport | Failure): string {
  if (failed(t)) return `<p class="notice bad"><code>${esc(t.code)}</code> ${esc(t.message)}</p>`;
  if (t.trusted.length === 0) return '<p class="meta">No workspace is trusted here (<code>nxs sync trust add</code>).</p>';
  return t.trusted
    .map(
      (e) => `<div class="card"${dataAttrs({ trusted: e.workspace, alias: e.name })}><h4>${e.name === null ? '<span class="meta">(no alias)</span>' : esc(e.name)} <code>${esc(e.workspace)}</code></h4>
<p class="meta">trusted since ${time(e.added_at)} · ${e.history.length - 1} rotation(s) seen${e.history.length > 0 ? ` · signs with ${short(e.history[e.history.length - 1]!.key, 16)}` : ''}</p>${history(e.history, `key history of ${e.name ?? e.workspace}`)}</div>`,
    )
    .join('');
}

export function renderSync(entries: SyncPageEntry[]): string {
  return `<h1>Sync</h1>
${entries
  .map(
    ({ workspace: w, keys: k, trust: t }) => `<section aria-labelledby="ws-${esc(w.id)}"${dataAttrs({ workspace: w.id })}>
<h2 id="ws-${esc(w.id)}">${esc(w.name)} <span class="meta"><code>${esc(w.id)}</code></span></h2>
${w.error ? `<p class="notice bad"><code>${esc(w.error.code)}</code> ${esc(w.error.message)}</p>` : ''}
<h3>Stream</h3>${stream(w.sync)}
<h3>This workspace's keys</h3>${keys(k)}
<h3>Trusted workspaces</h3>${trust(t)}
</section>`,
  )
  .join('\n')}`;
}
