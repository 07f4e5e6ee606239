// Signed ops through a real relay between real nodes (each node its own `nxs node run` process): byte
// for byte from signer to peer to the relay's storage, a key rotation followed while the node serves,
// and ops the relay altered in its own storage refused by a node that joins afterwards.
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore, tables } from '../../node-agent/adapters/store/index.js';
import { wireTextOf } from '../../node-agent/kernel/index.js';
import { silentLog, startRelay, type Relay } from '../../server/index.js';
import { createStream, relayFolders } from '../helpers/relay.js';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { until } from '../helpers/until.js';

const OPERATOR = 'signing-test-operator-token-0123456789';

type Status = { connected: boolean; cursor: number; head: number; outbox: number; in_flight: number; rejected: Record<string, number>; pending: number };

async function syncStatus(w: TestWorkspace): Promise<Status> {
  const r = await w.nxs(['sync', 'status', '--json']);
  if (r.code !== 0) throw new Error(`nxs sync status failed: ${r.stdout}${r.stderr}`);
  return r.json as Status;
}

/** Everything pushed, and the stream held up to `head`. */
async function settled(w: TestWorkspace, head: number): Promise<Status> {
  return until(`${w.id} to settle at ${head}`, async () => {
    const s = await syncStatus(w);
    return s.connected && s.outbox === 0 && s.in_flight === 0 && s.cursor === head ? s : undefined;
  });
}

/** The node's store, read after stopping it: every op's id and exact text. */
async function storedTexts(w: TestWorkspace): Promise<Map<string, string | null>> {
  await w.stopNode();
  const store = await openStore(join(w.root, '.nxs', 'store'));
  try {
    const rows = await store.db.select().from(tables.ops);
    return new Map(rows.map((r) => [r.id, wireTextOf(r)]));
  } finally {
    await store.close();
  }
}

describe('through a real relay between real nodes', () => {
  const nodes: TestWorkspace[] = [];
  let relay: Relay | null = null;
  let relayDir: string;
  let folders: Awaited<ReturnType<typeof relayFolders>> | undefined;
  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.cleanup().catch(() => undefined)));
    await relay?.close().catch(() => undefined);
    folders?.cleanup();
  });

  async function boundNode(url: string, token: string): Promise<TestWorkspace> {
    const w = await makeWorkspace({ git: false, cliInProcess: true });
    nodes.push(w);
    await w.startNode();
    const r = await w.nxs(['sync', 'bind', url, '--stream', 'team', '--token', token, '--json']);
    if (r.code !== 0) throw new Error(`nxs sync bind failed: ${r.stdout}${r.stderr}`);
    return w;
  }

  async function send(w: TestWorkspace, subject: string, text: string): Promise<void> {
    const r = await w.nxc(['send', '@bob', '--subject', subject, text, '--json']);
    expect(r.code, r.stderr + r.stdout).toBe(0);
  }

  it('round-trips byte for byte, follows a key rotation, and refuses ops the relay altered in its own storage', async () => {
    folders = await relayFolders();
    relayDir = folders.fresh();
    relay = await startRelay({ dataDir: relayDir, operatorToken: OPERATOR, log: silentLog });
    const token = await createStream(relay.url, 'team', OPERATOR);

    const [a, b] = await Promise.all([boundNode(relay.url, token), boundNode(relay.url, token)]);
    await send(a, 'plan', 'the plan is A');
    await send(a, 'second', 'another message');
    await send(b, 'reply', 'from b');
    await settled(a, 6);
    await settled(b, 6);

    // Rotate A's key while its node serves it (the node signs from then on with the new key).
    const rotated = await a.nxs(['key', 'rotate', '--json']);
    expect(rotated.code, rotated.stderr).toBe(0);
    const shown = await a.nxs(['key', 'show', '--json']);
    expect(shown.json).toMatchObject({ workspace: a.id, key: rotated.json.key, generation: 1 });
    expect(shown.json.public_jwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519' });
    const text = await a.nxs(['key', 'show']);
    expect(text.stdout).toContain(rotated.json.op);
    await send(a, 'after rotation', 'signed by the new key');
    const sa = await settled(a, 9);
    const sb = await settled(b, 9);
    expect(sb.rejected).toEqual({});
    expect(sb.pending).toBe(0);
    expect(sa.rejected).toEqual({});
    const statusB = (await b.status(true)) as { operations: Array<{ operation: string }> };
    const statusA = (await a.status(true)) as { operations: Array<{ operation: string }> };
    expect(statusB.operations.map((o) => o.operation).sort()).toEqual(statusA.operations.map((o) => o.operation).sort());
    expect(statusA.operations).toHaveLength(4);

    // Byte for byte: what A signed, B stored, and the relay stored are the same texts.
    const [ta, tb] = [await storedTexts(a), await storedTexts(b)];
    expect(tb).toEqual(ta);
    for (const raw of ta.values()) expect(raw).not.toBeNull();
    await relay.close();
    relay = null;
    const pg = await PGlite.create({ dataDir: join(relayDir, 'pgdata') });
    const relayRows = (await pg.query<{ seq: number; op_id: string; op: string }>('SELECT seq, op_id, op FROM stream_ops ORDER BY seq')).rows;
    expect(new Map(relayRows.map((r) => [r.op_id, r.op]))).toEqual(ta);

    // The relay (or whoever holds its disk) alters ops: one body, one made unreadable as a signed op.
    const plan = relayRows.find((r) => r.op.includes('the plan is A'))!;
    const another = relayRows.find((r) => r.op.includes('"kind":"thread.opened"') && r.op.includes('"subject":"second"'))!;
    await pg.query('UPDATE stream_ops SET op = $2 WHERE seq = $1', [plan.seq, plan.op.replace('the plan is A', 'the plan is Z')]);
    await pg.query('UPDATE stream_ops SET op = $2 WHERE seq = $1', [another.seq, another.op.replace(',"sig":"', ',"sg":"')]);
    await pg.close();

    relay = await startRelay({ dataDir: relayDir, operatorToken: OPERATOR, log: silentLog });
    const c = await boundNode(relay.url, token);
    const sc = await settled(c, 9);
    expect(sc.rejected).toEqual({ bad_signature: 1, malformed: 1 });
    expect(sc.pending).toBe(0);
    const human = await c.nxs(['sync', 'status']);
    expect(human.stdout).toContain('rejected bad_signature 1, malformed 1');
    // Nothing is held back, so nothing about held ops is said.
    expect(human.stdout).not.toContain('held');
    const tc = await storedTexts(c);
    expect(tc.has(plan.op_id)).toBe(false);
    expect(tc.has(another.op_id)).toBe(false);
    expect(tc.size).toBe(ta.size - 2);
    for (const [id, raw] of tc) expect(raw).toBe(ta.get(id));
  });
});
