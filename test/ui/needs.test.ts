// What "Needs you" lists, what counts as sync trouble, and how the views render what they are given:
// pure functions over snapshots, so each rule is one row of a table.
import { describe, expect, it } from 'vitest';
import type { KeyReport, SyncReport, TrustReport } from '../../protocol/commands.js';
import type { OperationLease, StatusOperation, StatusRow, ThreadView } from '../../protocol/receipts.js';
import type { RoundStatus, RoundStepStatus } from '../../protocol/round.js';
import { needsOf, renderNeeds, renderOperations, renderSync, renderThread, syncProblems, withdrawable, type Snapshot } from '../../node-agent/host/ui/index.js';

const WS = 'aaaaaaaaaaaaaaaaaaaaaaaaaa';

function row(over: Partial<StatusRow> = {}): StatusRow {
  return {
    thread: 't-1',
    parent: null,
    subject: 'pricing',
    opener: 'alice',
    to: 'ws/boss',
    state: 'answered',
    escalated: false,
    substituted: false,
    written_by: null,
    withdrawn: false,
    waiting_on_sub_round: false,
    awaiting_human: true,
    awaiting_workspace: WS,
    done: false,
    opened_in: WS,
    untrusted: false,
    answered_by: 'ws/boss',
    session: null,
    messages: 2,
    updated: '2026-01-01T00:00:00.000Z',
    working_copy: null,
    rejected_code: null,
    rejected_reason: null,
    ...over,
  };
}

type Msg = { author: string; session: string | null; effect: string; text: string };
const by = {
  alice: (effect: string, text = 'x'): Msg => ({ author: 'alice', session: null, effect, text }),
  boss: (effect: string, text = 'x'): Msg => ({ author: 'ws/boss', session: 's-1', effect, text }),
};

function snap(r: StatusRow, messages: Msg[], extra: Partial<Snapshot> = {}): Snapshot {
  const view: ThreadView = {
    thread: r,
    operation: 't-1',
    messages: messages.map((m, i) => ({ ...m, message: `m-${i}`, substituted: false, written_by: 'agent' as const, ts: `2026-01-01T00:00:0${i}.000Z`, refs: { working_copy: null } })),
  };
  return {
    node: { pid: 1, started_at: '', home: '', socket: '', workspaces: [{ id: WS, name: 'web', root: '/w' }] },
    workspaces: [
      {
        id: WS,
        name: 'web',
        root: '/w',
        status: { workspace: { id: WS, name: 'web' }, operations: [{ operation: 't-1', subject: r.subject, opener: r.opener, finished: true, threads: [r], open: 0, turns: { used: 1, budget: 500 }, lease: null, untrusted: false }], worker_names_a_working_copy: true, worker_answers_liveness: true, finished_awaiting: [], untrusted: { operations: 0, workspaces: [] }, notes: [] },
        sync: { bound: false },
        error: null,
      },
    ],
    unserved: [],
    views: new Map([[`${WS}/${r.thread}`, view]]),
    undetailed: 0,
    ...extra,
  };
}

/** A lease line as `nxc status --json` prints it; `over` sets what the case is about. */
function lease(over: Partial<OperationLease>): OperationLease {
  return {
    state: 'holds',
    text: '',
    token: null,
    bound: null,
    position: null,
    behind: null,
    parked: null,
    park_refused: null,
    held_for_handback: null,
    contention_deadline: null,
    withdrawn: false,
    woken: false,
    ...over,
  };
}

/** An operation of one open root thread (its id is the operation's), opened by alice. */
function op(id: string, over: Partial<StatusOperation> = {}, rowOver: Partial<StatusRow> = {}): StatusOperation {
  const r = row({ thread: id, subject: `subject of ${id}`, state: 'open', awaiting_human: false, awaiting_workspace: null, answered_by: null, ...rowOver });
  return { operation: id, subject: r.subject, opener: 'alice', finished: false, threads: [r], open: 1, turns: { used: 1, budget: 500 }, lease: null, untrusted: false, ...over };
}

