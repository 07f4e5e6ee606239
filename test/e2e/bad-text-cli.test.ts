// A NUL byte through the real nxc process: BAD_TEXT (exit 2) naming the field, no SQL and no signed op in
// what it prints, and nothing written. Every other path text comes in by is test/bad-text.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dump, expectBadText } from '../helpers/bad-text.js';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';

describe('a NUL byte through the real CLI', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace({ real: true });
  });
  afterAll(async () => ws?.cleanup());

  it('nxc send with a NUL on stdin exits 2 with BAD_TEXT, and prints no SQL and no signed op', async () => {
    const r = await ws.nxc(['send', '@bob', '--subject', 's', '--json', '-'], { input: 'a\u0000b' });
    expectBadText(r, 'text');
    const plain = await ws.nxc(['send', '@bob', '--subject', 's', '-'], { input: 'a\u0000b' });
    expect(plain.code).toBe(2);
    expect(plain.stderr).toMatch(/^error BAD_TEXT: /);
    expect(plain.stderr).not.toMatch(/insert|"sig"|params/i);
    expect(await dump(ws)).toBe(JSON.stringify({ ops: [], operations: [], parts: [] }));
  });
});
