// Cross-workspace commissions end to end: `nxc send <workspace>/<role>` carries a stamp signed by the
// asking workspace; the receiving workspace admits it (a session at the stamped depth + 1) or records a
// refusal with a stable code. Two workspaces on one node (local delivery), and two nodes on one relay stream.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldOperation } from '../../node-agent/capabilities/threads/index.js';
import type { Op } from '../../protocol/ops.js';
import { RelayProcess, relayFolders } from '../helpers/relay.js';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { until } from '../helpers/until.js';


type Row = { thread: string; to: string; state: string; escalated: boolean; answered_by: string | null; rejected_code: string | null; session: { handle: string; depth: number; turn: number } | null };
type StatusOp = { operation: string; finished: boolean; threads: Row[] };

async function operationsOf(w: TestWorkspace): Promise<StatusOp[]> {
  return ((await w.status(true)) as { operations: StatusOp[] }).operations;
}

async function rowOf(w: TestWorkspace, thread: string): Promise<Row | undefined> {
  for (const op of await operationsOf(w)) for (const r of op.threads) if (r.thread === thread) return r;
  return undefined;
}

async function trust(receiver: TestWorkspace, asker: TestWorkspace, name?: string): Promise<void> {
  const r = await receiver.nxs([
    'sync',
    'trust',
    'add',
    '--workspace',
    asker.id,
    '--key',
    join(asker.root, '.nxs', 'keys', 'workspace.pub.jwk'),
    ...(name ? ['--name', name] : []),
    '--json',
  ]);
  expect(r.code, r.stdout + r.stderr).toBe(0);
}

const EXTERNAL = 'addressable: { external: true }';

describe('the fold of commission.rejected', () => {
  const A = 'a'.repeat(26);
  const B = 'b'.repeat(26);
  const C = 'c'.repeat(26);
  const T = 't-01aaaaaaaaaaaaaaaaaaaaaaaa';
  const base = { origin: 'o', ts: '2026-01-01T00:00:00.000Z', operation: T, thread: T, session: null, key: 'k' };
  const opened = { ...base, id: '1', workspace: A, lamport: 1, kind: 'thread.opened', body: { parent: null, subject: null, opener: { handle: 'alice', session: null }, target: { kind: 'remote', workspace: B, role: 'reviewer', handle: 'bbbb/reviewer' }, stamp: 'x' } } as Op;
  const byB = { ...base, id: '2', workspace: B, lamport: 2, kind: 'commission.rejected', body: { code: 'STAMP_UNTRUSTED', message: 'no' } } as Op;
  const byC = { ...base, id: '3', workspace: C, lamport: 3, kind: 'commission.rejected', body: { code: 'NOT_ADDRESSABLE', message: 'no' } } as Op;

  it('answers the thread as an escalation carrying the code, whatever the order; only the addressee may refuse', () => {
    const orders = [[opened, byB, byC], [byC, byB, opened], [byB, opened, byC]];
    const states = orders.map((ops) => foldOperation(T, ops));
    for (const s of states) expect(s).toEqual(states[0]);
    expect(states[0]!.threads[T]).toMatchObject({ state: 'answered', escalated: true, rejected: { code: 'STAMP_UNTRUSTED' } });
    expect(foldOperation(T, [opened, byC]).threads[T]).toMatchObject({ state: 'open', escalated: false });
  });
});

