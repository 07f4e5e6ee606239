// The origin an op carries names the NEXUS_HOME of the command that wrote it: the command's own
// environment, not the environment of the process it happens to run in.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SendInput } from '../protocol/commands.js';
import { openStore, tables } from '../node-agent/adapters/store/index.js';
import { findWorkspace } from '../node-agent/adapters/workspace/index.js';
import { withDirectHost } from '../node-agent/host/index.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

const SEND: SendInput = { to: '@bob', subject: 'from where', text: 'which home wrote this?', caller: { actor: 'alice', session: null, hop: null } };
const originOf = (home: string) => readFileSync(join(home, 'origin'), 'utf8').trim();

describe('the origin of an op', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace({ git: false, real: true });
  });
  afterAll(() => ws.cleanup());

  it('is the one of the NEXUS_HOME the command was given, made there on first use, whatever the process environment says', async () => {
    const home = mkdtempSync(join(tmpdir(), 'nexus-origin-home-'));
    expect(process.env['NEXUS_HOME']).not.toBe(home);
    const workspace = findWorkspace(ws.root, {});
    const { thread } = await withDirectHost(workspace, (h) => h.run('send', SEND), {}, { ...process.env, NEXUS_HOME: home });
    const store = await openStore(workspace.paths.store, { purpose: 'the origin test' });
    try {
      const rows = await store.db.select({ origin: tables.ops.origin }).from(tables.ops).where(eq(tables.ops.thread, thread));
      expect(rows.length).toBeGreaterThan(0);
      for (const r of rows) expect(r.origin).toBe(originOf(home));
    } finally {
      await store.close();
    }
  });

  it('in the in-process test host, is the suite home’s, as the CLI run with that NEXUS_HOME writes it', async () => {
    const served = await makeWorkspace({ git: false });
    try {
      const sent = await served.nxc(['send', '@bob', '--subject', 'here', '--json', 'hello']);
      expect(sent.code, sent.stdout + sent.stderr).toBe(0);
      const origins = await served.inproc!.withStore(async (store) =>
        store.db.select({ origin: tables.ops.origin }).from(tables.ops).where(eq(tables.ops.thread, sent.json.thread)),
      );
      expect(origins.map((r) => r.origin)).toEqual(origins.map(() => originOf(inject('nexusHome'))));
    } finally {
      await served.cleanup();
    }
  });
});
