// SQL literals, for multi-row INSERTs of literals: on PGlite they beat bound parameters and unnest of
// arrays (each parameter is encoded in JavaScript and parsed back; see docs/PERFORMANCE.md). And rows
// in COPY's text format, which beat both for bulk loads.

/**
 * A SQL string literal. The stores that use it run with standard_conforming_strings on (set at open),
 * where a quote doubled is the only escape; NUL cannot be written in a literal and is refused.
 */
export function sqlLiteral(text: string): string {
  if (text.includes('\u0000')) throw new TypeError('a SQL literal cannot hold U+0000');
  return `'${text.replace(/'/g, "''")}'`;
}

/** A text literal, or NULL. */
export function sqlText(text: string | null | undefined): string {
  return text === null || text === undefined ? 'NULL' : sqlLiteral(text);
}

/** An integer literal; anything but a safe integer is refused rather than written. */
export function sqlInteger(n: number): string {
  if (!Number.isSafeInteger(n)) throw new TypeError(`not a safe integer: ${n}`);
  return String(n);
}

/** Characters COPY's text format escapes: the backslash, and the tab, newline and carriage return that delimit. */
const COPY_SPECIAL = /[\\\t\n\r]/g;
/** What a value must be looked at for: a character COPY escapes, or a NUL it cannot carry. Most values hold none. */
const COPY_UNPLAIN = /[\\\t\n\r\u0000]/;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/**
 * One row of COPY's text format (tab between columns, `\N` for NULL, a newline at the end). NUL cannot
 * be sent in COPY data and is refused, as in a literal.
 */
export function copyRow(values: ReadonlyArray<string | number | null | undefined>): string {
  let row = '';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) row += '\t';
    if (v === null || v === undefined) row += '\\N';
    else if (typeof v === 'number') row += sqlInteger(v);
    else if (!COPY_UNPLAIN.test(v)) row += v;
    else {
      if (v.includes('\u0000')) throw new TypeError('COPY data cannot hold U+0000');
      row += v.replace(COPY_SPECIAL, (c) => COPY_ESCAPES[c]!);
    }
  }
  return `${row}\n`;
}
