// Depth at a channel: a requester at the cap is refused before a round is opened. (That a hundred rounds
// leave the requester at the depth it had is in test/long/channel-rounds.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { declareChannel, opsOf } from './scenario.js';

describe('a channel asked from the depth cap', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('owner', { mode: 'reply' });
    ws.persona('coder', { mode: 'reply' });
    declareChannel(ws, 'review', 'members: [coder]\nowner: owner\n');
  });
  afterAll(() => ws.cleanup());

  it('a requester at the cap is refused before anything is written', async () => {
    const before = (await opsOf(ws, 'round.opened')).length;
    const r = await ws.nxc(['send', '#review', '--subject', 's', '--json', 'too deep'], { env: { NXC_HOP: '32' } });
    expect(r.code).toBe(2);
    expect(r.json.error.code).toBe('DEPTH_EXCEEDED');
    expect((await opsOf(ws, 'round.opened')).length).toBe(before);
    expect((await opsOf(ws, 'thread.opened')).filter((o) => o.body.target.kind === 'channel')).toHaveLength(before);
  });
});
