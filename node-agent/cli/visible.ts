// Text that sessions, peers and repositories wrote, made safe to print on a terminal. A message, a subject or a
// transcript can hold escape sequences: a session that answers with OSC 52 sets the reader's clipboard, one with
// a clear-screen and a colour shows "ALL CLEAR" over what it did. The human renderings show such characters as
// visible marks instead; --json needs nothing, JSON escapes them itself.

// C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates (which reorder
// what a line seems to say).
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

function mark(c: string): string {
  const code = c.charCodeAt(0);
  // The Control Pictures block has a sign for each C0 control and for DEL: ␛ for ESC, ␇ for BEL, ␍ for CR.
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  if (code === 0x7f) return '\u2421';
  return `<U+${code.toString(16).toUpperCase().padStart(4, '0')}>`;
}

/** `text` with every control character a terminal would obey shown as a visible mark. */
export function visible(text: string): string {
  return text.replace(UNSAFE, mark);
}

/** {@link visible} on every string inside `value` (objects and arrays copied, nothing else changed). */
export function visibleDeep<T>(value: T): T {
  if (typeof value === 'string') return visible(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => visibleDeep(v)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = visibleDeep(v);
    return out as T;
  }
  return value;
}

// What JSON.stringify leaves as it is but a terminal may still act on: DEL, the C1 controls, the bidi overrides.
const RAW_IN_JSON = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * JSON text with the characters JSON.stringify leaves raw, and a terminal may act on, written as `\uXXXX`: the
 * same value when parsed. They can only stand inside a string there, where the escape is always valid.
 */
export function terminalSafeJson(json: string): string {
  return json.replace(RAW_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