/** A snapshot of one workspace holding `operations`, with the thread views given. */
function snapOf(operations: StatusOperation[], views: Array<[StatusRow, Msg[]]> = []): Snapshot {
  const s = snap(row(), []);
  s.workspaces[0]!.status!.operations = operations;
  s.views = new Map(views.map(([r, messages]) => [`${WS}/${r.thread}`, snap(r, messages).views.get(`${WS}/${r.thread}`)!]));
  return s;
}

function step(over: Partial<RoundStepStatus>): RoundStepStatus {
  return { name: 'review', kind: 'member', address: 'ws/reviewer', handle: 'ws/reviewer', pass: 1, state: 'answered', thread: 't-step', session: 's-2', running: false, window_ms: 60_000, deadline: '2026-01-01T00:01:00.000Z', reason: null, warning: null, ...over };
}

function round(steps: RoundStepStatus[]): RoundStatus {
  return { round: 't-r', channel: 'review', flow: 'fanout', state: 'running', reason: null, requester: 'alice', pass: 1, passes_used: 1, passes_limit: 3, steps, next_deadline: null, holds_hand_back: false, boundary: null };
}

describe('Needs you', () => {
  it.each([
    ['a hand-back to the person who opened it', row({ escalated: true }), [by.alice('commission'), by.boss('escalate', 'decide')], ['escalated']],
    ['an answer waiting for the person who opened it', row(), [by.alice('commission'), by.boss('answer', 'done')], ['awaiting']],
    ['a hand-back the person has written to since', row({ escalated: true }), [by.alice('commission'), by.boss('escalate'), by.alice('none', 'ok')], []],
    ['a hand-back another session wrote to since (not a person)', row({ escalated: true }), [by.alice('commission'), by.boss('escalate'), by.boss('none')], ['escalated']],
    ['a thread a session opened (its hand-back wakes that session)', row({ escalated: true, awaiting_human: false }), [by.boss('commission'), by.boss('escalate')], []],
    ['an open thread', row({ state: 'open', awaiting_human: false }), [by.alice('commission')], []],
    ['a refused commission, with its code', row({ state: 'open', awaiting_human: false, rejected_code: 'STAMP_UNTRUSTED' }), [by.alice('commission')], ['rejected']],
    ["another workspace's operation, carried here by sync: it awaits that workspace's person", row({ awaiting_workspace: 'c'.repeat(26) }), [by.alice('commission'), by.boss('answer')], []],
  ])('%s', (_, r, messages, kinds) => {
    const s = snap(r, messages);
    // The view the node would answer holds the row's own state.
    s.views.get(`${WS}/${r.thread}`)!.thread = r;
    expect(needsOf(s).map((i) => i.kind)).toEqual(kinds);
  });

  it('carries the hand-back text and the code of a refusal', () => {
    const s = snap(row({ escalated: true, rejected_code: 'NOT_ADDRESSABLE' }), [by.alice('commission'), by.boss('escalate', 'which currency?')]);
    expect(needsOf(s)).toMatchObject([
      { kind: 'escalated', text: 'which currency?', by: 'ws/boss', workspace: WS },
      { kind: 'rejected', code: 'NOT_ADDRESSABLE' },
    ]);
  });

  it('lists a workspace that cannot be read and one registered but not served before what waits on people (what it shows may be stale)', () => {
    const s = snap(row(), [by.alice('commission'), by.boss('answer')], { unserved: [{ id: 'bbbbbbbbbbbbbbbbbbbbbbbbbb', root: '/gone' }] });
    s.workspaces.push({ id: 'cccccccccccccccccccccccccc', name: 'api', root: '/api', status: null, sync: null, error: { code: 'STORE_FAILED', message: 'broken' } });
    expect(needsOf(s).map((i) => [i.kind, 'code' in i ? i.code : null])).toEqual([
      ['service', 'STORE_FAILED'],
      ['service', 'NOT_SERVED'],
      ['awaiting', null],
    ]);
  });

  it('a result its opener marked read (nxc done) waits on nobody, nor does a hand-back of another workspace\'s operation carried here', () => {
    expect(needsOf(snap(row({ done: true, awaiting_human: false, awaiting_workspace: null }), [by.alice('commission'), by.boss('answer')]))).toEqual([]);
    const theirs = row({ escalated: true, awaiting_human: false, awaiting_workspace: null, opened_in: 'bbbbbbbbbbbbbbbbbbbbbbbbbb' });
    expect(needsOf(snap(theirs, [by.alice('commission'), by.boss('escalate')]))).toEqual([]);
  });

  it('a commission another workspace sent and this one refused is that workspace\'s person\'s, not listed here', () => {
    const other = 'bbbbbbbbbbbbbbbbbbbbbbbbbb';
    const theirs = row({ thread: 't-theirs', rejected_code: 'STAMP_UNTRUSTED', escalated: true, awaiting_human: false, awaiting_workspace: null, opened_in: other });
    const ours = row({ thread: 't-ours', rejected_code: 'NOT_ADDRESSABLE', escalated: true, awaiting_human: false, awaiting_workspace: null, state: 'answered' });
    const s = snapOf([{ ...op('t-theirs'), threads: [theirs] }, { ...op('t-ours'), threads: [ours] }]);
    expect(needsOf(s).filter((i) => i.kind === 'rejected').map((i) => [i.kind, 'thread' in i ? i.thread : null])).toEqual([['rejected', 't-ours']]);
  });

  it('offers Done beside Reply on every item that waits on a person, posting nxc done as the person named there, with a request key of its own', () => {
    const html = renderNeeds(needsOf(snap(row(), [by.alice('commission'), by.boss('answer')])), { actor: 'alice', workspaces: 1 });
    expect(html).toMatch(new RegExp(`<button type="submit" class="done" formaction="/w/${WS}/t/t-1/done" formnovalidate`));
    expect(html).toMatch(/name="done_request" value="r-[0-9A-Z]{26}"/);
    expect(html).toContain('name="actor" value="alice"');
  });
});

