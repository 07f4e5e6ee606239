// People across workspaces, and refusals a person can read: `alice@ab23` wherever a person's words cross
// a border (the stamp vouches for exactly that name), "awaiting you" only for the person reading, and a
// refused commission shown as refused (code and reason), never as "answered by" a persona that may not exist.
import { sign } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWorkspaceKey, signStamp, STAMP_TYP, verifyStamp } from '../crypto/index.js';
import { paintFor, PLAIN, wantsColour } from '../node-agent/cli/colour.js';
import { callerFromEnv } from '../node-agent/cli/io.js';
import { renderStatus, renderThread } from '../node-agent/cli/render.js';
import { Handle, newThreadId, qualifyHandle } from '../protocol/ids.js';
import type { StatusReport, StatusRow, ThreadView } from '../protocol/receipts.js';
import { deliver } from './helpers/deliver.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

describe('a person named beyond their workspace', () => {
  it.each([
    ['alice', 'ab23', 'alice@ab23'],
    ['ab23/coder', 'cd34', 'ab23/coder'],
    ['alice@ab23', 'cd34', 'alice@ab23'],
  ])('%s as workspace %s names it to others: %s', (handle, short, qualified) => {
    expect(qualifyHandle(handle, short)).toBe(qualified);
    expect(Handle.safeParse(qualified).success).toBe(true);
  });

  it.each(['alice@', 'alice@AB12', 'alice@ab1', '@ab23', 'alice@ab23/coder'])('%s is not a handle', (h) => {
    expect(Handle.safeParse(h).success).toBe(false);
  });

  it('NXC_ACTOR is a bare name here (the login name when unset): the @short form is for other workspaces', () => {
    expect(callerFromEnv({ USER: 'carol' }).actor).toBe('carol');
    expect(callerFromEnv({ USER: 'Not A Handle!' }).actor).toBe('human');
    expect(callerFromEnv({ NXC_ACTOR: 'dave', USER: 'carol' }).actor).toBe('dave');
    expect(() => callerFromEnv({ NXC_ACTOR: 'dave@ab23' })).toThrow(/NXC_ACTOR/);
  });
});

describe('a stamp naming a person', () => {
  const A = generateWorkspaceKey();
  const B = generateWorkspaceKey();
  const C = generateWorkspaceKey();
  const request = (sub: string) => ({ sub, role: null, aud: B.id, target_role: 'reviewer', thread: newThreadId(), depth: 0 });
  const verify = (token: string) => verifyStamp(token, { trust: (iss) => (iss === A.id ? A.publicJwk : null), audience: B.id, seen: () => false });

  it('vouches for alice@<its own short>', async () => {
    const verdict = await verify(await signStamp(A, request(`alice@${A.id.slice(0, 4)}`)));
    expect(verdict.ok && verdict.claims.sub).toBe(`alice@${A.id.slice(0, 4)}`);
  });

  it('is refused when it names a person of another workspace, at signing and at verification', async () => {
    const sub = `alice@${C.id.slice(0, 4)}`;
    await expect(signStamp(A, request(sub))).rejects.toThrow(/another workspace/);
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: A.id, ...request(sub), iat: now, exp: now + 600, jti: '01HANDMADE0000000000000001' };
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const input = `${b64({ alg: 'EdDSA', typ: STAMP_TYP })}.${b64(claims)}`;
    const token = `${input}.${sign(null, Buffer.from(input), A.privateKey).toString('base64url')}`;
    const verdict = await verify(token);
    expect(verdict.ok ? 'admitted' : verdict.code).toBe('STAMP_MALFORMED');
  });
});

function row(over: Partial<StatusRow>): StatusRow {
  return {
    thread: 't-01',
    parent: null,
    subject: 'review',
    opener: 'alice',
    to: 'bbbb/reviewer',
    state: 'answered',
    escalated: false,
    substituted: false,
    written_by: 'agent',
    withdrawn: false,
    waiting_on_sub_round: false,
    awaiting_human: true,
    awaiting_workspace: 'a'.repeat(26),
    done: false,
    opened_in: 'a'.repeat(26),
    untrusted: false,
    answered_by: 'bbbb/reviewer',
    session: null,
    messages: 1,
    updated: '2026-01-01T00:00:00.000Z',
    working_copy: null,
    rejected_code: null,
    rejected_reason: null,
    ...over,
  };
}

function report(rows: StatusRow[]): StatusReport {
  return {
    workspace: { id: 'a'.repeat(26), name: 'a' },
    operations: [{ operation: 't-01', subject: 'review', opener: rows[0]!.opener, finished: true, threads: rows, open: 0, turns: { used: 1, budget: 500 }, lease: null, untrusted: false }],
    worker_names_a_working_copy: false,
    worker_answers_liveness: true,
    finished_awaiting: [],
    untrusted: { operations: 0, workspaces: [] },
    notes: [],
  };
}

