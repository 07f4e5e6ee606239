// The `ops` frame sent to consumers, built from the stored op texts.
import type { StoredOp } from './storage/index.js';

/** An `ops` frame ready for the socket: its UTF-8 bytes, how many ops it holds, and the last seq in it. */
export type OpsFrame = { frame: Buffer; count: number; last: number };

/** The leading rows, as frame parts, that fit in `maxBytes` beside a frame's own `overhead` bytes (at least one row). */
function pack(rows: readonly StoredOp[], maxBytes: number, overhead: number): { parts: string[]; last: number } {
  const parts: string[] = [];
  let size = overhead;
  let last = 0;
  for (const row of rows) {
    const part = `{"seq":${row.seq},"op":${row.op}}`;
    const bytes = Buffer.byteLength(part) + 1;
    if (parts.length > 0 && size + bytes > maxBytes) break;
    parts.push(part);
    size += bytes;
    last = row.seq;
  }
  return { parts, last };
}

/** An `ops` frame of as many leading rows as fit in `maxBytes`, built from the stored texts, never re-serialised. */
export function opsFrame(rows: readonly StoredOp[], maxBytes: number): OpsFrame {
  const { parts, last } = pack(rows, maxBytes, Buffer.byteLength('{"type":"ops","ops":[]}'));
  return { frame: Buffer.from(`{"type":"ops","ops":[${parts.join(',')}]}`, 'utf8'), count: parts.length, last };
}

/**
 * A `history` frame answering fetch `id`: as many leading rows as fit in `maxBytes`. When every row fits,
 * the frame ends where `whole` says (the read's end: the request's `upto` and done, or the last row);
 * otherwise at the last row that fits, not done.
 */
export function historyFrame(id: number, rows: readonly StoredOp[], maxBytes: number, whole: { through: number; done: boolean }): OpsFrame & { done: boolean } {
  const { parts, last } = pack(rows, maxBytes, Buffer.byteLength(`{"type":"history","id":${id},"ops":[],"through":${Number.MAX_SAFE_INTEGER},"done":false}`));
  const end = parts.length === rows.length ? whole : { through: last, done: false };
  const frame = `{"type":"history","id":${id},"ops":[${parts.join(',')}],"through":${end.through},"done":${end.done}}`;
  return { frame: Buffer.from(frame, 'utf8'), count: parts.length, last: end.through, done: end.done };
}
