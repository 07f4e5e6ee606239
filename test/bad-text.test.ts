// Text no store can keep (a NUL byte, an unpaired UTF-16 surrogate) is refused with BAD_TEXT (exit 2),
// naming the field, on every path text comes in by, and nothing is written. A failure of ours (INTERNAL)
// never shows a user the SQL or its parameters (the signed op, the message text). The same through the
// real nxc process is test/e2e/bad-text-cli.test.ts.
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { opSigner } from '../crypto/index.js';
import { PROJECTIONS } from '../node-agent/capabilities/index.js';
import { createStore, openStore, tables, type Store } from '../node-agent/adapters/store/index.js';
import { runCommand, type Io } from '../node-agent/cli/io.js';
import { failureOf } from '../node-agent/host/ui/data.js';
import { rpcApp } from '../node-agent/host/rpc/server.js';
import { appendOps } from '../node-agent/kernel/index.js';
import { internalError, isNexusError } from '../protocol/errors.js';
import { dump, expectBadText } from './helpers/bad-text.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

describe('text with a NUL byte or an unpaired surrogate, in process', () => {
  let ws: TestWorkspace;
  let thread: string;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('coder', { mode: 'reply' });
    mkdirSync(join(ws.root, '.nxs-channels'));
    writeFileSync(join(ws.root, '.nxs-channels', 'review.yaml'), 'members: [coder]\ndescription: reviews\n');
    const first = await ws.nxc(['send', '@bob', '--subject', 'start', '--json', 'hello']);
    expect(first.code, first.stderr).toBe(0);
    thread = first.json.thread;
  });
  afterAll(async () => ws?.cleanup());

  it.each<[string, (t: string) => string[], string | undefined, string, 'nul' | 'surrogate']>([
    ['a message sent on stdin', () => ['send', '@bob', '--subject', 's', '--json', '-'], 'a\u0000b', 'text', 'nul'],
    ['a message given as an argument', () => ['send', '@bob', '--subject', 's', '--json', 'a\u0000b'], undefined, 'text', 'nul'],
    ['a subject', () => ['send', '@bob', '--subject', 's\u0000', '--json', 'hi'], undefined, 'subject', 'nul'],
    ['a reply', (t) => ['reply', '--thread', t, '--json', '-'], 'x\u0000', 'text', 'nul'],
    ['an escalation', (t) => ['reply', '--thread', t, '--escalate', '--json', '-'], 'x\u0000', 'text', 'nul'],
    ['a post to a channel', () => ['send', '#review', '--subject', 's', '--json', '-'], 'a\u0000b', 'text', 'nul'],
    ['a persona name', () => ['send', 'co\u0000der', '--subject', 's', '--json', 'hi'], undefined, 'to', 'nul'],
    ['an unpaired surrogate in a message', () => ['send', '@bob', '--subject', 's', '--json', 'a\uD800b'], undefined, 'text', 'surrogate'],
  ])('%s is refused with BAD_TEXT and nothing is written', async (_what, args, input, field, reason) => {
    const before = await dump(ws);
    const r = await ws.nxc(args(thread), input === undefined ? {} : { input });
    expectBadText(r, field, reason);
    expect(await dump(ws)).toBe(before);
  });
});

describe('the op log refuses what no store can keep, whatever the command checked', () => {
  const base = mkdtempSync(join(tmpdir(), 'nexus-bad-text-'));
  let store: Store;
  beforeAll(async () => {
    await createStore(join(base, 'store'), inject('nexusHome'));
    store = await openStore(join(base, 'store'));
  });
  afterAll(async () => {
    await store?.close();
    rmSync(base, { recursive: true, force: true });
  });

  it('appendOps throws BAD_TEXT naming the op body field, and stores nothing', async () => {
    const author = { workspace: 'a'.repeat(26), origin: 'test', now: () => new Date(), signer: opSigner(generateKeyPairSync('ed25519').privateKey), projections: PROJECTIONS };
    const root = 't-01ARZ3NDEKTSV4RRFFQ69G5FAV';
    const err = await store.db
      .transaction((tx) =>
        appendOps(tx, author, [
          {
            operation: root,
            thread: root,
            session: null,
            kind: 'message.posted',
            body: { message: 'm-01ARZ3NDEKTSV4RRFFQ69G5FAV', author: { handle: 'alice', session: null }, text: 'x\u0000', effect: 'none', substituted: false, refs: { working_copy: null } },
          },
        ]),
      )
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(isNexusError(err) && err.code).toBe('BAD_TEXT');
    expect(isNexusError(err) && err.details).toMatchObject({ field: 'body.text', reason: 'nul' });
    expect(await store.db.select().from(tables.ops)).toEqual([]);
  });
});

describe('a failure of ours shows no SQL', () => {
  const base = mkdtempSync(join(tmpdir(), 'nexus-internal-'));
  let store: Store;
  let failure: unknown;
  beforeAll(async () => {
    await createStore(join(base, 'store'), inject('nexusHome'));
    store = await openStore(join(base, 'store'));
    // A real failed query: its message holds the SQL and the parameters.
    failure = await store.db.execute(sql`select ${'the secret message text'}::int`).then(
      () => null,
      (e: unknown) => e,
    );
    expect(String((failure as Error).message)).toContain('the secret message text');
  });
  afterAll(async () => {
    await store?.close();
    rmSync(base, { recursive: true, force: true });
  });

  it('internalError keeps the database reason and drops the query and its parameters', () => {
    const e = internalError(failure);
    expect(e.code).toBe('INTERNAL');
    expect(e.message).toMatch(/^a store query failed \(SQLSTATE 22P02\)/);
    expect(e.message).not.toMatch(/select|the secret message text|params/i);
  });

  it('the CLI prints INTERNAL without the SQL, plain and as JSON', async () => {
    for (const json of [false, true]) {
      const out = { stdout: '', stderr: '' };
      const io: Io = { argv: [], env: {}, cwd: base, stdout: (s) => void (out.stdout += s), stderr: (s) => void (out.stderr += s), readStdin: async () => '', stdinIsTty: false, stderrIsTty: false };
      expect(await runCommand(io, json, () => Promise.reject(failure))).toBe(1);
      expect(out.stdout + out.stderr).toContain('INTERNAL');
      expect(out.stdout + out.stderr).not.toMatch(/select|the secret message text|params/i);
    }
  });

  it('the node answers INTERNAL without the SQL, and so does the dashboard', async () => {
    const app = rpcApp({ run: () => Promise.reject(failure) } as never);
    const res = await app.request('/v1/commands/node.info', { method: 'POST', body: JSON.stringify({ workspace: null, input: {} }) });
    const text = await res.text();
    expect(res.status).toBe(500);
    expect(text).toContain('INTERNAL');
    expect(text).not.toMatch(/select|the secret message text|params/i);
    expect(failureOf(failure).message).not.toMatch(/select|the secret message text|params/i);
  });
});