describe('status, as the person reading it sees it', () => {
  const alice = { you: ['alice', 'alice@aaaa'], paint: PLAIN };

  it.each([
    ['the reader opened it', row({}), alice, 'awaiting you (answered by bbbb/reviewer)'],
    ['the reader opened it, named from across the border', row({ opener: 'alice@aaaa' }), alice, 'awaiting you (answered by bbbb/reviewer)'],
    ["another workspace's person opened it", row({ opener: 'alice@aaaa' }), { you: ['bob', 'bob@bbbb'], paint: PLAIN }, 'awaiting alice@aaaa (answered by bbbb/reviewer)'],
    ['another person here opened it', row({ opener: 'carol' }), alice, 'awaiting carol (answered by bbbb/reviewer)'],
    ["a person of another workspace, named bare in its log, opened it", row({ awaiting_workspace: 'c'.repeat(26) }), alice, 'awaiting alice@cccc (answered by bbbb/reviewer)'],
  ])('when %s', (_when, r, viewer, words) => {
    expect(renderStatus(report([r]), viewer)).toContain(words);
  });

  it('a refused commission reads "refused by" its workspace with the code, never "answered by" the role', () => {
    const refused = row({ to: 'bbbb/nosuch', answered_by: 'bbbb/nosuch', escalated: true, rejected_code: 'UNKNOWN_PERSONA', rejected_reason: 'no persona "nosuch" is declared in bbbb...' });
    const text = renderStatus(report([refused]), alice);
    expect(text).toContain('awaiting you (refused by bbbb)');
    expect(text).toContain('REFUSED UNKNOWN_PERSONA');
    expect(text).not.toContain('answered by');
    expect(text).not.toContain('ESCALATED');
  });

  it('threads show of a refused commission gives the code and the reason', () => {
    const view: ThreadView = {
      thread: row({ to: 'bbbb/secret', rejected_code: 'NOT_ADDRESSABLE', rejected_reason: 'secret is not declared addressable: {external: true}', escalated: true }),
      operation: 't-01',
      messages: [],
    };
    expect(renderThread(view)).toContain('refused by bbbb: NOT_ADDRESSABLE: secret is not declared addressable: {external: true} (nothing ran there)');
  });
});

describe('colour', () => {
  it.each([
    [true, {}, true],
    [false, {}, false],
    [undefined, {}, false],
    [true, { NO_COLOR: '1' }, false],
    [true, { NO_COLOR: '' }, true],
    [true, { TERM: 'dumb' }, false],
  ])('a terminal: %s, env %j: coloured %s', (tty, env, coloured) => {
    expect(wantsColour(tty, env)).toBe(coloured);
  });

  it('marks refusals red and who is awaited yellow on a terminal, and nothing in plain output', () => {
    const refused = row({ rejected_code: 'STAMP_UNTRUSTED', escalated: true });
    const coloured = renderStatus(report([refused]), { you: ['alice'], paint: paintFor(true, {}) });
    expect(coloured).toContain('\x1b[31mREFUSED STAMP_UNTRUSTED\x1b[39m');
    expect(coloured).toContain('\x1b[33mawaiting you\x1b[39m');
    expect(renderStatus(report([refused]), { you: ['alice'], paint: paintFor(true, { NO_COLOR: '1' }) })).not.toContain('\x1b[');
  });
});

describe('an operation another workspace’s person opened, taken in as sync takes it in', () => {
  let a: TestWorkspace;
  let b: TestWorkspace;
  let thread: string;
  beforeAll(async () => {
    [a, b] = await Promise.all([makeWorkspace({ git: false }), makeWorkspace({ git: false })]);
    // alice in A asks bob in A; bob answers: A's operation, finished, awaits A's alice.
    const sent = await a.nxc(['send', '@bob', '--subject', 'lunch', '--json', 'where?']);
    expect(sent.code, sent.stderr).toBe(0);
    thread = sent.json.thread;
    expect((await a.nxc(['reply', '--thread', thread, '--json', 'downstairs'], { env: { NXC_ACTOR: 'bob' } })).code).toBe(0);
    // B's stream carries A's whole log: B holds the same operation.
    await deliver(a, b);
  });
  afterAll(async () => {
    await Promise.all([a?.cleanup(), b?.cleanup()]);
  });

  const rowIn = async (w: TestWorkspace) => {
    for (const op of (await w.status(true)).operations) for (const r of op.threads) if (r.thread === thread) return r;
    return undefined;
  };

  it('says in --json whose workspace it awaits, the same on both sides', async () => {
    expect(await rowIn(a)).toMatchObject({ opener: 'alice', awaiting_human: true, awaiting_workspace: a.id });
    expect(await rowIn(b)).toMatchObject({ opener: 'alice', awaiting_human: true, awaiting_workspace: a.id });
  });

  it('reads "awaiting you" only in the opener’s workspace; B’s alice is told it is A’s alice', async () => {
    const inA = await a.nxc(['status', '--all'], { env: { NXC_ACTOR: 'alice' } });
    expect(inA.stdout).toContain('awaiting you (answered by bob)');
    const inB = await b.nxc(['status', '--all'], { env: { NXC_ACTOR: 'alice' } });
    expect(inB.stdout).toContain(`awaiting alice@${a.short} (answered by bob)`);
    expect(inB.stdout).not.toContain('awaiting you');
  });
});
