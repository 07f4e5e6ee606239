// SQL literals, for multi-row INSERTs of literals: on PGlite they beat bound parameters and unnest of
// arrays (each parameter is encoded in JavaScript and parsed back; see docs/PERFORMANCE.md).

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
