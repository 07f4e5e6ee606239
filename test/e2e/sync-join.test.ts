// A workspace joining a long stream, end to end: two real nodes on a real relay (on a loopback port, in
// this process so its history can be held at a gate), the stream already holding more ops of unrelated,
// untrusted workspaces than the join threshold. The joining workspace is usable before its history is
// there: a commission from the workspace it trusts is admitted, run and answered while the background
// pass is held; `nxs sync status` shows how far the history is; released, the history completes.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOIN_MIN_OPS } from '../../node-agent/host/sync/client.js';
import { silentLog, startRelay, type HistoryRead, type Relay } from '../../server/index.js';
import { Forger, rawPeer } from '../helpers/forge.js';
import { createStream, OPERATOR, relayFolders } from '../helpers/relay.js';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { until } from '../helpers/until.js';

type Row = { thread: string; state: string; escalated: boolean; answered_by: string | null; rejected_code: string | null; session: { handle: string; depth: number } | null };
type History = { from: number; through: number; priority: string[]; priority_complete: boolean; complete: boolean };

async function rowOf(w: TestWorkspace, thread: string): Promise<Row | undefined> {
  for (const op of ((await w.status(true)) as { operations: Array<{ threads: Row[] }> }).operations) for (const r of op.threads) if (r.thread === thread) return r;
  return undefined;
}

async function syncStatus(w: TestWorkspace): Promise<{ caught_up?: boolean; history?: History | null; rejected: Record<string, number> }> {
  const r = await w.nxs(['sync', 'status', '--json']);
  expect(r.code, r.stdout + r.stderr).toBe(0);
  return r.json;
}

describe('a workspace joining a stream that holds many ops of other workspaces', () => {
  let folders: Awaited<ReturnType<typeof relayFolders>> | undefined;
  let relay: Relay | undefined;
  let a: TestWorkspace;
  let b: TestWorkspace;
  let token: string;
  // The background pass (every unfiltered history read) waits here until released.
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const held: HistoryRead[] = [];
  const gate = async (read: HistoryRead): Promise<void> => {
    if (read.workspaces !== null) return;
    held.push(read);
    await released;
  };

  beforeAll(async () => {
    folders = await relayFolders();
    relay = await startRelay({ dataDir: folders.fresh(), operatorToken: OPERATOR, log: silentLog, historyGate: gate });
    token = await createStream(relay.url, 'joining', OPERATOR);
    // Threads of unrelated workspaces nobody here trusts: more than a new node takes in order.
    const peer = await rawPeer(relay.url, 'joining', token);
    let w = new Forger();
    let batch: string[] = [];
    for (let i = 0; i * 2 < JOIN_MIN_OPS + 500; i++) {
      if (i % 100 === 0) w = new Forger();
      batch.push(...w.thread(`unrelated ${i}`).texts);
      if (batch.length >= 500) {
        await peer.push(batch);
        batch = [];
      }
    }
    if (batch.length > 0) await peer.push(batch);
    peer.close();

    [a, b] = await Promise.all([makeWorkspace({ git: false, real: true, cliInProcess: true }), makeWorkspace({ git: false, real: true, cliInProcess: true })]);
    // B trusts A before it binds: A's ops are among the ones it fetches first.
    const trusted = await b.nxs(['sync', 'trust', 'add', '--workspace', a.id, '--key', join(a.root, '.nxs', 'keys', 'workspace.pub.jwk'), '--json']);
    expect(trusted.code, trusted.stdout + trusted.stderr).toBe(0);
    b.persona('reviewer', { mode: 'reply', extra: 'addressable: { external: true }' });
    await Promise.all([a.startNode(), b.startNode()]);
    for (const w of [a, b]) {
      const r = await w.nxs(['sync', 'bind', relay.url, '--stream', 'joining', '--token', token, '--json']);
      expect(r.code, r.stdout + r.stderr).toBe(0);
    }
  });

  afterAll(async () => {
    release();
    await Promise.all([a, b].map((w) => w?.waitIdle().catch(() => undefined)));
    await Promise.all([a, b].map((w) => w?.cleanup()));
    await relay?.close();
    folders?.cleanup();
  });

  it('receives, runs and answers a commission from the workspace it trusts before its history is there; then the history completes', async () => {
    // Caught up: live, with every op of B and of the workspace it trusts; the rest is still held.
    const usable = await until('B to be caught up', async () => {
      const s = await syncStatus(b);
      return s.caught_up ? s : undefined;
    });
    expect(usable.history).toMatchObject({ priority_complete: true, complete: false, priority: [a.id, b.id].sort() });
    expect(usable.history!.from).toBeGreaterThanOrEqual(JOIN_MIN_OPS);
    expect(usable.history!.through).toBeLessThan(usable.history!.from);

    const sent = await a.nxc(['send', `${b.id}/reviewer`, '--subject', 'review', 'please review', '--json']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    const row = await until('the answer in A', async () => {
      const r = await rowOf(a, sent.json.thread);
      return r?.state === 'answered' ? r : undefined;
    }, 120_000);
    expect(row).toMatchObject({ escalated: false, rejected_code: null, answered_by: `${b.short}/reviewer`, session: { handle: `${b.short}/reviewer`, depth: 1 } });
    expect(b.sessionDirs()).toHaveLength(1);

    // All of it while B's background pass was held: its history is not there yet, and status says so.
    const during = await syncStatus(b);
    expect(during.history!.complete).toBe(false);
    expect(held.length).toBeGreaterThan(0);
    const text = await b.nxs(['sync', 'status']);
    expect(text.stdout).toMatch(/history \d+ of \d+ \(\d+%\) in the background · this workspace and 1 trusted: complete/);

    release();
    const done = await until('B’s history to complete', async () => {
      const s = await syncStatus(b);
      return s.history?.complete ? s : undefined;
    }, 180_000);
    expect(done.history!.through).toBe(done.history!.from);
    expect(done.rejected).toEqual({});
    const after = await b.nxs(['sync', 'status']);
    expect(after.stdout).toContain(`history complete (${done.history!.from} ops before joining)`);
  });
});
