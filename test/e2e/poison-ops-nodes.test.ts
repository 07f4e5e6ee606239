// Poison ops through a real relay between real nodes (each its own `nxs node run` process), pushed with a
// throwaway key and nothing but the stream token: every node counts each op it cannot keep by reason, never
// folds it, and takes the good op behind it; an answer forged for a person's thread is stored, inert, counted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLog, startRelay, type Relay } from '../../server/index.js';
import { rawPeer, type AckResult } from '../helpers/forge.js';
import { forger as m, POISON } from '../helpers/poison.js';
import { createStream, relayFolders } from '../helpers/relay.js';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { until } from '../helpers/until.js';

describe('through a real relay between real nodes', () => {
  const OPERATOR = 'poison-test-operator-token-0123456789';
  const nodes: TestWorkspace[] = [];
  let folders: Awaited<ReturnType<typeof relayFolders>> | undefined;
  let relay: Relay;
  let token: string;

  beforeAll(async () => {
    folders = await relayFolders();
    relay = await startRelay({ dataDir: folders.fresh(), operatorToken: OPERATOR, log: silentLog });
    token = await createStream(relay.url, 'team', OPERATOR);
  });
  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.cleanup().catch(() => undefined)));
    await relay?.close().catch(() => undefined);
    folders?.cleanup();
  });

  async function boundNode(): Promise<TestWorkspace> {
    const w = await makeWorkspace({ git: false, cliInProcess: true });
    nodes.push(w);
    await w.startNode();
    const r = await w.nxs(['sync', 'bind', relay.url, '--stream', 'team', '--token', token, '--json']);
    if (r.code !== 0) throw new Error(`nxs sync bind failed: ${r.stdout}${r.stderr}`);
    return w;
  }

  it('every node takes the good op pushed after each poison op, and counts what it refused by reason', async () => {
    const early = await boundNode();
    // Each poison op in a push (and on a socket) of its own, so a relay that refuses a whole push for one
    // op, or closes the socket over it, still takes the rest.
    const results: AckResult[] = [];
    for (const [, , poison] of POISON) {
      const peer = await rawPeer(relay.url, 'team', token);
      try {
        results.push(...(await peer.push([poison()])));
      } catch {
        results.push({ op: '?', seq: 0, duplicate: false, refused: 'closed' });
      }
      peer.close();
    }
    const good = m.thread('after the poison');
    const peer2 = await rawPeer(relay.url, 'team', token);
    const acked = await peer2.push(good.texts);
    expect(acked.every((r) => r.seq > 0 && r.refused === undefined)).toBe(true);
    peer2.close();
    const head = acked.at(-1)!.seq;
    // What the relay stored, each node must refuse by reason; what it refused never reaches a node.
    const stored = results.filter((r) => r.seq > 0 && r.refused === undefined).length;
    const expected: Record<string, number> = {};
    POISON.forEach(([, reason], i) => {
      if (results[i]!.seq > 0 && results[i]!.refused === undefined) expected[reason] = (expected[reason] ?? 0) + 1;
    });
    const late = await boundNode();
    for (const w of [early, late]) {
      const s = await until(`${w.id} to take the good op`, async () => {
        const r = await w.nxs(['sync', 'status', '--json']);
        return r.json?.cursor >= head ? r.json : undefined;
      });
      expect(s.rejected, `${stored} poison op(s) stored by the relay`).toEqual(expected);
      const status = await w.status(true);
      expect(status.operations.map((o: { operation: string }) => o.operation)).toContain(good.thread);
      // Still live: a local op goes out and the cursor keeps moving.
      const sent = await w.nxc(['send', '@bob', '--subject', 'alive', 'still syncing', '--json']);
      expect(sent.code, sent.stderr).toBe(0);
    }
    await until('both nodes to hold both local ops', async () => {
      const cursors = await Promise.all([early, late].map(async (w) => (await w.nxs(['sync', 'status', '--json'])).json));
      return cursors.every((c) => c.cursor === head + 4 && c.outbox === 0) ? true : undefined;
    });
  });

  it('an answer forged by a stream member to a person’s thread is stored, inert, and counted by the node', async () => {
    const w = nodes[0] ?? (await boundNode());
    const sent = await w.nxc(['send', '@zoe', '--subject', 'question', 'are you there?', '--json']);
    expect(sent.code, sent.stderr).toBe(0);
    await until('the thread to reach the relay', async () => ((await w.nxs(['sync', 'status', '--json'])).json?.outbox === 0 ? true : undefined));
    const peer = await rawPeer(relay.url, 'team', token);
    const [acked] = await peer.push([m.message(sent.json.operation, sent.json.thread, 'mallory answers for zoe', 'answer', { handle: 'zoe', session: null }, 10_000_000)]);
    peer.close();
    expect(acked!.seq).toBeGreaterThan(0);
    const s = await until('the node to take the forged answer', async () => {
      const r = await w.nxs(['sync', 'status', '--json']);
      return r.json?.cursor >= acked!.seq ? r.json : undefined;
    });
    expect(s.inert).toMatchObject({ not_owner: 1 });
    const status = await w.status(true);
    const row = status.operations.flatMap((o: { threads: Array<{ thread: string }> }) => o.threads).find((t: { thread: string }) => t.thread === sent.json.thread);
    expect(row).toMatchObject({ state: 'open', answered_by: null, messages: 1 });
  });
});
