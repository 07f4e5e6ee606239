// Rules of the seed that no other test drives: a release that fails after its command failed, a provider answer
// that arrives after cancellation, the working-copy record while a rebase, cherry-pick, revert or bisect is in
// progress, and, in the lease's rules, a step whose start failed and is to be retried, a register the engine
// moves on its own, and holders that are not provably gone.
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path, { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fileCommandLeases, leaseFile, withCommandLease, workingCopyRevision } from '../../node-agent/capabilities/runtime/index.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider/index.js';
import { gitEnv } from '../helpers/git-env.js';
import { until } from '../helpers/until.js';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { HOUR, Lease, MIN, ofType, startedThreads, world } from '../leases/harness.js';
import { journalOf, makeWorkingCopy, runAgainst, stateFile } from '../runtime/fixture.js';

describe('a command lease whose release fails after the command failed', () => {
  it('throws the command\'s own error, with the release\'s failure attached to it', async () => {
    const wc = makeWorkingCopy();
    try {
      const file = leaseFile(wc.root);
      const revision = workingCopyRevision(wc.root);
      const leases = fileCommandLeases({ file, revision });
      const err = await withCommandLease(leases, { owner: 'test', expectedRevision: await revision() }, async () => {
        // The lease disappears under the command, so its release cannot succeed.
        rmSync(file, { recursive: true, force: true });
        throw new Error('the command itself failed');
      }).then(
        () => null,
        (e: unknown) => e as Error & { notes?: string[] },
      );
      expect(err?.message).toBe('the command itself failed');
      expect(err?.notes?.join('\n')).toMatch(/releasing the command lease also failed/);
    } finally {
      wc.cleanup();
    }
  });
});

describe('a provider answer that arrives after the run was cancelled', () => {
  let fake: FakeProvider;
  beforeAll(async () => {
    fake = await startFakeProvider();
  });
  afterAll(() => fake.close());

  it('changes nothing: the run ends cancelled, the late answer is not recorded and its tool call never runs', async () => {
    const wc = makeWorkingCopy();
    try {
      fake.setScript([{ reply: { text: 'too late', tool_calls: [{ name: 'Write', input: { path: 'late.txt', content: 'should not exist' } }] }, delayMs: 1_500 }]);
      const ac = new AbortController();
      const run = runAgainst(fake, wc.root, { signal: ac.signal, permissions: 'bypassPermissions' });
      await until('the request to reach the provider', async () => (fake.requests.length === 1 && existsSync(path.join(wc.root, '.nxs', 'runs', 'r', 'run.json')) ? true : undefined));
      ac.abort();
      const r = await run;
      expect(r.status).toBe('cancelled');
      // Give the late answer time to arrive before looking for any trace of it.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(stateFile(wc.root).status).toBe('cancelled');
      const journal = journalOf(wc.root);
      expect(journal.filter((e) => e.t === 'message' && e.message.role === 'assistant')).toEqual([]);
      expect(journal.filter((e) => e.t === 'tool_call' || e.t === 'tool_done')).toEqual([]);
      expect(existsSync(join(wc.root, 'late.txt'))).toBe(false);
      expect(journal.at(-1)).toMatchObject({ t: 'status', status: 'cancelled' });
    } finally {
      wc.cleanup();
    }
  });
});

