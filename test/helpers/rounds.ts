// The depth guard's round-after-round check, shared by the in-process and the through-a-node runs: what the
// fixture agent logged of each turn, and the operation's rows in status.
import { expect } from 'vitest';
import type { TestWorkspace } from './workspace.js';

export type Row = { thread: string; parent: string | null; to: string; state: string; awaiting_human: boolean; session: { id: string; depth: number; turn: number; running: boolean } | null };

export function operationOf(status: any, id: string): { finished: boolean; threads: Row[] } {
  const op = status.operations.find((o: any) => o.operation === id);
  if (!op) throw new Error(`operation ${id} is not in status: ${JSON.stringify(status.operations.map((o: any) => o.operation))}`);
  return op;
}

/** The `start` entries the fixture agent logged, one per turn it ran. */
export function starts(ws: TestWorkspace, handle?: string): any[] {
  return ws.agentLog().filter((e) => e.cmd === 'start' && (handle === undefined || e.role === handle));
}

/**
 * An orchestrator at depth 1 commissions a coder `n` times, one round per turn, then answers: every coder opens
 * at depth 2 and the orchestrator wakes at depth 1 on every turn.
 */
export async function roundAfterRound(ws: TestWorkspace, n: number, timeoutMs: number): Promise<void> {
  const orch = `${ws.short}/orchestrator`;
  const coder = `${ws.short}/coder`;
  const sent = await ws.nxc(['send', 'orchestrator', '--subject', `${n} rounds`, '--json', `run ${n} rounds`]);
  expect(sent.code, sent.stdout + sent.stderr).toBe(0);
  expect(sent.json.woke).toMatchObject({ handle: orch, depth: 1, turn: 1 });
  await ws.waitIdle(timeoutMs);

  // The orchestrator ran n + 1 turns (n commissioning, 1 answering), every one with NXC_HOP=1.
  const orchStarts = starts(ws, orch);
  expect(orchStarts.map((e) => e.turn)).toEqual(Array.from({ length: n + 1 }, (_, i) => i + 1));
  expect(new Set(orchStarts.map((e) => e.hop))).toEqual(new Set(['1']));
  expect(new Set(orchStarts.map((e) => e.session)).size).toBe(1);

  // Each of its n sends was accepted and woke a fresh coder session at depth 2.
  const orchSends = ws.agentLog().filter((e) => e.role === orch && e.cmd === 'send');
  expect(orchSends).toHaveLength(n);
  for (const s of orchSends) {
    expect(s.code, JSON.stringify(s)).toBe(0);
    expect(s.out.woke).toMatchObject({ handle: coder, depth: 2, turn: 1 });
  }
  const coderStarts = starts(ws, coder);
  expect(coderStarts).toHaveLength(n);
  expect(new Set(coderStarts.map((e) => e.session)).size).toBe(n);
  expect(new Set(coderStarts.map((e) => e.hop))).toEqual(new Set(['2']));
  const coderReplies = ws.agentLog().filter((e) => e.role === coder && e.cmd === 'reply');
  expect(coderReplies.map((e) => e.code)).toEqual(Array(n).fill(0));

  // The store says the same: one depth-1 orchestrator session, n answered depth-2 coder rounds.
  const op = operationOf(await ws.status(true), sent.json.operation);
  expect(op.finished).toBe(true);
  const root = op.threads.find((t) => t.thread === sent.json.thread)!;
  expect(root).toMatchObject({ parent: null, state: 'answered', awaiting_human: true, session: { depth: 1, turn: n + 1, running: false } });
  const rounds = op.threads.filter((t) => t.thread !== root.thread);
  expect(rounds).toHaveLength(n);
  for (const r of rounds) {
    expect(r).toMatchObject({ parent: root.thread, to: coder, state: 'answered', awaiting_human: false, session: { depth: 2, running: false } });
  }
  expect(new Set(rounds.map((r) => r.session!.id)).size).toBe(n);
  const answer = await ws.nxc(['threads', 'show', root.thread, '--json']);
  expect(answer.json.messages.at(-1)).toMatchObject({ author: orch, effect: 'answer', substituted: false, text: `all ${n} rounds done` });
}
