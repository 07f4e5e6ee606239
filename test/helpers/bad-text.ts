// What the BAD_TEXT tests check a command's result and a workspace's store against.
import { expect } from 'vitest';
import type { CliResult, TestWorkspace } from './workspace.js';

/** Every op and every fold, as text: what "nothing was written" is checked against. */
export function dump(ws: TestWorkspace): Promise<string> {
  return ws.withStore(async (store) => {
    const ops = await store.pg.query('select id from ops order by local_seq');
    const operations = await store.pg.query('select id, state from operations order by id');
    const parts = await store.pg.query('select * from operation_parts order by operation, kind, key');
    return JSON.stringify({ ops: ops.rows, operations: operations.rows, parts: parts.rows });
  });
}

/** A refusal with BAD_TEXT (exit 2) for `field`, naming it, with no SQL in what was printed. */
export function expectBadText(r: CliResult, field: string, reason: 'nul' | 'surrogate' = 'nul'): void {
  expect(r.code, r.stdout + r.stderr).toBe(2);
  expect(r.json.error).toMatchObject({ code: 'BAD_TEXT', details: { field, reason } });
  expect(r.json.error.message).toContain(field);
  expect(r.stdout + r.stderr).not.toMatch(/insert into|Failed query|params:/i);
}
