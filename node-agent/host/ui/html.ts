// Building HTML as strings: every value from the store is escaped on the way in, nothing else is.
// Plain concatenation keeps a page of a thousand operations cheap to render.

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text or an attribute value, escaped. */
export function esc(value: unknown): string {
  const s = value === null || value === undefined ? '' : String(value);
  return /[&<>"']/.test(s) ? s.replace(/[&<>"']/g, (c) => ESCAPES[c]!) : s;
}

/** A `data-*` attribute list from a record: names are ours, values are escaped. */
export function dataAttrs(values: Record<string, string | number | boolean | null>): string {
  let out = '';
  for (const [k, v] of Object.entries(values)) out += ` data-${k}="${esc(v === null ? '' : String(v))}"`;
  return out;
}

/** A timestamp as a <time> element: the ISO text is machine-readable, the shown text is short. */
export function time(iso: string | null | undefined): string {
  if (!iso) return '';
  const shown = iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC');
  return `<time datetime="${esc(iso)}">${esc(shown)}</time>`;
}

/** Shortens an id or hash for display; the full value stays in the title. */
export function short(value: string | null | undefined, n = 12): string {
  if (!value) return '';
  return value.length <= n ? esc(value) : `<abbr title="${esc(value)}">${esc(value.slice(0, n))}…</abbr>`;
}

/** A URL path segment. */
export function seg(value: string): string {
  return encodeURIComponent(value);
}

/** Members of `row` not in `known`, rendered generically: fields other capabilities add (a lease, a round) show without this code knowing them. */
export function extras(row: Record<string, unknown>, known: ReadonlySet<string>): string {
  const keys = Object.keys(row).filter((k) => !known.has(k) && row[k] !== undefined && row[k] !== null);
  if (keys.length === 0) return '';
  let out = '<dl class="extras">';
  for (const k of keys) {
    const v = row[k];
    out += `<dt>${esc(k)}</dt><dd${dataAttrs({ field: k })}>${typeof v === 'object' ? `<code>${esc(JSON.stringify(v))}</code>` : esc(v)}</dd>`;
  }
  return out + '</dl>';
}
