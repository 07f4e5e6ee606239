// Fresh ids draw their random characters from one pooled buffer: ulidx alone asks the crypto source once
// per character, sixteen times an id, and op ids, request keys and run ids are made by the thousand.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { newRequestKey, RequestKeySchema } from '../protocol/commands.js';
import { newThreadId, randomUlid } from '../protocol/ids.js';

afterEach(() => vi.restoreAllMocks());

describe('fresh ids', () => {
  it.each([
    ['request keys', () => newRequestKey(), /^r-[0-9A-HJKMNP-TV-Z]{26}$/],
    ['ULIDs', () => randomUlid(), /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/],
    ['thread ids', () => newThreadId() as string, /^t-[0-7][0-9A-HJKMNP-TV-Z]{25}$/],
  ])('%s: a thousand take at most five fills of the crypto source, and all differ', (_what, make, shape) => {
    const fills = vi.spyOn(globalThis.crypto, 'getRandomValues');
    const made = Array.from({ length: 1_000 }, make);
    expect(fills.mock.calls.length).toBeLessThanOrEqual(5);
    expect(new Set(made).size).toBe(1_000);
    for (const id of made) expect(id).toMatch(shape);
  });

  it('a request key is what the request schema takes', () => {
    expect(RequestKeySchema.safeParse(newRequestKey()).success).toBe(true);
  });
});
