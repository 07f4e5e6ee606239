// Helpers for the channel scenario tests: declaring channels, reading rounds and threads back.
import { exitCodeOf } from '../../protocol/receipts.js';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { TestWorkspace } from '../helpers/workspace.js';

/** Writes `.nxs-channels/<name>.yaml`. */
export function declareChannel(ws: TestWorkspace, name: string, yaml: string): void {
  const dir = join(ws.root, '.nxs-channels');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.yaml`), yaml);
}

/** `nxc send '#name'` as `env` (a person, alice, by default); fails the test unless it exits 0. */
export async function ask(ws: TestWorkspace, channel: string, text: string, env?: Record<string, string>): Promise<any> {
  const r = await ws.nxc(['send', `#${channel}`, '--subject', `ask #${channel}`, '--json', text], { env });
  // Posted: 0, or 3 when a trigger failed after the message was written (a step skipped, a requester not woken).
  expect(r.code, r.stdout + r.stderr).toBe(r.json ? exitCodeOf(r.json.warnings ?? []) : 0);
  return r.json;
}

export function rowOf(status: any, thread: string): any {
  for (const op of status.operations) for (const row of op.threads) if (row.thread === thread) return row;
  return undefined;
}

/** The round on its thread's status row. */
export async function roundOf(ws: TestWorkspace, round: string): Promise<any> {
  const row = rowOf(await ws.status(true), round);
  expect(row?.round, `no round on the row of ${round}`).toBeDefined();
  return row.round;
}

export async function messagesOf(ws: TestWorkspace, thread: string): Promise<any[]> {
  const view = await ws.nxc(['threads', 'show', thread, '--json']);
  expect(view.code, view.stdout + view.stderr).toBe(0);
  return view.json.messages;
}

/** The ops of one kind in the workspace's log, in log order. */
export async function opsOf(ws: TestWorkspace, ...kinds: string[]): Promise<any[]> {
  return ws.withStore(async (store) => {
    const r = await store.pg.query<any>(`select kind, thread, session, body, lamport from ops where kind = any($1) order by lamport, id`, [kinds]);
    return r.rows;
  });
}

export function promptOf(ws: TestWorkspace, session: string, turn: number): string {
  return readFileSync(join(ws.root, '.nxs', 'sessions', session, `turn-${turn}.prompt`), 'utf8');
}

/** Polls until `check` holds (agents run on real time; windows never are waited for). */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