describe('cross-workspace commissions on one node (no relay)', () => {
  let a: TestWorkspace;
  let b: TestWorkspace;
  let c: TestWorkspace;

  beforeAll(async () => {
    // Real processes: B and C are served by A's node, which holds their stores, so their commands must go through it.
    const real = () => makeWorkspace({ git: false, real: true, cliInProcess: true });
    [a, b, c] = await Promise.all([real(), real(), real()]);
    await a.startNode();
    for (const w of [b, c]) {
      w.home = a.home;
      const reg = await w.nxs(['node', 'register', '--json']);
      expect(reg.code, reg.stdout + reg.stderr).toBe(0);
    }
    await trust(b, a);
    await trust(a, b, 'bee'); // only for the alias: A names B as "bee"
    b.persona('reviewer', { mode: 'reply', extra: EXTERNAL });
    b.persona('secret', { mode: 'reply' });
    c.persona('reviewer', { mode: 'reply', extra: EXTERNAL }); // C does not trust A
    a.persona('planner', { mode: 'wait', arg: `bee/reviewer` });
  });

  afterAll(async () => {
    await Promise.all([a, b, c].map((w) => w?.waitIdle().catch(() => undefined)));
    await a?.stopNode();
    for (const w of [b, c]) if (w) w.home = undefined;
    await Promise.all([a, b, c].map((w) => w?.cleanup()));
  });

  it('a person in A commissions B/reviewer: B runs it at depth 1 and A sees the answer', async () => {
    const sent = await a.nxc(['send', `${b.id}/reviewer`, '--subject', 'review', 'please review', '--json']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    expect(sent.json.woke).toBeNull();
    expect(sent.json.remote).toEqual({ workspace: b.id, role: 'reviewer' });
    const row = await until('the answer in A', async () => {
      const r = await rowOf(a, sent.json.thread);
      return r?.state === 'answered' ? r : undefined;
    });
    expect(row.escalated).toBe(false);
    expect(row.rejected_code).toBeNull();
    expect(row.to).toBe(`${b.short}/reviewer`);
    expect(row.answered_by).toBe(`${b.short}/reviewer`);
    expect(row.session).toMatchObject({ handle: `${b.short}/reviewer`, depth: 1 });
    // B holds the same thread, answered by its own session; the asker is named with A's short there.
    const inB = await rowOf(b, sent.json.thread);
    expect(inB).toMatchObject({ state: 'answered', session: { depth: 1 }, opener: `alice@${a.short}` });
    expect(b.sessionDirs()).toHaveLength(1);
    // B's people read it as awaiting A's alice, not as awaiting themselves.
    const text = await b.nxc(['status', '--all'], { env: { NXC_ACTOR: 'bob' } });
    expect(text.stdout).toContain(`awaiting alice@${a.short} (answered by ${b.short}/reviewer)`);
    expect(text.stdout).not.toContain('awaiting you');
    // The session in B was told who asks, with the workspace they ask from.
    const prompt = readFileSync(join(b.root, '.nxs', 'sessions', b.sessionDirs()[0]!, 'turn-1.prompt'), 'utf8');
    expect(prompt).toContain(`alice@${a.short}`);
  });

  it('an asker session in A is woken by B’s answer (turn 2), through an alias', async () => {
    const sent = await a.nxc(['send', 'planner', '--subject', 'plan', 'plan it', '--json']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    const op = await until('the operation to finish in A', async () => {
      const o = (await operationsOf(a)).find((x) => x.operation === sent.json.operation);
      return o?.finished ? o : undefined;
    });
    const root = op.threads.find((t) => t.thread === sent.json.thread)!;
    expect(root.session).toMatchObject({ handle: `${a.short}/planner`, depth: 1, turn: 2 });
    const sub = op.threads.find((t) => t.thread !== sent.json.thread)!;
    expect(sub).toMatchObject({ to: `${b.short}/reviewer`, state: 'answered', rejected_code: null, session: { depth: 2 } });
  });

  it('a workspace that does not trust A refuses: STAMP_UNTRUSTED in A, no session in C', async () => {
    const sent = await a.nxc(['send', `${c.id}/reviewer`, '--subject', 'x', 'please', '--json']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    const row = await until('the refusal in A', async () => {
      const r = await rowOf(a, sent.json.thread);
      return r?.rejected_code ? r : undefined;
    });
    expect(row).toMatchObject({ state: 'answered', escalated: true, rejected_code: 'STAMP_UNTRUSTED', session: null });
    expect(c.sessionDirs()).toHaveLength(0);
  });

  it('a persona not declared external is NOT_ADDRESSABLE, one not declared at all UNKNOWN_PERSONA; threads show gives code and reason', async () => {
    for (const [role, code] of [['secret', 'NOT_ADDRESSABLE'], ['nobody', 'UNKNOWN_PERSONA']] as const) {
      const sent = await a.nxc(['send', `${b.id}/${role}`, '--subject', 'x', 'please', '--json']);
      expect(sent.code, sent.stdout + sent.stderr).toBe(0);
      const row = await until(`the refusal of ${role}`, async () => {
        const r = await rowOf(a, sent.json.thread);
        return r?.rejected_code ? r : undefined;
      });
      expect(row).toMatchObject({ state: 'answered', rejected_code: code, session: null });
      const shown = await a.nxc(['threads', 'show', sent.json.thread]);
      expect(shown.stdout).toContain(`refused by ${b.short}: ${code}: `);
      const status = await a.nxc(['status', '--all']);
      const line = status.stdout.split('\n').find((l) => l.includes(sent.json.thread) && l.includes(' -> '))!;
      expect(line).toContain(`refused by ${b.short}`);
      expect(line).not.toContain('answered by');
    }
  });

  it('an unknown alias is refused at once', async () => {
    const sent = await a.nxc(['send', 'nowhere/reviewer', '--subject', 'x', 'please', '--json']);
    expect(sent.code).toBe(2);
    expect(sent.json.error.code).toBe('UNKNOWN_RECIPIENT');
  });

  // Last in this block: A signs with its rotated key from here on.
  it('after `nxs key rotate` in A, its stamps (signed by the new key) are still admitted by B', async () => {
    const rotated = await a.nxs(['key', 'rotate', '--json']);
    expect(rotated.code, rotated.stdout + rotated.stderr).toBe(0);
    expect(rotated.json.key).not.toBe(rotated.json.previous_key);
    const before = b.sessionDirs().length;
    const sent = await a.nxc(['send', `${b.id}/reviewer`, '--subject', 'after rotation', 'please review again', '--json']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    const row = await until('the answer in A', async () => {
      const r = await rowOf(a, sent.json.thread);
      return r?.state === 'answered' ? r : undefined;
    });
    expect(row).toMatchObject({ escalated: false, rejected_code: null, answered_by: `${b.short}/reviewer`, session: { depth: 1 } });
    expect(b.sessionDirs()).toHaveLength(before + 1);
  });
});

// ---- across a relay

describe('cross-workspace commissions across a relay (two nodes)', () => {
  let folders: Awaited<ReturnType<typeof relayFolders>> | undefined;
  let relay: RelayProcess | undefined;
  let a: TestWorkspace;
  let b: TestWorkspace;

  beforeAll(async () => {
    folders = await relayFolders();
    relay = new RelayProcess(folders.fresh());
    await relay.start();
    const token = await relay.createStream('xws');
    [a, b] = await Promise.all([makeWorkspace({ git: false, real: true, cliInProcess: true }), makeWorkspace({ git: false, real: true, cliInProcess: true })]);
    await Promise.all([a.startNode(), b.startNode()]);
    for (const w of [a, b]) {
      const r = await w.nxs(['sync', 'bind', relay.url, '--stream', 'xws', '--token', token, '--json']);
      expect(r.code, r.stdout + r.stderr).toBe(0);
    }
    await trust(b, a);
    b.persona('reviewer', { mode: 'reply', extra: EXTERNAL });
    a.persona('planner', { mode: 'wait', arg: `${b.id}/reviewer` });
  });

  afterAll(async () => {
    await Promise.all([a, b].map((w) => w?.waitIdle().catch(() => undefined)));
    await Promise.all([a, b].map((w) => w?.cleanup()));
    await relay?.stop();
    folders?.cleanup();
  });

  it('a person in A commissions B/reviewer on another node: answered at depth 1, both nodes agree', async () => {
    const sent = await a.nxc(['send', `${b.id}/reviewer`, '--subject', 'review', 'please review', '--json']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    const row = await until('the answer in A', async () => {
      const r = await rowOf(a, sent.json.thread);
      return r?.state === 'answered' ? r : undefined;
    });
    expect(row).toMatchObject({ escalated: false, rejected_code: null, answered_by: `${b.short}/reviewer`, session: { handle: `${b.short}/reviewer`, depth: 1 } });
    await until('both nodes to agree', async () => {
      const [oa, ob] = await Promise.all([a, b].map(async (w) => (await operationsOf(w)).find((o) => o.operation === sent.json.operation)));
      return oa !== undefined && JSON.stringify(oa) === JSON.stringify(ob) ? true : undefined;
    });
  });

  it('an asker session in A is woken by the answer from the other node (turn 2)', async () => {
    const sent = await a.nxc(['send', 'planner', '--subject', 'plan', 'plan it', '--json']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    const op = await until('the operation to finish in A', async () => {
      const o = (await operationsOf(a)).find((x) => x.operation === sent.json.operation);
      return o?.finished ? o : undefined;
    }, 90_000);
    const root = op.threads.find((t) => t.thread === sent.json.thread)!;
    expect(root.session).toMatchObject({ handle: `${a.short}/planner`, depth: 1, turn: 2 });
    const sub = op.threads.find((t) => t.thread !== sent.json.thread)!;
    expect(sub).toMatchObject({ to: `${b.short}/reviewer`, state: 'answered', session: { depth: 2 } });
    await until('both nodes to agree', async () => {
      const [oa, ob] = await Promise.all([a, b].map(async (w) => (await operationsOf(w)).find((o) => o.operation === sent.json.operation)));
      return oa !== undefined && JSON.stringify(oa) === JSON.stringify(ob) ? true : undefined;
    });
  });

  it('once B no longer trusts A, A’s commission across the relay is refused: STAMP_UNTRUSTED in A’s status, no session in B', async () => {
    const removed = await b.nxs(['sync', 'trust', 'remove', '--workspace', a.id, '--json']);
    expect(removed.code, removed.stdout + removed.stderr).toBe(0);
    const before = b.sessionDirs().length;
    const sent = await a.nxc(['send', `${b.id}/reviewer`, '--subject', 'untrusted', 'please', '--json']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    const row = await until('the refusal to reach A', async () => {
      const r = await rowOf(a, sent.json.thread);
      return r?.rejected_code ? r : undefined;
    });
    expect(row).toMatchObject({ state: 'answered', escalated: true, rejected_code: 'STAMP_UNTRUSTED', session: null });
    expect(b.sessionDirs()).toHaveLength(before);
    await trust(b, a);
  });
});