describe('Needs you: the working copy and channel steps', () => {
  it('lists commissions queued for the working copy by position, each naming the operation that holds it', () => {
    const s = snapOf([
      op('t-hold', { lease: lease({ state: 'holds', token: 1, text: 'holds working tree (token 1)' }) }),
      op('t-second', { lease: lease({ state: 'queued', position: 2, behind: 't-hold' }) }),
      op('t-first', { lease: lease({ state: 'queued', position: 1, behind: 't-hold' }) }),
    ]);
    expect(needsOf(s)).toMatchObject([
      { kind: 'queued', thread: 't-first', operation: 't-first', position: 1, behind: 't-hold', holder: { thread: 't-hold', subject: 'subject of t-hold' } },
      { kind: 'queued', thread: 't-second', position: 2, holder: { thread: 't-hold' } },
    ]);
  });

  it('a queue with nobody holding the copy (its turn not handed out yet) names the one ahead, and no holder', () => {
    const s = snapOf([op('t-q', { lease: lease({ state: 'queued', position: 1, behind: null }) })]);
    expect(needsOf(s)).toMatchObject([{ kind: 'queued', position: 1, behind: null, holder: null }]);
  });

  it('lists PARK REFUSED with what must be finished, and nothing for a lease that holds, is parked or held for a hand-back', () => {
    const what = 'a merge is in progress in the working copy: finish it (git commit) or abort it (git merge --abort)';
    const s = snapOf([
      op('t-stuck', { lease: lease({ state: 'holds', park_refused: what }) }),
      op('t-parked', { finished: true, lease: lease({ state: 'parked', parked: { branch: 'nexus/park/t-parked', commit: 'a'.repeat(40), from_branch: 'main', work: true } }) }),
      op('t-handback', { lease: lease({ state: 'holds', held_for_handback: 't-handback' }) }),
    ]);
    expect(needsOf(s)).toMatchObject([{ kind: 'park_refused', thread: 't-stuck', what }]);
  });

  it('lists a step whose window lapsed unanswered while its operation runs, naming the channel, step and its thread', () => {
    const r = round([step({ name: 'security', state: 'lapsed', thread: 't-sec' }), step({ name: 'style', state: 'answered' }), step({ name: 'perf', state: 'running' })]);
    const s = snapOf([op('t-r', {}, { round: r })]);
    expect(needsOf(s)).toMatchObject([{ kind: 'lapsed', thread: 't-r', channel: 'review', step: 'security', step_thread: 't-sec', deadline: '2026-01-01T00:01:00.000Z' }]);
  });

  it('a lapsed step of a finished operation shows beside the result while that waits on the person, and goes once they wrote back', () => {
    const r = round([step({ name: 'security', state: 'lapsed' })]);
    const root = row({ thread: 't-r', round: { ...r, state: 'answered', reason: 'nobody_answered' } });
    const finished = (): StatusOperation => ({ ...op('t-r'), finished: true, threads: [root], open: 0 });
    const waiting = snapOf([finished()], [[root, [by.alice('commission'), by.boss('answer', 'nobody answered')]]]);
    expect(needsOf(waiting).map((i) => i.kind)).toEqual(['awaiting', 'lapsed']);
    const read = snapOf([finished()], [[root, [by.alice('commission'), by.boss('answer'), by.alice('none', 'thanks')]]]);
    expect(needsOf(read)).toEqual([]);
  });

  it('a commission its sender withdrew waits on nobody (the withdrawal, in their name, is the answer); another person\'s answer still does', () => {
    const r = row();
    expect(needsOf(snapOf([{ ...op(r.thread), finished: true, threads: [r] }], [[r, [by.alice('commission'), by.alice('answer', 'withdrawn by alice')]]]))).toEqual([]);
    const bob = { author: 'bob', session: null, effect: 'answer', text: 'looks good' };
    expect(needsOf(snapOf([{ ...op(r.thread), finished: true, threads: [r] }], [[r, [by.alice('commission'), bob]]])).map((i) => i.kind)).toEqual(['awaiting']);
  });

  it('orders everything: sync trouble, hand-backs, answers, refused parks, lapsed steps, refusals, then the queue', () => {
    const esc = row({ thread: 't-esc', escalated: true });
    const ans = row({ thread: 't-ans' });
    const s = snapOf(
      [
        op('t-q', { lease: lease({ state: 'queued', position: 1, behind: 't-stuck' }) }),
        op('t-rej', {}, { rejected_code: 'STAMP_UNTRUSTED' }),
        op('t-r', {}, { round: round([step({ state: 'lapsed' })]) }),
        op('t-stuck', { lease: lease({ state: 'holds', park_refused: 'finish the rebase' }) }),
        { ...op('t-ans'), finished: true, threads: [ans] },
        { ...op('t-esc'), finished: true, threads: [esc] },
      ],
      [
        [esc, [by.alice('commission'), by.boss('escalate')]],
        [ans, [by.alice('commission'), by.boss('answer')]],
      ],
    );
    s.workspaces[0]!.sync = bound({ connected: false });
    expect(needsOf(s).map((i) => i.kind)).toEqual(['sync', 'escalated', 'awaiting', 'park_refused', 'lapsed', 'rejected', 'queued']);
    const html = renderNeeds(needsOf(s), { actor: 'alice', workspaces: 1 });
    expect(html).toContain('PARK REFUSED');
    expect(html).toContain('finish the rebase');
    expect(html).toMatch(/data-kind="queued"[^>]* data-position="1" data-behind="t-stuck" data-holder="t-stuck"/);
    expect(html).toContain('data-step="review"');
  });
});

