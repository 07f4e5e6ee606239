// The sync protocol's pure parts: exact op texts out of a frame, the op envelope, the error table, URLs.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newOpId, newThreadId } from '../protocol/ids.js';
import { FromNodeSchema, isPlainOp, isPlainPush, rawElements, rawMember, rawMemberOfElements, SignedOpSchema, SYNC_ERROR_CODES, SYNC_ERROR_TABLE, syncErrorOfClose, syncUrl, WireOpSchema } from '../protocol/sync.js';

/** JSON.stringify with arbitrary (valid) whitespace between tokens. */
function spaced(value: unknown, pad: string[]): string {
  let n = 0;
  const ws = () => pad[n++ % pad.length]!;
  const go = (v: unknown): string => {
    if (Array.isArray(v)) return `[${ws()}${v.map((x) => go(x) + ws()).join(`,${ws()}`)}]`;
    if (v !== null && typeof v === 'object') {
      return `{${ws()}${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}${ws()}:${ws()}${go(x)}${ws()}`).join(`,${ws()}`)}}`;
    }
    return JSON.stringify(v);
  };
  return go(value);
}

describe('exact op texts', () => {
  it('rawElements and rawMember give back texts that parse to the same values, whatever the spacing', () => {
    const pad = fc.array(fc.constantFrom('', ' ', '\n', '\t ', '\r\n'), { minLength: 1, maxLength: 5 });
    fc.assert(
      fc.property(fc.array(fc.jsonValue(), { maxLength: 8 }), pad, (ops, ws) => {
        const frame = spaced({ type: 'push', id: 1, ops }, ws);
        const raw = rawElements(rawMember(frame, 'ops')!)!;
        expect(raw.map((r) => JSON.parse(r) as unknown)).toEqual(JSON.parse(JSON.stringify(ops)));
        for (const r of raw) expect(frame).toContain(r);
      }),
      { numRuns: 300 },
    );
  });

  it('takes the last of a repeated key, as JSON.parse does, and reads escaped keys', () => {
    expect(rawMember('{"ops":[1],"o\\u0070s" : [ 2 , {"a":"]\\""} ]}', 'ops')).toBe('[ 2 , {"a":"]\\""} ]');
    expect(rawElements('[ 2 , {"a":"]\\""} ]')).toEqual(['2', '{"a":"]\\""}']);
    expect(rawMember('[1]', 'ops')).toBeUndefined();
    expect(rawElements('{}')).toBeUndefined();
  });

  it('rawMemberOfElements finds in one pass what rawElements and rawMember find in three', () => {
    const threePasses = (text: string) => rawElements(rawMember(text, 'ops') ?? '')?.map((el) => rawMember(el, 'op'));
    const pad = fc.array(fc.constantFrom('', ' ', '\n', '\t ', '\r\n'), { minLength: 1, maxLength: 5 });
    // Rows as a page holds them, and rows that are not: no object, no op, a repeated or escaped member name.
    const row = fc.oneof(
      fc.record({ seq: fc.nat(), op: fc.jsonValue() }),
      fc.jsonValue(),
      fc.dictionary(fc.constantFrom('op', 'seq', 'o\u0070', 'x', '"op"'), fc.jsonValue()),
    );
    const frame = fc.oneof(
      fc.record({ type: fc.constant('ops'), ops: fc.array(row, { maxLength: 6 }) }),
      fc.dictionary(fc.constantFrom('ops', 'type', 'o\u0070s', 'op'), fc.oneof(fc.array(row, { maxLength: 4 }), fc.jsonValue())),
      fc.jsonValue(),
    );
    fc.assert(
      fc.property(frame, pad, (value, ws) => {
        const text = spaced(value, ws);
        expect(rawMemberOfElements(text, 'ops', 'op')).toEqual(threePasses(text));
      }),
      { numRuns: 500 },
    );
    // Repeated keys: the last one, at both levels, as JSON.parse keeps; escaped names read as names.
    const text = '{"ops":[{"op":1}], "o\\u0070s" : [ {"op":{"a":"]\\""},"o\\u0070":[2]} , 3, {"seq":1} , {} ] }';
    expect(rawMemberOfElements(text, 'ops', 'op')).toEqual(['[2]', undefined, undefined, undefined]);
    expect(rawMemberOfElements(text, 'ops', 'op')).toEqual(threePasses(text));
    expect(rawMemberOfElements('{"ops":[{"op":1}],"ops":5}', 'ops', 'op')).toBeUndefined();
    expect(rawMemberOfElements('[1]', 'ops', 'op')).toBeUndefined();
    expect(rawMemberOfElements('{"type":"ops"}', 'ops', 'op')).toBeUndefined();
  });
});

describe('the op envelope', () => {
  const thread = newThreadId();
  const op = { id: newOpId(), workspace: 'abcdefghijklmnopqrstuvwxyz', origin: 'host-1', lamport: 3, ts: '2025-05-01T10:00:00.000Z', kind: 'message.posted', operation: thread, thread, session: null, body: {}, key: 'A'.repeat(43), sig: 'B'.repeat(86) };

  it.each([
    ['a kind this relay has never heard of', { kind: 'lease.granted' }, true],
    ['no signature', { sig: undefined }, false],
    ['a signature that is not 64 bytes of base64url', { sig: 'c2lnbmF0dXJl' }, false],
    ['no key', { key: undefined }, false],
    ['a key that is not 32 bytes of base64url', { key: 'A'.repeat(44) }, false],
    ['a kind without a dot', { kind: 'message' }, false],
    ['a lamport of 0', { lamport: 0 }, false],
    ['a body that is an array', { body: [] }, false],
    ['an id that is not a ULID', { id: 'x' }, false],
    ['a field the envelope does not have', { extra: true }, false],
  ])('with %s is %s', (_, change, ok) => {
    expect(WireOpSchema.safeParse({ ...op, ...change }).success).toBe(ok);
  });

  it('parses each frame a node sends', () => {
    expect(FromNodeSchema.safeParse({ type: 'hello', protocol: 1, stream: 's', token: 't', node: 'n', since: 0 }).success).toBe(true);
    expect(FromNodeSchema.safeParse({ type: 'push', id: 1, ops: [op] }).success).toBe(true);
    expect(FromNodeSchema.safeParse({ type: 'ping', t: 1 }).success).toBe(true);
    expect(FromNodeSchema.safeParse({ type: 'hello', protocol: 1, stream: 's', token: 't', node: 'n', since: -1 }).success).toBe(false);
    expect(FromNodeSchema.safeParse({ type: 'ack' }).success).toBe(false);
  });
});

describe('the fast check of plain ops and pushes', () => {
  const thread0 = newThreadId();
  const op = { id: newOpId(), workspace: 'abcdefghijklmnopqrstuvwxyz', origin: 'host-1', lamport: 3, ts: '2025-05-01T10:00:00.000Z', kind: 'message.posted', operation: thread0, thread: thread0, session: null, body: { text: 'hi' }, key: 'A'.repeat(43), sig: 'B'.repeat(86) };
  const valid = fc.record({ at: fc.date({ min: new Date('0000-01-01T00:00:00.000Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }), lamport: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }) });
  const FIELDS = ['id', 'workspace', 'origin', 'lamport', 'ts', 'kind', 'operation', 'thread', 'session', 'body', 'key', 'sig'] as const;
  const tsLike = fc.oneof(
    fc.constantFrom('2026-02-30T10:00:00.000Z', '2026-12-04T24:00:00.000Z', '2026-12-04T10:00:00Z', '2026-12-04T10:00:00.000+01:00', '2026-12-04 10:00:00.000Z', '+012026-12-04T10:00:00.000Z'),
    fc.string(),
  );
  const mutation = fc.oneof(
    fc.record({ field: fc.constantFrom(...FIELDS), to: fc.oneof(fc.jsonValue(), tsLike, fc.constant(undefined)) }),
    fc.record({ field: fc.constant('extra'), to: fc.jsonValue() }),
  );

  it('accepts ops as nodes write them, at any time and clock', () => {
    fc.assert(
      fc.property(valid, ({ at, lamport }) => {
        const thread = newThreadId();
        const o = { ...op, id: newOpId(), ts: at.toISOString(), lamport, operation: thread, thread };
        expect(isPlainOp(o, true)).toBe(true);
        expect(isPlainPush({ type: 'push', id: 7, ops: [o, o] })).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('never accepts what the schemas refuse, whatever one member is changed to', () => {
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 3 }), (changes) => {
        const o: Record<string, unknown> = { ...op };
        for (const c of changes) {
          if (c.to === undefined) delete o[c.field];
          else o[c.field] = c.to;
        }
        if (isPlainOp(o, true)) expect(WireOpSchema.safeParse(o).success).toBe(true);
        const { sig: _sig, ...signed } = o;
        if (isPlainOp(signed, false)) expect(SignedOpSchema.safeParse(signed).success).toBe(true);
        if (isPlainPush({ type: 'push', id: 1, ops: [o] })) expect(FromNodeSchema.safeParse({ type: 'push', id: 1, ops: [o] }).success).toBe(true);
      }),
      { numRuns: 2000 },
    );
    expect(isPlainOp({ ...op, ts: '2026-02-30T10:00:00.000Z' }, true)).toBe(false);
    expect(isPlainOp({ ...op, extra: 1 }, true)).toBe(false);
    expect(isPlainOp(op, false)).toBe(false);
    expect(isPlainPush({ type: 'push', id: -1, ops: [op] })).toBe(false);
  });
});

describe('error codes and URLs', () => {
  it('gives every code its own close code in 4000-4999, and finds the code again', () => {
    const closes = SYNC_ERROR_CODES.map((c) => SYNC_ERROR_TABLE[c].close);
    expect(new Set(closes).size).toBe(closes.length);
    for (const c of SYNC_ERROR_CODES) {
      expect(SYNC_ERROR_TABLE[c].close).toBeGreaterThanOrEqual(4000);
      expect(SYNC_ERROR_TABLE[c].close).toBeLessThanOrEqual(4999);
      expect(syncErrorOfClose(SYNC_ERROR_TABLE[c].close)).toBe(c);
    }
    expect(syncErrorOfClose(1000)).toBeNull();
  });

  it.each([
    ['http://127.0.0.1:7420', 'ws://127.0.0.1:7420/v1/sync'],
    ['https://relay.example/base/', 'wss://relay.example/base/v1/sync'],
    ['ws://127.0.0.1:7420/v1/sync', 'ws://127.0.0.1:7420/v1/sync'],
  ])('derives the sync URL of %s', (base, url) => {
    expect(syncUrl(base)).toBe(url);
  });
});

describe('tokens', () => {
  it('no fresh token can be read as an option on a command line, and each still matches only its own hash', async () => {
    const { newToken, hashToken, tokenMatches } = await import('../server/tokens.js');
    const { parseArgs } = await import('node:util');
    const seen = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const t = newToken();
      expect(t).toMatch(/^nxr_[A-Za-z0-9_-]{43}$/);
      // What `nxs sync bind --token T` does with it: parsed as the option's value, not refused.
      expect(parseArgs({ args: ['--token', t], options: { token: { type: 'string' } }, strict: true }).values.token).toBe(t);
      seen.add(t);
    }
    expect(seen.size).toBe(2_000);
    const [a, b] = [newToken(), newToken()];
    expect(tokenMatches(a, hashToken(a))).toBe(true);
    expect(tokenMatches(b, hashToken(a))).toBe(false);
  });
});
