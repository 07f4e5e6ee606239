// A hundred rounds of conversation in one operation (201 turns): real work the operation budget must not
// stop. Long by nature, so it runs in `npm test` and not in `npm run test:fast`.
import { afterEach, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';

let ws: TestWorkspace | undefined;
afterEach(async () => {
  await ws?.cleanup();
  ws = undefined;
});

function operationOf(status: any, id: string): any {
  const op = status.operations.find((o: any) => o.operation === id);
  if (!op) throw new Error(`operation ${id} is not in status`);
  return op;
}

describe('real work under the budget', () => {
  it('an orchestrator talking to a persona over 100 rounds with different texts is not stopped', { timeout: 300_000 }, async () => {
    const w = (ws = await makeWorkspace());
    w.persona('orchestrator', { mode: 'rounds', arg: 'coder:100' });
    w.persona('coder', { mode: 'reply' });
    const sent = await w.nxc(['send', 'orchestrator', '--subject', 'a hundred rounds', '--json', 'run a hundred rounds']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    await w.waitIdle(280_000);
    const sends = w.agentLog().filter((e) => e.cmd === 'send');
    expect(sends).toHaveLength(100);
    for (const s of sends) expect(s, JSON.stringify(s)).toMatchObject({ code: 0, out: { warnings: [] } });
    const op = operationOf(await w.status(true), sent.json.operation);
    expect(op.turns).toEqual({ used: 201, budget: 500 });
    expect(op.finished).toBe(true);
    expect(op.threads.find((t: any) => t.thread === sent.json.thread)).toMatchObject({ state: 'answered', escalated: false, substituted: false, awaiting_human: true });
    const view = await w.nxc(['threads', 'show', sent.json.thread, '--json']);
    expect(view.json.messages.at(-1)).toMatchObject({ effect: 'answer', text: 'all 100 rounds done' });
  });
});