const bound = (over: Partial<Extract<SyncReport, { bound: true }>> = {}): SyncReport => ({
  bound: true,
  relay: 'http://127.0.0.1:1',
  stream: 's',
  connected: true,
  cursor: 10,
  head: 10,
  lag: 0,
  outbox: 0,
  rejected: {},
  pending: 0,
  last_error: null,
  ...over,
});

describe('sync trouble', () => {
  it.each([
    ['an unbound workspace', { bound: false } as SyncReport, []],
    ['a connected, caught-up stream', bound(), []],
    ['a connected stream still pushing its outbox', bound({ outbox: 3 }), []],
    ['a relay that does not answer', bound({ connected: false, last_error: 'ECONNREFUSED' }), ['unreachable']],
    ['ops written while the relay is away', bound({ connected: false, outbox: 2 }), ['unreachable', 'outbox']],
    ['a binding the relay refused', bound({ connected: false, refused: true, last_error: 'UNAUTHORIZED' }), ['refused']],
    ['lag behind the head', bound({ cursor: 4, head: 10, lag: 6 }), ['lag']],
    ['ops refused on arrival, by reason', bound({ rejected: { bad_signature: 2, malformed: 0 } }), ['rejected']],
    ['ops held for an unknown key', bound({ pending: 1 }), ['pending']],
  ])('%s', (_, report, codes) => {
    expect(syncProblems(report).map((p) => p.code)).toEqual(codes);
  });

  it('names the reasons ops were refused', () => {
    expect(syncProblems(bound({ rejected: { bad_signature: 2 } }))[0]!.text).toContain('bad_signature 2');
  });
});