describe('the working-copy record while a sequence is in progress', () => {
  let ws: TestWorkspace;
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ws.root, env: gitEnv(), encoding: 'utf8' });
  const gitFails = (...args: string[]) => expect(() => execFileSync('git', args, { cwd: ws.root, env: gitEnv(), stdio: 'ignore' })).toThrow();
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('coder', { mode: 'exit0' });
  });
  afterAll(() => ws.cleanup());
  afterEach(() => {
    for (const abort of [['rebase', '--abort'], ['cherry-pick', '--abort'], ['revert', '--abort'], ['bisect', 'reset'], ['merge', '--abort']]) {
      try {
        execFileSync('git', abort, { cwd: ws.root, env: gitEnv(), stdio: 'ignore' });
      } catch {
        // not in that sequence
      }
    }
    git('checkout', '-q', '-f', 'main');
  });

  /** A branch `other` and main each change conflict.txt differently. */
  function conflicting(name: string): void {
    git('checkout', '-q', '-b', `other-${name}`, 'main');
    writeFileSync(join(ws.root, 'conflict.txt'), `theirs ${name}\n`);
    git('add', '-A');
    git('commit', '-q', '-m', `theirs ${name}`);
    git('checkout', '-q', 'main');
    writeFileSync(join(ws.root, 'conflict.txt'), `ours ${name}\n`);
    git('add', '-A');
    git('commit', '-q', '-m', `ours ${name}`);
  }

  async function recorded(): Promise<any> {
    const r = await ws.nxc(['send', 'coder', '--subject', 'mid-sequence', '--json', 'where is the tree?']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    await ws.waitIdle();
    const view = await ws.nxc(['threads', 'show', r.json.thread, '--json']);
    return view.json.messages[0].refs.working_copy;
  }

  it.each([
    ['rebase', () => { conflicting('rebase'); git('checkout', '-q', 'other-rebase'); gitFails('rebase', '-q', 'main'); }],
    ['cherry-pick', () => { conflicting('pick'); gitFails('cherry-pick', 'other-pick'); }],
    ['revert', () => {
      conflicting('revert');
      writeFileSync(join(ws.root, 'conflict.txt'), 'ours revert, edited again\n');
      git('commit', '-q', '-am', 'edit again');
      gitFails('revert', '--no-edit', 'HEAD~1');
    }],
  ])('records a conflicted %s as a dirty tree at the commit HEAD names', async (_name, start) => {
    start();
    const head = git('rev-parse', 'HEAD').trim();
    const wc = await recorded();
    expect(wc).toMatchObject({ commit: head, dirty: true });
    expect(wc.fingerprint).toMatch(/^sha256:/);
  });

  it('records a bisect in progress at the commit the bisect checked out, as a clean detached tree', async () => {
    for (const n of [1, 2, 3]) {
      writeFileSync(join(ws.root, 'bisect.txt'), `step ${n}\n`);
      git('add', '-A');
      git('commit', '-q', '-m', `bisect step ${n}`);
    }
    git('bisect', 'start', 'HEAD', 'HEAD~3');
    const head = git('rev-parse', 'HEAD').trim();
    const wc = await recorded();
    expect(wc).toMatchObject({ commit: head, branch: null, dirty: false });
  });
});

describe('lease rules no other test drives', () => {
  it('an earlier step whose start failed and is to be retried holds the later step of the same run', () => {
    const l = new Lease();
    l.send('R', 'R', { by: { handle: 'alice', session: null } });
    l.ended('R', 'R');
    const run = (step: number) => ({ id: 'run-1', step });
    const first = l.send('R', 'R1', { run: run(1), by: { handle: 'owner', session: 's-R' } });
    expect(startedThreads(first)).toEqual(['R1']);
    l.feed({ type: 'start_failed', operation: 'R', thread: 'R1' });
    expect(startedThreads(l.send('R', 'R2', { run: run(2), by: { handle: 'owner', session: 's-R' } }))).toEqual([]);
    expect(startedThreads(l.tick())).toEqual([]);
    // Retried, started and answered, the earlier step lets the later one go.
    l.started('R', 'R1');
    l.reply('R', 'R1', 'h-R1', 'answer');
    expect(startedThreads(l.ended('R', 'R1'))).toEqual(['R2']);
  });

  it('a register the engine moves on its own answers no escalation: the hand-back keeps the copy until its contention clock runs out', () => {
    const l = new Lease();
    l.send('A', 'C', { parent: null, exclusive: false });
    l.send('A', 'S', { parent: 'C', by: { handle: 'review', session: null } });
    l.reply('A', 'S', 'coder', 'escalate');
    l.reply('A', 'C', 'review', 'escalate');
    l.send('B', 'B');
    l.feed({ type: 'answered_from_above', operation: 'A', thread: 'C', by: null });
    expect(l.holder()).toBe('A');
    expect(ofType(l.advance(29 * MIN).tick(), 'park')).toEqual([]);
    expect(ofType(l.advance(2 * MIN).tick(), 'park')[0]).toMatchObject({ operation: 'A', reason: 'contention' });
  });

  it('a holder whose session reported its end, or one on hold at an availability boundary, is not taken early', () => {
    const ended = new Lease();
    ended.send('A', 'A');
    ended.ended('A', 'A');
    ended.send('B', 'B');
    expect(ofType(ended.advance(5 * MIN).tick(), 'park')).toEqual([]);
    const held = new Lease();
    held.send('A', 'A');
    held.crashed('A', 'A');
    held.send('B', 'B', { facts: world({ boundary: ['A'] }) });
    expect(ofType(held.advance(5 * MIN).tick(world({ boundary: ['A'] })), 'park')).toEqual([]);
    expect(ofType(held.advance(2 * HOUR).tick(world({ boundary: ['A'] })), 'park')[0]).toMatchObject({ operation: 'A', reason: 'drain' });
  });

  it('a worker that cannot tell whether a process lives takes nothing early, and drains only at the bound', () => {
    const l = new Lease();
    l.send('A', 'A');
    l.crashed('A', 'A');
    l.send('B', 'B', { facts: world({ liveness_known: false }) });
    expect(ofType(l.advance(10 * MIN).tick(world({ liveness_known: false })), 'park')).toEqual([]);
    expect(ofType(l.advance(2 * HOUR).tick(world({ liveness_known: false })), 'park')[0]).toMatchObject({ operation: 'A', reason: 'drain' });
  });
});
