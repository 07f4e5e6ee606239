// What every store must be able to take: the checks an op passes before any store (relay or node) is given it.
//
// A JSON text can carry values PostgreSQL refuses or that break a reader later: `\u0000` (text and
// jsonb have no NUL), an unpaired UTF-16 surrogate (not valid UTF-8, refused by jsonb), nesting deep
// enough to exhaust a recursive reader's stack, and a Lamport clock so high that every node that reads
// the op would run its own clock out of safe integers. An op like that, once stored by a relay, would
// fail to store on every node that pages past it, again on every reconnect. So it is refused at the
// door, with a code, and never stored.

import { NexusError } from './errors.js';

/**
 * The highest Lamport clock an op may carry: 2^48. A node's clock moves to max(seen)+1, so one op near
 * 2^53 (the last safe integer) would drag every reader there and leave no room to count on. 2^48 is
 * ~2.8e14: a million ops a second would take about nine years to reach it from zero, and it leaves 32x
 * of room below 2^53 for clocks that jump.
 */
export const MAX_LAMPORT = 2 ** 48;

/**
 * The deepest nesting of objects and arrays in an op, counting the op itself as 1. Known kinds nest four
 * deep at most (op > body > refs > working_copy); 64 leaves kinds to come plenty of room while staying far
 * below the depth where recursive readers (V8's JSON.stringify, zod, PostgreSQL's jsonb functions) hit
 * their stack limits.
 */
export const MAX_DEPTH = 64;

/**
 * How much a node holds per workspace while it waits for the key that signed it (ops in `pending_ops`).
 * Anyone holding a stream's token can sign ops with keys of their own and name any workspace, so this is
 * bounded: past either limit an op is dropped and counted (refusal `pending_full`); what is held stays.
 */
export const PENDING_LIMITS = { ops_per_workspace: 1_000, bytes_per_workspace: 8 * 1024 * 1024 } as const;

/** Why a value is not storable. */
export const STORABLE_REASONS = ['nul', 'surrogate', 'too_deep', 'lamport_range'] as const;
/** A reason from {@link STORABLE_REASONS}. */
export type StorableReason = (typeof STORABLE_REASONS)[number];

/** The verdict of {@link checkStorable}. */
export type StorableVerdict = { ok: true } | { ok: false; reason: StorableReason; message: string };

const MESSAGES: Record<StorableReason, string> = {
  nul: 'a string or key holds U+0000, which no store can keep',
  surrogate: 'a string or key holds an unpaired UTF-16 surrogate (not valid Unicode text)',
  too_deep: `objects and arrays nest deeper than ${MAX_DEPTH}`,
  lamport_range: `lamport is not an integer from 1 to ${MAX_LAMPORT}`,
};

const refuse = (reason: StorableReason): StorableVerdict => ({ ok: false, reason, message: MESSAGES[reason] });

type WellFormed = { isWellFormed?: () => boolean };
/** Unpaired surrogates are the only code points of category Cs once a `u` regex pairs the rest. */
const LONE_SURROGATE = /\p{Cs}/u;

function textReason(s: string): StorableReason | null {
  if (s.includes('\u0000')) return 'nul';
  const wf = (s as unknown as WellFormed).isWellFormed;
  if (wf ? !wf.call(s) : LONE_SURROGATE.test(s)) return 'surrogate';
  return null;
}

/**
 * Whether every store can take `value` (an op as JSON.parse gave it, or any JSON value): no NUL and no
 * unpaired surrogate in any string or key, nesting at most {@link MAX_DEPTH}, and, when `value` is an
 * object with a numeric `lamport`, that clock within 1..{@link MAX_LAMPORT}. The walk recurses at most
 * MAX_DEPTH + 1 deep: a value nested far deeper is refused there, never followed down.
 */
export function checkStorable(value: unknown): StorableVerdict {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const lamport = (value as { lamport?: unknown }).lamport;
    if (typeof lamport === 'number' && !(Number.isInteger(lamport) && lamport >= 1 && lamport <= MAX_LAMPORT)) return refuse('lamport_range');
  }
  const reason = walk(value, 1);
  return reason === null ? STORABLE : refuse(reason);
}

/** The verdict on a value every store can take. */
export const STORABLE: StorableVerdict = { ok: true };

/** The first reason found in `v` (at nesting `depth`), or null. Every op passes here on arrival: no allocation but the key lists. */
function walk(v: unknown, depth: number): StorableReason | null {
  if (typeof v === 'string') return textReason(v);
  if (typeof v !== 'object' || v === null) return null;
  if (depth > MAX_DEPTH) return 'too_deep';
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const r = walk(v[i], depth + 1);
      if (r !== null) return r;
    }
    return null;
  }
  const keys = Object.keys(v);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const r = textReason(k) ?? walk((v as Record<string, unknown>)[k], depth + 1);
    if (r !== null) return r;
  }
  return null;
}

/** Where a value holds text no store can keep: the path to the string (or key) and why. */
export type BadText = { path: ReadonlyArray<string | number>; reason: 'nul' | 'surrogate' };

/**
 * The first string or key in `value` holding U+0000 or an unpaired surrogate, with its path, or null.
 * Iterative; nesting is not judged here (commands' inputs are shallow, ops are checked by
 * {@link checkStorable}).
 */
export function findBadText(value: unknown): BadText | null {
  const stack: Array<[unknown, ReadonlyArray<string | number>]> = [[value, []]];
  while (stack.length > 0) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      const r = textReason(v);
      if (r === 'nul' || r === 'surrogate') return { path, reason: r };
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      v.forEach((item, i) => stack.push([item, [...path, i]]));
      continue;
    }
    for (const [k, item] of Object.entries(v)) {
      const r = textReason(k);
      if (r === 'nul' || r === 'surrogate') return { path: [...path, k], reason: r };
      stack.push([item, [...path, k]]);
    }
  }
  return null;
}

/** The BAD_TEXT refusal for `bad` found in `what` (a command's input, an op), naming the field. */
export function badTextError(bad: BadText, prefix: ReadonlyArray<string> = []): NexusError {
  const field = [...prefix, ...bad.path].join('.') || '(the value)';
  const what = bad.reason === 'nul' ? 'a NUL character (U+0000)' : 'an unpaired UTF-16 surrogate (not valid Unicode text)';
  return new NexusError('BAD_TEXT', `${field} holds ${what}, which no store can keep; remove it and try again`, { field, reason: bad.reason });
}
