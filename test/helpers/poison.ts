// Ops no store can keep, each by the reason a node gives for refusing it, forged with a throwaway key:
// what the poison-op tests push straight into a store's page path and through a relay.
import { newThreadId } from '../../protocol/ids.js';
import { MAX_DEPTH, MAX_LAMPORT } from '../../protocol/storable.js';
import { Forger } from './forge.js';

/** The forger every poison op (and the good op behind it) is signed by. */
export const forger = new Forger();
const m = forger;

/** A fresh operation whose root thread is the op's own. */
export const scope = () => {
  const t = newThreadId();
  return { operation: t, thread: t, session: null };
};

/** JSON text nested `depth` arrays deep. */
export const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

/** Each poison op, by the reason a node gives for it. */
export const POISON: Array<[string, string, () => string]> = [
  ['a NUL in a body string', 'nul', () => m.text({ kind: 'message.posted', ...scope(), body: { text: 'a\u0000b' } })],
  ['a NUL in a body key', 'nul', () => m.text({ kind: 'x.custom', ...scope(), body: { 'a\u0000b': 1 } })],
  ['a lone surrogate in a string', 'surrogate', () => m.text({ kind: 'x.custom', ...scope(), body: { text: 'a\ud800b' } })],
  ['a lone surrogate in a key', 'surrogate', () => m.text({ kind: 'x.custom', ...scope(), body: { ['\udc00']: 1 } })],
  ['nesting just past the limit', 'too_deep', () => m.textWithRawBody({ kind: 'x.custom', ...scope(), body: {} }, nested(MAX_DEPTH))],
  ['nesting 5,000 deep', 'too_deep', () => m.textWithRawBody({ kind: 'x.custom', ...scope(), body: {} }, nested(5_000))],
  ['lamport 2^53-1', 'lamport_range', () => m.text({ kind: 'x.custom', ...scope(), body: {}, lamport: Number.MAX_SAFE_INTEGER })],
  ['lamport just past MAX_LAMPORT', 'lamport_range', () => m.text({ kind: 'x.custom', ...scope(), body: {}, lamport: MAX_LAMPORT + 1 })],
];