describe('rendering', () => {
  it('escapes everything that comes from the store', () => {
    const evil = '<script>alert(1)</script>"\'&';
    const s = snap(row({ subject: evil, opener: evil }), [by.alice('commission'), by.boss('answer', evil)]);
    for (const html of [renderNeeds(needsOf(s), { actor: 'alice', workspaces: 1 }), renderOperations(s.workspaces)]) {
      expect(html).not.toContain('<script>');
      expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;');
    }
  });

  it('Operations shows each operation\'s lease: its line as status prints it, marks, and data attributes', () => {
    const text = 'holds working tree (token 3) · bound 2026-01-01T02:00:00.000Z · held for the hand-back in t-hold · PARK REFUSED: finish the merge';
    const s = snapOf([
      op('t-hold', { lease: lease({ state: 'holds', token: 3, held_for_handback: 't-hold', park_refused: 'finish the merge', text }) }),
      op('t-q', { lease: lease({ state: 'queued', position: 1, behind: 't-hold', text: 'queued (position 1 behind t-hold)' }) }),
      op('t-none'),
    ]);
    const html = renderOperations(s.workspaces);
    expect(html).toContain(`<p class="meta lease">working copy: ${text}</p>`);
    expect(html).toMatch(/id="op-t-hold"[^>]* data-lease-state="holds" data-lease-token="3" data-lease-position="" data-lease-behind="" data-lease-held-for-handback="t-hold" data-lease-park-refused="finish the merge" data-lease-withdrawn="false"/);
    expect(html).toMatch(/id="op-t-q"[^>]* data-lease-state="queued"[^>]* data-lease-position="1" data-lease-behind="t-hold"/);
    expect(html).toMatch(/id="op-t-none"[^>]* data-lease-state=""/);
    for (const mark of ['holds the working copy', 'held for its hand-back', 'PARK REFUSED', 'queued for the working copy, position 1']) expect(html).toContain(mark);
    // The lease is rendered, not dumped as an unknown field.
    expect(html).not.toContain('data-field="lease"');
  });

  it('Operations shows per thread the working copy of its newest message (short commit on its branch, clean or dirty) and the declaration a session ran under', () => {
    const commit = '0123456789abcdef0123456789abcdef01234567';
    const hash = `sha256:${'ab'.repeat(32)}`;
    const session = { id: 's-1', handle: 'ws/boss', depth: 1, turn: 2, running: false, declaration_hash: hash, last_run: null };
    const html = renderOperations(
      snapOf([
        op('t-clean', {}, { session, working_copy: { commit, branch: 'main', dirty: false, fingerprint: `sha256:${'c'.repeat(64)}` } }),
        op('t-dirty', {}, { working_copy: { commit: null, branch: null, dirty: true, fingerprint: `sha256:${'d'.repeat(64)}` } }),
      ]).workspaces,
    );
    expect(html).toContain(`<code title="${commit}">0123456789</code> on <code>main</code> <span class="tag plain">clean</span>`);
    expect(html).toContain('no commit yet on detached HEAD <span class="tag warn">dirty</span>');
    expect(html).toMatch(/data-thread="t-clean"[^>]* data-session-declaration="sha256:(ab){32}"[^>]* data-wc-commit="0123456789abcdef0123456789abcdef01234567" data-wc-branch="main" data-wc-dirty="false"/);
    expect(html).toMatch(/data-thread="t-dirty"[^>]* data-wc-commit="" data-wc-branch="" data-wc-dirty="true"/);
    expect(html).toContain(`declaration <code title="${hash}">abababababab</code>`);
    expect(html).not.toContain('data-field="declaration_hash"');
  });

  it('offers to withdraw only on the first thread of an operation a person sent, while something is left to take back', () => {
    const first = row({ thread: 't-op', state: 'open', awaiting_human: false });
    const view = (r: StatusRow, messages: Msg[], operation = 't-op'): ThreadView => ({ ...snap(r, messages).views.get(`${WS}/${r.thread}`)!, operation });
    const running = op('t-op');
    const finished = { ...op('t-op'), finished: true };
    const cases: Array<[string, ThreadView, StatusOperation | undefined, boolean]> = [
      ['a running operation, its first thread', view(first, [by.alice('commission')]), running, true],
      ['a finished one whose lease still holds the copy (for its hand-back)', view(first, [by.alice('commission')]), { ...finished, lease: lease({ state: 'holds', held_for_handback: 't-op' }) }, true],
      ['a finished one still queued', view(first, [by.alice('commission')]), { ...finished, lease: lease({ state: 'queued', position: 1 }) }, true],
      ['a finished one, nothing held', view(first, [by.alice('commission')]), finished, false],
      ['a finished one whose work is parked', view(first, [by.alice('commission')]), { ...finished, lease: lease({ state: 'parked' }) }, false],
      ['a thread below the first', view(row({ thread: 't-sub', parent: 't-op' }), [by.boss('commission')]), running, false],
      ['a first thread a session opened', view(first, [by.boss('commission')]), running, false],
      ['an operation status does not list', view(first, [by.alice('commission')]), undefined, false],
    ];
    for (const [name, v, o, offered] of cases) {
      expect(withdrawable(v, o), name).toBe(offered);
      const html = renderThread({ id: WS, name: 'web' }, v, { actor: 'alice', back: '/', withdrawable: withdrawable(v, o) });
      expect(html.includes(`action="/w/${WS}/t/${v.thread.thread}/withdraw"`), name).toBe(offered);
    }
  });

  it('every form carries a request key of its own, so a form posted twice is applied once', () => {
    const v: ThreadView = { ...snap(row({ thread: 't-op', state: 'open' }), [by.alice('commission')]).views.get(`${WS}/t-op`)!, operation: 't-op' };
    const html = renderThread({ id: WS, name: 'web' }, v, { actor: 'alice', back: '/', withdrawable: true });
    const keys = [...html.matchAll(/name="request" value="(r-[0-9A-HJKMNP-TV-Z]{26})"/g)].map((m) => m[1]);
    expect(keys).toHaveLength(2);
    expect(new Set(keys).size).toBe(2);
  });

  it('shows fields it does not know (a lease, a round) generically', () => {
    const r = { ...row(), lease: { holder: 'ws/boss', position: 2 } } as StatusRow;
    const html = renderOperations(snap(r, []).workspaces);
    expect(html).toContain('data-field="lease"');
    expect(html).toContain('&quot;position&quot;:2');
  });
});

