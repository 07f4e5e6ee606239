// Where the seed gives exact words for what a person reads, the product says exactly those words.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeTree, describeWorkingCopy } from '../node-agent/adapters/git/index.js';
import { until } from './helpers/until.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

const commit = '9f2c1ab4e7d0aa55aa55aa55aa55aa55aa55aa55';
const fingerprint = 'sha256:' + 'ab'.repeat(32);

describe('the working-copy record in words', () => {
  it('threads show says "uncommitted work NOT saved anywhere" under a dirty message', () => {
    expect(describeWorkingCopy({ commit, branch: 'feat/parser', dirty: true, fingerprint })).toBe('9f2c1ab4e7d0 on feat/parser · uncommitted work NOT saved anywhere');
  });
  it('a status row ends with "· tree <commit> on <branch>, uncommitted work NOT saved"', () => {
    expect(` · tree ${describeTree({ commit, branch: 'feat/parser', dirty: true, fingerprint })}`).toBe(' · tree 9f2c1ab4e7d0 on feat/parser, uncommitted work NOT saved');
    expect(describeTree({ commit, branch: 'feat/parser', dirty: false, fingerprint })).toBe('9f2c1ab4e7d0 on feat/parser');
  });
});

describe('through the CLI', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('quitter', { mode: 'exit0' });
  });
  afterAll(() => ws.cleanup());

  it('an answer the runtime writes in a session’s name begins "sidecar:"', async () => {
    const sent = await ws.nxc(['send', 'quitter', '--subject', 's', '--json', 'please answer']);
    await ws.waitIdle();
    const view = await ws.nxc(['threads', 'show', sent.json.thread, '--json']);
    const last = view.json.messages.at(-1);
    expect(last.substituted).toBe(true);
    expect(last.text.startsWith('sidecar:')).toBe(true);
  });

  it('the status row and the thread view of a dirty tree use the seed’s words', async () => {
    writeFileSync(join(ws.root, 'scratch.txt'), 'work in progress\n');
    execFileSync('git', ['checkout', '-q', '-b', 'feat/parser'], { cwd: ws.root });
    const sent = await ws.nxc(['send', '@bob', '--subject', 's', 'look']);
    expect(sent.code).toBe(0);
    const status = await ws.nxc(['status']);
    expect(status.stdout).toMatch(/ · tree [0-9a-f]{12} on feat\/parser, uncommitted work NOT saved\n/);
    const thread = (await ws.status(false)).operations.at(-1).threads[0].thread;
    const view = await ws.nxc(['threads', 'show', thread]);
    expect(view.stdout).toMatch(/working copy: [0-9a-f]{12} on feat\/parser · uncommitted work NOT saved anywhere/);
  });
});

describe('exit codes of warnings', () => {
  let ws: TestWorkspace;
  let gate: string;
  beforeAll(async () => {
    ws = await makeWorkspace();
    gate = join(ws.root, '..', 'gate');
    ws.persona('ghost', { mode: 'gate', arg: gate });
    // A runtime that cannot be started: the message is written, the trigger fails.
    writeFileSync(join(ws.root, '.nxs-personas', 'broken.yaml'), 'model: m\nsystem_prompt: p\nruntime:\n  command: [/nonexistent/runtime]\n');
    ws.persona('asker', { mode: 'wait', arg: 'ghost' });
  });
  afterAll(async () => {
    writeFileSync(gate, '');
    await ws.cleanup();
  });

  it('a commission whose session cannot start prints the whole receipt and exits 3 with step_skipped start_failed', async () => {
    const r = await ws.nxc(['send', 'broken', '--subject', 's', '--json', 'go']);
    expect(r.code).toBe(3);
    expect(r.json).toMatchObject({ posted: true, woke: null });
    expect(r.json.warnings).toContainEqual(expect.objectContaining({ class: 'step_skipped', reason: 'start_failed', role: 'broken' }));
  });

  it('an answer whose requester cannot be started (its persona deleted) is requester_not_woken with the reason, and exits 3', async () => {
    const sent = await ws.nxc(['send', 'asker', '--subject', 's', '--json', 'ask ghost']);
    expect(sent.code).toBe(0);
    // The asker commissions the ghost and waits; the ghost holds until the gate opens.
    await until('the ghost to start', async () => (ws.agentLog().some((e) => e.role?.endsWith('/ghost') && e.cmd === 'start') ? true : undefined));
    rmSync(join(ws.root, '.nxs-personas', 'asker.yaml'));
    writeFileSync(gate, '');
    await ws.waitIdle();
    const answer = ws.agentLog().find((e) => e.role?.endsWith('/ghost') && e.cmd === 'reply');
    expect(answer.code).toBe(3);
    expect(answer.out.posted).toBe(true);
    expect(answer.out.warnings).toEqual([expect.objectContaining({ class: 'requester_not_woken', reason: 'persona_missing', role: 'asker' })]);
  });
});
