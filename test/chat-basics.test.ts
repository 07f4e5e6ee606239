// The core loop through the real CLI: init, commission a persona, its session answers, status tells the truth.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

describe('a commission and its answer', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('coder', { mode: 'reply' });
  });
  afterAll(() => ws.cleanup());

  it('init a second time changes nothing and says so', async () => {
    const again = await ws.nxs(['init', '--json']);
    expect(again.code).toBe(0);
    expect(again.json).toMatchObject({ created: false, workspace: ws.id });
  });

  it('send starts a session whose answer finishes the operation and awaits the human at its root', async () => {
    const sent = await ws.nxc(['send', 'coder', '--subject', 'parser', '--json', 'write the parser']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    expect(sent.json).toMatchObject({ posted: true, refs_warning: null, warnings: [], worker_names_a_working_copy: true });
    expect(sent.json.woke).toMatchObject({ handle: `${ws.short}/coder`, depth: 1, turn: 1 });
    expect(sent.json.working_copy).toMatchObject({ branch: 'main', dirty: false });
    await ws.waitIdle();
    const open = await ws.status(false);
    expect(open.operations).toEqual([]);
    const all = await ws.status(true);
    const op = all.operations.find((o: any) => o.operation === sent.json.operation);
    expect(op.finished).toBe(true);
    expect(op.threads[0]).toMatchObject({
      thread: sent.json.thread,
      state: 'answered',
      awaiting_human: true,
      escalated: false,
      substituted: false,
      answered_by: `${ws.short}/coder`,
    });
  });

  it('a send without a subject still posts and carries refs_warning', async () => {
    const sent = await ws.nxc(['send', 'coder', '--json', 'no subject here']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    expect(sent.json.posted).toBe(true);
    expect(typeof sent.json.refs_warning).toBe('string');
    await ws.waitIdle();
  });

  it('reads the message from stdin when TEXT is - or absent', async () => {
    const sent = await ws.nxc(['send', 'coder', '--subject', 'heredoc', '--json', '-'], { input: 'line one\nline two\n' });
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    await ws.waitIdle();
    const view = await ws.nxc(['threads', 'show', sent.json.thread, '--json']);
    expect(view.json.messages[0].text).toBe('line one\nline two\n');
    expect(view.json.messages[0].refs.working_copy).toMatchObject({ branch: 'main', dirty: false });
  });
});
