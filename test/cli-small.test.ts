// Small things a person meets at the command line: help that writes flags as they are typed and shows the
// required ones, `-v`, completion from nxs too, a thread named by the start of its id, and a sync rate
// that does not invent movement. In process; a real workspace for the thread ids.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateMeter } from '../node-agent/cli/sync-watch.js';
import { runMain } from './helpers/host.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

const run = (bin: 'nxc' | 'nxs', args: string[]) => runMain(bin, args, { env: process.env, cwd: process.cwd() });

describe('the help and the version', () => {
  it('writes flags with their dashes and required options without brackets', async () => {
    const r = await run('nxc', ['--help']);
    expect(r.stdout).toContain('hand it back up with --escalate, or send a channel step back with --needs-rework');
    expect(r.stdout).toContain('open operations (--all: finished ones too)');
    expect(r.stdout).toMatch(/nxc reply --thread ID \[TEXT \| -\]/);
    expect(r.stdout).toMatch(/nxc wait --thread ID /);
    expect(r.stdout).toMatch(/nxc withdraw --thread ID /);
    const verb = await run('nxc', ['reply', '--help']);
    expect(verb.stdout).toMatch(/^usage: nxc reply --thread ID \[TEXT \| -\] \[--escalate\]/);
    expect(verb.stdout).not.toContain('[--thread ID]');
  });

  it('-v prints the version, as --version does', async () => {
    const v = await run('nxc', ['-v']);
    expect(v.code, v.stderr).toBe(0);
    expect(v.stdout).toBe((await run('nxc', ['--version'])).stdout);
    expect(v.stdout).toMatch(/^nxc \d+\.\d+\.\d+/);
  });

  it('nxs completion prints the same script as nxc completion', async () => {
    const nxs = await run('nxs', ['completion', 'bash']);
    expect(nxs.code, nxs.stderr).toBe(0);
    expect(nxs.stdout).toBe((await run('nxc', ['completion', 'bash'])).stdout);
  });
});

describe('a thread named by the start of its id', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
  });
  afterAll(async () => ws?.cleanup());

  it('is the thread when one thread starts so; too short a start is not guessed', async () => {
    const sent = await ws.nxc(['send', '@bob', '--subject', 'prefix', 'hello', '--json']);
    const thread = sent.json.thread as string;
    const shown = await ws.nxc(['threads', 'show', thread.slice(0, 12), '--json']);
    expect(shown.code, shown.stdout + shown.stderr).toBe(0);
    expect(JSON.stringify(shown.json.thread)).toContain(thread);
    const replied = await ws.nxc(['reply', '--thread', thread.slice(0, 12).toLowerCase(), 'thanks', '--json']);
    expect(replied.code, replied.stdout + replied.stderr).toBe(0);
    expect(replied.json.thread).toBe(thread);
    expect((await ws.nxc(['threads', 'show', 't-0', '--json'])).json.error.code).toBe('UNKNOWN_THREAD');
  });
});

describe('the sync rate while watching', () => {
  it('is 0 when nothing moves, however far the cursor already is', () => {
    const rate = rateMeter();
    expect(rate(3824, 1_000)).toBe(0);
    expect(rate(3824, 1_250)).toBe(0);
    expect(rate(3824, 3_500)).toBe(0);
  });

  it('counts what moved since the first cursor seen', () => {
    const rate = rateMeter();
    rate(100, 0);
    expect(rate(600, 500)).toBe(1000);
  });
});
