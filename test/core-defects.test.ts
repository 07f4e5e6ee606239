// Defects of the core found against the seed's words: each case reproduces one, in process.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './helpers/until.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

describe('a session starts with the environment its spec declares', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('asker', { mode: 'env-wait', arg: 'sleeper' });
    ws.persona('sleeper', { mode: 'hang' });
  });
  afterAll(() => ws.cleanup());

  it('a read command that settles a dead turn wakes the requester with the environment it was commissioned under, not the reader’s', async () => {
    const sent = await ws.nxc(['send', 'asker', '--subject', 's', '--json', 'go'], { env: { MARK: 'commissioner' } });
    expect(sent.code).toBe(0);
    const sleeper = await until('the sleeper to run', async () => ws.agentLog().find((e) => e.role?.endsWith('/sleeper') && e.cmd === 'start'));
    // The sleeper dies without reporting; somebody else's `nxc status` notices and settles it.
    expect(sleeper.session).toBeDefined();
    for (const pid of ws.inproc!.runningPids()) ws.inproc!.crash(pid);
    const status = await ws.nxc(['status', '--json'], { env: { MARK: 'reader' } });
    expect(status.code).toBe(0);
    await ws.waitIdle();
    const view = await ws.nxc(['threads', 'show', sent.json.thread, '--json']);
    expect(view.json.messages.at(-1).text).toBe('MARK=commissioner');
  });
});

describe('tools: [] means one truth', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('quiet', { mode: 'gate', arg: join(ws.root, '..', 'never'), tools: [] });
    ws.persona('bypass', { mode: 'gate', arg: join(ws.root, '..', 'never'), tools: [], extra: 'permissions: bypassPermissions' });
  });
  afterAll(async () => {
    writeFileSync(join(ws.root, '..', 'never'), '');
    await ws.cleanup();
  });

  it('a reply-only session may reply in its own thread only: another operation’s thread is refused with REPLY_ONLY', async () => {
    const other = await ws.nxc(['send', '@bob', '--subject', 'other', '--json', 'unrelated']);
    const mine = await ws.nxc(['send', 'quiet', '--subject', 's', '--json', 'answer me']);
    const env = { NXC_SESSION: mine.json.woke.session, NXC_ACTOR: mine.json.woke.handle, NXC_HOP: '1' };
    const stray = await ws.nxc(['reply', '--thread', other.json.thread, '--json', 'not yours'], { env });
    expect(stray.code).toBe(2);
    expect(stray.json.error.code).toBe('REPLY_ONLY');
    const own = await ws.nxc(['reply', '--thread', mine.json.thread, '--json', 'mine'], { env });
    expect(own.code).toBe(0);
  });

  it('with permissions: bypassPermissions the session is told no tool limit and the engine lets it send', async () => {
    const sent = await ws.nxc(['send', 'bypass', '--subject', 's', '--json', 'go']);
    const { readFileSync } = await import('node:fs');
    const spec = JSON.parse(readFileSync(join(ws.root, '.nxs', 'sessions', sent.json.woke.session, 'spec.json'), 'utf8'));
    expect(spec.reply_only).toBe(false);
    expect(spec.allowed_tools).toBeNull();
    expect(spec.env.NXC_ALLOWED_TOOLS).toBeUndefined();
    const env = { NXC_SESSION: sent.json.woke.session, NXC_ACTOR: sent.json.woke.handle, NXC_HOP: '1' };
    const r = await ws.nxc(['send', '@carol', '--subject', 's', '--json', 'allowed'], { env });
    expect(r.code).toBe(0);
  });
});