describe('the Sync view', () => {
  const P = 'pppppppppppppppppppppppppp';
  const Q = 'qqqqqqqqqqqqqqqqqqqqqqqqqq';
  const jwk = (x: string) => ({ kty: 'OKP' as const, crv: 'Ed25519' as const, x });
  const genesis = (key: string) => ({ key, signed_by: null, op: null, lamport: null, ts: null });
  const rotated = (key: string, by: string, op: string) => ({ key, signed_by: by, op, lamport: 7, ts: '2026-01-02T00:00:00.000Z' });

  const keys: KeyReport = {
    workspace: WS,
    short: 'aaaa',
    public_jwk: jwk('K0'),
    key: 'K1-own-key-now-0123456789',
    signing_jwk: jwk('K1-own-key-now-0123456789'),
    generation: 1,
    history: [genesis('K0-own-genesis-0123456789'), rotated('K1-own-key-now-0123456789', 'K0-own-genesis-0123456789', 'op-own-rotation')],
    archived_keys: 1,
    rotation_in_progress: false,
  };
  const trust: TrustReport = {
    workspace: WS,
    trusted: [
      { workspace: P, name: 'partner<b>', key: jwk('P0'), added_at: '2026-01-01T00:00:00.000Z', history: [genesis('P0-genesis-0123456789'), rotated('P1-now-0123456789ab', 'P0-genesis-0123456789', 'op-p-rotation')] },
      { workspace: Q, name: null, key: jwk('Q0'), added_at: '2026-01-01T00:00:00.000Z', history: [genesis('Q0-genesis-0123456789')] },
    ],
  };
  const ws = () => snap(row(), []).workspaces[0]!;

  it('shows per trusted workspace its id, alias and key history (genesis first, each rotation with the key that signed it), and its own keys', () => {
    const html = renderSync([{ workspace: ws(), keys, trust }]);
    expect(html).toContain(`data-trusted="${P}" data-alias="partner&lt;b&gt;"`);
    expect(html).toContain(`partner&lt;b&gt; <code>${P}</code>`);
    expect(html).toContain(`data-trusted="${Q}" data-alias=""`);
    expect(html).toContain(`(no alias)</span> <code>${Q}</code>`);
    expect(html).toContain('1 rotation(s) seen');
    expect(html).toContain('0 rotation(s) seen');
    const rows = [...html.matchAll(/<tr data-key="([^"]*)" data-signed-by="([^"]*)" data-op="([^"]*)">/g)].map((m) => m.slice(1));
    expect(rows).toEqual([
      ['K0-own-genesis-0123456789', '', ''],
      ['K1-own-key-now-0123456789', 'K0-own-genesis-0123456789', 'op-own-rotation'],
      ['P0-genesis-0123456789', '', ''],
      ['P1-now-0123456789ab', 'P0-genesis-0123456789', 'op-p-rotation'],
      ['Q0-genesis-0123456789', '', ''],
    ]);
    expect(html).toContain(`data-keys="${WS}" data-generation="1"`);
    expect(html).not.toContain('<b>');
  });

  it('says so when nothing is trusted, and shows a refusal to read trust instead of hiding it', () => {
    expect(renderSync([{ workspace: ws(), keys, trust: { workspace: WS, trusted: [] } }])).toContain('No workspace is trusted here');
    expect(renderSync([{ workspace: ws(), keys, trust: { code: 'TRUST_FILE_INVALID', message: 'trust.json is not JSON' } }])).toContain('<code>TRUST_FILE_INVALID</code> trust.json is not JSON');
  });
});
