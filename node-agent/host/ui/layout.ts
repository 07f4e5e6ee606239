// The page shell: skip link, navigation, the live region, and the small script that follows the
// node's event stream and swaps in the fresh <main>. Without JavaScript every page still reads.
import { esc } from './html.js';
import { CSS } from './style.js';

export type View = 'needs' | 'operations' | 'sync' | null;

export type PageParts = {
  title: string;
  view: View;
  /** How many items Needs you holds now; null when this page did not count them. */
  needs: number | null;
  body: string;
  /** The per-response nonce the CSP allows the inline style and script by. */
  nonce: string;
  /** The live hub's version when the page started to render (see live.ts). */
  live: string;
  renderedAt: string;
};

const NAV: Array<[Exclude<View, null>, string, string]> = [
  ['needs', '/', 'Needs you'],
  ['operations', '/operations', 'Operations'],
  ['sync', '/sync', 'Sync'],
];

/**
 * Follows /events (server-sent "ops" and "sync" events) and re-reads the page: the new <main>
 * replaces the old one, keeping what is being typed, which <details> are open, and the focus.
 * Refreshes never overlap; events during one cause one more.
 */
const SCRIPT = `(() => {
  const main = document.getElementById('main');
  const note = document.getElementById('live-note');
  const said = document.getElementById('live-status');
  if (!main || !window.EventSource || !window.fetch) return;
  let busy = false, again = false;
  const count = () => { const c = document.getElementById('needs-count'); return c ? c.textContent : null; };
  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const res = await fetch(location.href, { headers: { 'x-nxs-live': '1' }, credentials: 'same-origin', cache: 'no-store' });
      if (!res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
      const next = doc.getElementById('main');
      if (!next) return;
      const values = {}, open = {};
      main.querySelectorAll('textarea[id],input[id]').forEach((el) => { if (el.type !== 'hidden') values[el.id] = el.value; });
      main.querySelectorAll('details[id]').forEach((el) => { open[el.id] = el.open; });
      const active = document.activeElement;
      const focusId = active && main.contains(active) && active.id ? active.id : null;
      const before = count();
      main.innerHTML = next.innerHTML;
      for (const a of next.getAttributeNames()) main.setAttribute(a, next.getAttribute(a));
      for (const [id, v] of Object.entries(values)) { const el = document.getElementById(id); if (el && 'value' in el) el.value = v; }
      for (const [id, o] of Object.entries(open)) { const el = document.getElementById(id); if (el) el.open = o; }
      if (focusId) { const el = document.getElementById(focusId); if (el) el.focus(); }
      const badge = document.getElementById('needs-count'), nextBadge = doc.getElementById('needs-count');
      if (badge && nextBadge) { badge.textContent = nextBadge.textContent; badge.dataset.n = nextBadge.dataset.n; }
      document.title = doc.title;
      const after = count();
      if (said && after !== null && after !== before) said.textContent = 'Needs you: ' + after;
    } catch (e) {
      /* the next event tries again */
    } finally {
      busy = false;
      if (again) { again = false; void refresh(); }
    }
  }
  // The version this page was rendered at: changes the node saw since are sent at once. A reconnect
  // after a gap says the same older version, so the page reads itself again then too.
  const es = new EventSource('/events?v=' + encodeURIComponent(main.dataset.live || ''));
  es.addEventListener('ops', refresh);
  es.addEventListener('sync', refresh);
  es.addEventListener('open', () => { document.body.dataset.live = 'on'; if (note) note.textContent = 'Live: this page follows the node as ops arrive.'; });
  es.addEventListener('error', () => { document.body.dataset.live = 'off'; if (note) note.textContent = 'Live updates paused; reconnecting…'; });
})();`;

export function page(p: PageParts): string {
  const nav = NAV.map(([view, href, label]) => {
    const current = p.view === view ? ' aria-current="page"' : '';
    const badge = view === 'needs' && p.needs !== null ? ` <span class="count" id="needs-count" data-n="${p.needs}">${p.needs}</span>` : '';
    return `<li><a href="${href}"${current}>${label}${badge}</a></li>`;
  }).join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${esc(p.title)}${p.needs ? ` (${p.needs})` : ''} · Nexus</title>
<style nonce="${p.nonce}">${CSS}</style>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><div class="in"><p class="brand">Nexus</p><nav aria-label="Views"><ul>${nav}</ul></nav></div></header>
<main id="main" tabindex="-1" data-rendered="${esc(p.renderedAt)}" data-live="${esc(p.live)}">
${p.body}
</main>
<footer><p id="live-note">Rendered ${esc(p.renderedAt)}. Reload to see newer ops (live updates need JavaScript).</p><p id="live-status" class="vh" role="status" aria-live="polite"></p></footer>
<script nonce="${p.nonce}">${SCRIPT}</script>
</body>
</html>`;
}
