// The dashboard's operations page shows what each operation spent against its budgets, and the workspace's
// spend today: pure rendering over a status report, as `nxc status --json` gives it.
import { describe, expect, it } from 'vitest';
import type { StatusOperation, StatusReport } from '../../protocol/receipts.js';
import { renderOperations } from '../../node-agent/host/ui/index.js';

const WS = 'aaaaaaaaaaaaaaaaaaaaaaaaaa';

function op(id: string, usage: StatusOperation['usage']): StatusOperation {
  return { operation: id, subject: id, opener: 'alice', finished: false, threads: [], open: 0, turns: { used: 3, budget: 500 }, usage, lease: null, untrusted: false };
}

function status(operations: StatusOperation[]): StatusReport {
  return {
    workspace: { id: WS, name: 'web' },
    operations,
    worker_names_a_working_copy: false,
    worker_answers_liveness: true,
    finished_awaiting: [],
    untrusted: { operations: 0, workspaces: [] },
    spend_today: { day: '2026-12-06', tokens: 4200, cost: 1.5, resets_at: '2026-12-07T00:00:00.000Z', budget: { max_tokens: null, max_cost: 10 } },
    notes: [],
  };
}

describe('the operations page and spend', () => {
  it('shows each operation\'s tokens and cost against its budgets, marks one used up, and the workspace\'s spend today', () => {
    const carried = { tokens: 0, cost: 0 };
    const html = renderOperations([
      {
        id: WS,
        name: 'web',
        root: '/w',
        sync: null,
        error: null,
        status: status([
          op('t-under', { tokens_in: 900, tokens_out: 100, tokens: 1000, cost: 0.02, unpriced_turns: 0, carried, budget: { max_tokens: 5000, max_cost: null } }),
          op('t-over', { tokens_in: 5000, tokens_out: 1000, tokens: 6000, cost: 0.5, unpriced_turns: 1, carried, budget: { max_tokens: 5000, max_cost: null } }),
        ]),
      },
    ]);
    const part = (id: string) => {
      const at = html.indexOf(`id="op-${id}"`);
      return html.slice(at, html.indexOf('</details>', at));
    };
    const [under, over] = [part('t-under'), part('t-over')];
    expect(under).toContain('tokens 1000 of 5000 · cost $0.0200');
    expect(under).not.toContain('spend budget used up');
    expect(over).toContain('tokens 6000 of 5000 · cost $0.5000 (1 unpriced)');
    expect(over).toContain('spend budget used up');
    expect(html).toContain('Spent today (2026-12-06 UTC): 4200 tokens, $1.50 of $10.00 · resets at 2026-12-07T00:00:00.000Z');
  });
});
