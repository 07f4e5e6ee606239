// The `ops` frame sent to consumers, built from the stored op texts.
import type { StoredOp } from './storage/index.js';

/** An `ops` frame ready for the socket: its UTF-8 bytes, how many ops it holds, and the last seq in it. */
export type OpsFrame = { frame: Buffer; count: number; last: number };

/** An `ops` frame of as many leading rows as fit in `maxBytes`, built from the stored texts, never re-serialised. */
export function opsFrame(rows: readonly StoredOp[], maxBytes: number): OpsFrame {
  const parts: string[] = [];
  let size = Buffer.byteLength('{"type":"ops","ops":[]}');
  let last = 0;
  for (const row of rows) {
    const part = `{"seq":${row.seq},"op":${row.op}}`;
    const bytes = Buffer.byteLength(part) + 1;
    if (parts.length > 0 && size + bytes > maxBytes) break;
    parts.push(part);
    size += bytes;
    last = row.seq;
  }
  return { frame: Buffer.from(`{"type":"ops","ops":[${parts.join(',')}]}`, 'utf8'), count: parts.length, last };
}
