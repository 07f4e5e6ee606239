// checkStorable: what no store can keep is refused with its reason; everything else passes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkStorable, MAX_DEPTH, MAX_LAMPORT, type StorableReason } from '../protocol/storable.js';

/** `depth` containers, one inside the next, alternating objects and arrays. */
function nested(depth: number, leaf: unknown = 'x'): unknown {
  let v = leaf;
  for (let i = 1; i < depth; i++) v = i % 2 ? { k: v } : [v];
  return { body: v };
}

const op = (extra: Record<string, unknown> = {}) => ({ id: 'o', lamport: 1, body: { text: 'fine' }, ...extra });

describe('checkStorable', () => {
  it.each<[string, unknown, StorableReason | null]>([
    ['a plain op', op(), null],
    ['text with astral characters (paired surrogates)', op({ body: { text: 'ok 😀 𝄞' } }), null],
    ['NUL in a string', op({ body: { text: 'a\u0000b' } }), 'nul'],
    ['NUL in a key', op({ body: { 'k\u0000': 1 } }), 'nul'],
    ['NUL deep in an array', op({ body: { list: [1, ['x', 'y\u0000']] } }), 'nul'],
    ['a lone high surrogate', op({ body: { text: 'a\ud800' } }), 'surrogate'],
    ['a lone low surrogate in a key', op({ body: { '\udc00k': true } }), 'surrogate'],
    ['surrogates in the wrong order', op({ body: { text: '\udc00\ud800' } }), 'surrogate'],
    [`nesting of exactly ${MAX_DEPTH}`, nested(MAX_DEPTH), null],
    [`nesting of ${MAX_DEPTH + 1}`, nested(MAX_DEPTH + 1), 'too_deep'],
    ['nesting of 100,000 (no stack overflow while checking)', () => JSON.parse('['.repeat(100_000) + ']'.repeat(100_000)) as unknown, 'too_deep'],
    ['lamport at MAX_LAMPORT', op({ lamport: MAX_LAMPORT }), null],
    ['lamport past MAX_LAMPORT', op({ lamport: MAX_LAMPORT + 1 }), 'lamport_range'],
    ['lamport at the last safe integer', op({ lamport: Number.MAX_SAFE_INTEGER }), 'lamport_range'],
    ['lamport 0', op({ lamport: 0 }), 'lamport_range'],
    ['a fractional lamport', op({ lamport: 1.5 }), 'lamport_range'],
    ['scalars', 42, null],
  ])('%s is refused for %s', (_, value, reason) => {
    // A thunk keeps a huge value out of the test's name.
    const v = checkStorable(typeof value === 'function' ? (value as () => unknown)() : value);
    expect(v.ok ? null : v.reason).toBe(reason);
  });

  const clean = fc.string({ unit: 'grapheme' }).filter((s) => !s.includes('\u0000'));
  const json = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small' }, clean, fc.integer(), fc.boolean(), fc.constant(null), fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(clean, tie('value'), { maxKeys: 4 })),
  })).value;

  it('passes any value of clean text nested less than the bound', () => {
    fc.assert(
      fc.property(json, (v) => {
        expect(checkStorable({ body: v })).toEqual({ ok: true });
      }),
      { numRuns: 300 },
    );
  });

  it('refuses any such value once a NUL or a lone surrogate is put in a string or a key anywhere', () => {
    fc.assert(
      fc.property(json, fc.constantFrom(['\u0000', 'nul'], ['\ud801', 'surrogate']), fc.boolean(), (v, [bad, reason], inKey) => {
        const poisoned = inKey ? { body: v, [`k${bad}`]: 1 } : { body: [v, `x${bad}y`] };
        const verdict = checkStorable(poisoned);
        expect(verdict).toMatchObject({ ok: false, reason });
      }),
      { numRuns: 200 },
    );
  });
});
