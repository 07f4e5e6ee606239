// Warnings ride on receipts: declaration_changed and tick_unscheduled leave the exit code alone, a trigger that failed
// after its message was written (already_running is a step_skipped) exits 3 with the whole receipt;
// and what a reply-only persona and a workspace outside git look like.
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

function spec(ws: TestWorkspace, session: string): any {
  return JSON.parse(readFileSync(join(ws.root, '.nxs', 'sessions', session, 'spec.json'), 'utf8'));
}

function rowOf(status: any, thread: string): any {
  for (const op of status.operations) for (const row of op.threads) if (row.thread === thread) return row;
  return undefined;
}

async function send(ws: TestWorkspace, role: string, text: string) {
  const r = await ws.nxc(['send', role, '--subject', role, '--json', text]);
  expect(r.code, r.stdout + r.stderr).toBe(0);
  return r.json;
}

describe('a second wake while the session’s process lives', () => {
  let ws: TestWorkspace;
  let gate: string;
  beforeAll(async () => {
    ws = await makeWorkspace();
    gate = join(ws.root, '..', 'gate-busy');
    ws.persona('busy', { mode: 'gate', arg: gate });
  });
  afterAll(async () => {
    writeFileSync(gate, '');
    await ws.cleanup();
  });

  it('posts the message, starts nothing, and warns already_running with exit code 3 (the trigger failed after the write)', async () => {
    const sent = await send(ws, 'busy', 'start working');
    const session = sent.woke.session;
    const r = await ws.nxc(['reply', '--thread', sent.thread, '--json', 'and also this']);
    expect(r.code, r.stdout + r.stderr).toBe(3);
    expect(r.json).toMatchObject({ posted: true, woke: null, thread: sent.thread });
    expect(r.json.warnings).toEqual([
      expect.objectContaining({ reason: 'already_running', session, thread: sent.thread, role: 'busy', message: expect.any(String) }),
    ]);
    const view = await ws.nxc(['threads', 'show', sent.thread, '--json']);
    expect(view.json.messages.map((m: any) => m.text)).toEqual(['start working', 'and also this']);
    expect(view.json.thread).toMatchObject({ state: 'open', session: { id: session, turn: 1, running: true } });
    expect(existsSync(join(ws.root, '.nxs', 'sessions', session, 'turn-2.started'))).toBe(false);

    writeFileSync(gate, '');
    await ws.waitIdle();
    const all = await ws.status(true);
    // The running turn answered after the follow-up arrived, so the thread is discharged and nothing starts again.
    expect(rowOf(all, sent.thread)).toMatchObject({ state: 'answered', answered_by: `${ws.short}/busy`, session: { turn: 1, running: false } });
    expect(ws.agentLog().filter((e) => e.cmd === 'start')).toHaveLength(1);
  });
});

describe('a persona that starts under a changed declaration', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('drafter', { mode: 'reply' });
  });
  afterAll(() => ws.cleanup());

  it('warns declaration_changed with both hashes, exits 0, and each session’s spec.json records the hash it ran under', async () => {
    const first = await send(ws, 'drafter', 'first draft');
    expect(first.warnings).toEqual([]);
    await ws.waitIdle();
    const listed1 = await ws.nxs(['personas', 'list', '--json']);
    const hash1 = listed1.json.personas.find((p: any) => p.role === 'drafter').hash;

    ws.persona('drafter', { mode: 'reply', extra: 'description: the second declaration' });
    const listed2 = await ws.nxs(['personas', 'list', '--json']);
    const hash2 = listed2.json.personas.find((p: any) => p.role === 'drafter').hash;
    expect(hash2).not.toBe(hash1);

    const r = await ws.nxc(['send', 'drafter', '--subject', 'again', '--json', 'second draft']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json.posted).toBe(true);
    expect(r.json.woke).toMatchObject({ role: 'drafter', turn: 1 });
    expect(r.json.warnings).toEqual([
      expect.objectContaining({
        class: 'declaration_changed',
        role: 'drafter',
        session: r.json.woke.session,
        declaration: { hash: hash2, previous_hash: hash1 },
      }),
    ]);
    await ws.waitIdle();
    expect(spec(ws, first.woke.session).declaration.hash).toBe(hash1);
    expect(spec(ws, r.json.woke.session).declaration.hash).toBe(hash2);
    // Status names the declaration each session's newest turn ran under, the same hash as its spec.json.
    const rows = (await ws.status(true)).operations.flatMap((o: any) => o.threads);
    const sessionOf = (id: string) => rows.find((row: any) => row.session?.id === id).session;
    expect(sessionOf(first.woke.session).declaration_hash).toBe(hash1);
    expect(sessionOf(r.json.woke.session).declaration_hash).toBe(hash2);

    // Unchanged since its last run: no warning.
    const third = await send(ws, 'drafter', 'third draft');
    expect(third.warnings).toEqual([]);
    await ws.waitIdle();
    expect(spec(ws, third.woke.session).declaration.hash).toBe(hash2);
  });
});

