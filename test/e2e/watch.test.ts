// Watching instead of polling: `nxc wait --thread` returns when the thread is answered and says how by its
// exit code; `nxc status --watch` redraws when something changes and stops on Ctrl-C.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { outcomeOf, timeoutOption, WAIT_EXIT } from '../../node-agent/cli/watch-cmd.js';
import { makeWorkspace, REPO, type TestWorkspace } from '../helpers/workspace.js';
import { until } from '../helpers/until.js';

describe('nxc wait --thread', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace({ git: false });
    ws.persona('coder', { mode: 'reply' });
    ws.persona('stuck', { mode: 'escalate' });
    ws.persona('sleeper', { mode: 'hang' });
  });
  afterAll(() => ws.cleanup());

  async function commission(role: string): Promise<string> {
    const sent = await ws.nxc(['send', role, '--subject', `for ${role}`, 'please', '--json']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    return sent.json.thread as string;
  }

  it('exits 0 once the thread is answered, saying by whom', async () => {
    const thread = await commission('coder');
    const r = await ws.nxc(['wait', '--thread', thread, '--timeout', '60', '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json).toMatchObject({ outcome: 'answered', thread: { thread, state: 'answered', answered_by: `${ws.short}/coder` } });
    const text = await ws.nxc(['wait', '--thread', thread]);
    expect(text.stdout).toBe(`${thread}: answered by ${ws.short}/coder\n`);
  });

  it(`exits ${WAIT_EXIT.escalated} when the answer is an escalation`, async () => {
    const thread = await commission('stuck');
    const r = await ws.nxc(['wait', '--thread', thread, '--timeout', '60', '--json']);
    expect(r.code).toBe(WAIT_EXIT.escalated);
    expect(r.json).toMatchObject({ outcome: 'escalated', thread: { escalated: true } });
  });

  it(`exits ${WAIT_EXIT.timed_out} when the thread is still open at --timeout`, async () => {
    const thread = await commission('sleeper');
    const r = await ws.nxc(['wait', '--thread', thread, '--timeout', '0.2', '--json']);
    expect(r.code).toBe(WAIT_EXIT.timed_out);
    expect(r.json).toMatchObject({ outcome: 'timed_out', thread: { state: 'open' } });
  });

  it('refuses an unknown thread (UNKNOWN_THREAD, exit 2), a missing --thread and a bad --timeout (USAGE)', async () => {
    const unknown = await ws.nxc(['wait', '--thread', 't-01aaaaaaaaaaaaaaaaaaaaaaaa', '--json']);
    expect(unknown.code).toBe(2);
    expect(unknown.json.error.code).toBe('UNKNOWN_THREAD');
    for (const args of [['wait'], ['wait', '--thread', 't-x', '--timeout', 'soon'], ['wait', '--thread', 't-x', '--timeout', '0']]) {
      const r = await ws.nxc([...args, '--json']);
      expect(r.json.error.code, args.join(' ')).toBe('USAGE');
    }
  });

  it.each([
    [{ state: 'open', escalated: false, rejected_code: null }, null],
    [{ state: 'answered', escalated: false, rejected_code: null }, 'answered'],
    [{ state: 'answered', escalated: true, rejected_code: null }, 'escalated'],
    [{ state: 'answered', escalated: true, rejected_code: 'STAMP_UNTRUSTED' }, 'refused'],
  ] as const)('a thread %j is %s', (row, outcome) => {
    expect(outcomeOf(row)).toBe(outcome);
  });

  it.each([
    [undefined, null],
    ['30', 30_000],
    ['0.5', 500],
  ])('--timeout %s waits %s ms', (raw, ms) => {
    expect(timeoutOption(raw)).toBe(ms);
  });
});

describe('nxc status --watch', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace({ git: false, real: true });
    // The watcher is the real process; the commands beside it run in this process, on their own route.
    ws.cliInProcess = true;
  });
  afterAll(() => ws.cleanup());

  it('draws the status, redraws it when an operation opens, and stops on Ctrl-C', async () => {
    const child = spawn(process.execPath, [join(REPO, 'bin', 'nxc'), 'status', '--watch'], {
      cwd: ws.root,
      env: { ...process.env, NEXUS_HOME: inject('nexusHome'), NXC_ACTOR: 'alice' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await until('the first picture', async () => (out.includes('no open operations') ? true : undefined));
      expect(out.match(/^--- nxc status/gm)).toHaveLength(1);
      const sent = await ws.nxc(['send', '@bob', '--subject', 'watched', 'hello', '--json']);
      expect(sent.code, sent.stdout + sent.stderr).toBe(0);
      await until('the redraw', async () => (out.includes('"watched"') ? true : undefined));
      expect(out.match(/^--- nxc status/gm)).toHaveLength(2);
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
  });

  it('is for people: with --json it is refused', async () => {
    const r = await ws.nxc(['status', '--watch', '--json']);
    expect(r.code).toBe(2);
    expect(r.json.error.code).toBe('USAGE');
  });
});
