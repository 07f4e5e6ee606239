// Where the seed gives exact words for what a person reads, the product says exactly those words.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeTree, describeWorkingCopy } from '../node-agent/adapters/git/index.js';
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