describe('a persona declared tools: []', () => {
  let ws: TestWorkspace;
  let sent: any;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('clerk', { mode: 'try-send', arg: 'coder', tools: [] });
    ws.persona('coder', { mode: 'reply' });
    sent = await send(ws, 'clerk', 'file this');
    await ws.waitIdle();
  });
  afterAll(() => ws.cleanup());

  it('may not send: nxc refuses with REPLY_ONLY, exit 2, and nothing is commissioned', () => {
    const sendCall = ws.agentLog().find((e) => e.role === `${ws.short}/clerk` && e.cmd === 'send');
    expect(sendCall.code).toBe(2);
    expect(sendCall.out).toMatchObject({ ok: false, error: { code: 'REPLY_ONLY', message: expect.any(String) } });
    expect(ws.sessionDirs()).toEqual([sent.woke.session]);
  });

  it('can still reply, and the thread is answered by it', async () => {
    const replyCall = ws.agentLog().find((e) => e.role === `${ws.short}/clerk` && e.cmd === 'reply');
    expect(replyCall).toMatchObject({ code: 0, out: { posted: true, thread: sent.thread } });
    const all = await ws.status(true);
    const op = all.operations.find((o: any) => o.operation === sent.operation);
    expect(op.threads).toHaveLength(1);
    expect(op.threads[0]).toMatchObject({ state: 'answered', substituted: false, escalated: false, answered_by: `${ws.short}/clerk` });
  });

  it('its spec.json allows only the reply command and says reply_only', () => {
    const s = spec(ws, sent.woke.session);
    expect(s.allowed_tools).toEqual(['Bash(nxc reply:*)']);
    expect(s.reply_only).toBe(true);
    expect(s.declaration.tools).toEqual([]);
    expect(s.env.NXC_ALLOWED_TOOLS).toBe('Bash(nxc reply:*)');
  });
});

describe('a workspace outside any git repository', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace({ git: false });
    ws.persona('coder', { mode: 'reply' });
  });
  afterAll(() => ws.cleanup());

  it('receipts name no working copy, and say the worker names none', async () => {
    const sent = await send(ws, 'coder', 'no git here');
    expect(sent).toMatchObject({ posted: true, working_copy: null, worker_names_a_working_copy: false });
    expect(typeof sent.working_copy_note).toBe('string');
    await ws.waitIdle();
    const replyCall = ws.agentLog().find((e) => e.cmd === 'reply');
    expect(replyCall).toMatchObject({ code: 0, out: { working_copy: null, worker_names_a_working_copy: false } });
    const view = await ws.nxc(['threads', 'show', sent.thread, '--json']);
    for (const m of view.json.messages) expect(m.refs.working_copy).toBeNull();
  });

  it('status says so too', async () => {
    const all = await ws.status(true);
    expect(all.worker_names_a_working_copy).toBe(false);
    expect(all.notes.join('\n')).toMatch(/no git repository of yours holds this workspace/);
    for (const op of all.operations) for (const row of op.threads) expect(row.working_copy).toBeNull();
  });
});

describe('a persona’s turn timeout with no node', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    // A private NEXUS_HOME with no node in it: registration is this test's own business.
    const home = join(ws.root, '..', 'nexus-home');
    mkdirSync(home, { recursive: true });
    symlinkSync(join(inject('nexusHome'), 'cache'), join(home, 'cache'));
    ws.home = home;
    ws.persona('timed', { mode: 'hang', arg: '600000', timeout: '1m' });
  });
  afterAll(async () => {
    await ws.waitIdle();
    await ws.cleanup();
  });

  it('raises no tick_unscheduled, since the turn’s sidecar enforces it: the session is stopped at its timeout without a node', async () => {
    const sent = await ws.nxc(['send', 'timed', '--subject', 'window', '--json', 'take your time']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    expect(sent.json.warnings.map((w: any) => w.class)).not.toContain('tick_unscheduled');
    const tick = await ws.nxc(['tick', '--thread', sent.json.thread, '--json']);
    expect(tick.code).toBe(0);
    expect(tick.json.warnings.map((w: any) => w.class)).not.toContain('tick_unscheduled');
    ws.advance(61_000);
    await ws.waitIdle();
    const row = rowOf(await ws.status(true), sent.json.thread);
    expect(row).toMatchObject({ state: 'answered', escalated: true, substituted: true });
  });

  it('once registered with no node running, only service_not_running is said', async () => {
    expect((await ws.nxs(['node', 'register', '--json'])).code).toBe(0);
    const sent = await ws.nxc(['send', 'timed', '--subject', 'window 2', '--json', 'again']);
    expect(sent.code).toBe(0);
    const classes = sent.json.warnings.map((w: any) => w.class);
    expect(classes).toContain('service_not_running');
    expect(classes).not.toContain('tick_unscheduled');
    ws.advance(61_000);
  });
});
