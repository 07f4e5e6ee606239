// Ops held until their signing key is known are bounded per workspace: anyone holding a stream's token can
// sign ops with keys of their own and name any workspace, so past the allowance an op is dropped, counted as
// `pending_full`, and `nxs sync status` says how many. Real stores, real signatures, no relay.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { checkOps, opSigner, signOp, workspaceOfKey, type OpSigner } from '../crypto/index.js';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { createStore, openStore, type Store } from '../node-agent/adapters/store/index.js';
import { storePage } from '../node-agent/host/sync/page.js';
import { positionKey, readPosition } from '../node-agent/host/sync/index.js';
import { ingestChecked, pendingCount, type IngestReport } from '../node-agent/kernel/index.js';
import { PENDING_LIMITS } from '../protocol/storable.js';
import { newOpId, newThreadId } from '../protocol/ids.js';
import type { Op } from '../protocol/ops.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

const signer = (): OpSigner => opSigner(generateKeyPairSync('ed25519').privateKey);

/** `n` thread.opened ops naming `workspace`, signed by `by` (a key nobody certified for it), each `pad` characters of subject. */
function forged(workspace: string, by: OpSigner, n: number, pad = 10): string[] {
  return Array.from({ length: n }, (_, i) => {
    const thread = newThreadId();
    const op = {
      id: newOpId(),
      workspace,
      origin: 'elsewhere',
      lamport: i + 1,
      ts: new Date().toISOString(),
      kind: 'thread.opened',
      operation: thread,
      thread,
      session: null,
      body: { parent: null, subject: 'x'.repeat(pad), opener: { handle: 'mallory', session: null }, target: { kind: 'person', handle: 'bob' } },
      key: by.key,
    } as Op;
    return signOp(op, by).raw;
  });
}

describe('the pending allowance per workspace', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nexus-pending-'));
  let store: Store;
  beforeAll(async () => {
    await createStore(join(dir, 'store'), inject('nexusHome'));
    store = await openStore(join(dir, 'store'));
  });
  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const take = async (texts: string[]): Promise<IngestReport> => {
    const checked = await checkOps(texts);
    return store.db.transaction((tx) => ingestChecked(tx, checked, { projections: PROJECTIONS }));
  };

  it('holds up to its op limit for one workspace, drops the rest as pending_full, and leaves other workspaces their own room', async () => {
    const w = workspaceOfKey(signer().key)!;
    const x = workspaceOfKey(signer().key)!;
    const mallory = signer();
    const flood = forged(w, mallory, PENDING_LIMITS.ops_per_workspace + 5);
    const report = await take(flood);
    expect(report.held).toBe(PENDING_LIMITS.ops_per_workspace);
    expect(report.rejected).toEqual({ pending_full: 5 });
    expect(await pendingCount(store.db)).toBe(PENDING_LIMITS.ops_per_workspace);
    // The same ops again: what is held stays held, what was dropped is dropped again.
    const again = await take(flood);
    expect(again.rejected).toEqual({ pending_full: 5 });
    expect(await pendingCount(store.db)).toBe(PENDING_LIMITS.ops_per_workspace);
    // Another workspace is not crowded out.
    expect((await take(forged(x, mallory, 3))).held).toBe(3);
  });

  it('holds up to its byte limit for one workspace', async () => {
    const w = workspaceOfKey(signer().key)!;
    const big = 200_000;
    const n = Math.floor(PENDING_LIMITS.bytes_per_workspace / big) + 3;
    const report = await take(forged(w, signer(), n, big));
    expect(report.rejected.pending_full).toBeGreaterThanOrEqual(3);
    expect(report.held + report.rejected.pending_full!).toBe(n);
    expect(report.held * big).toBeLessThanOrEqual(PENDING_LIMITS.bytes_per_workspace);
  });
});

describe('nxs sync status', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace({ git: false });
    const bound = await ws.nxs(['sync', 'bind', 'http://127.0.0.1:9', '--stream', 'team', '--token', 'tok-0123456789abcdef', '--offline', '--json']);
    expect(bound.code, bound.stdout + bound.stderr).toBe(0);
  });
  afterAll(() => ws.cleanup());

  it('counts what was dropped for want of room, beside what is held', async () => {
    const w = workspaceOfKey(signer().key)!;
    const checked = await checkOps(forged(w, signer(), PENDING_LIMITS.ops_per_workspace + 2));
    const key = positionKey('http://127.0.0.1:9', 'team');
    await ws.withStore(async (s) => storePage(s.db, key, await readPosition(s.db, key), 1, checked, PROJECTIONS));
    const json = await ws.nxs(['sync', 'status', '--json']);
    expect(json.json).toMatchObject({ pending: PENDING_LIMITS.ops_per_workspace, rejected: { pending_full: 2 } });
    const text = await ws.nxs(['sync', 'status']);
    expect(text.stdout).toContain('pending_full 2');
    expect(text.stdout).toMatch(/at most 1000 per workspace/);
  });
});
