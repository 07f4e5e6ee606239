// A capability is one record, and the list of records is the only registry: a capability added to the list has
// its commands routed, its projections fed, its append policies run inside every batch's transaction (where they
// may add facts or refuse) with their effects after the commit, and its tick steps run stage by stage.
import { count, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { afterCommit } from '../node-agent/adapters/store/commit-hooks.js';
import { tables, type Store } from '../node-agent/adapters/store/index.js';
import { findWorkspace } from '../node-agent/adapters/workspace/index.js';
import { CAPABILITIES, PROJECTIONS, type CapabilityList } from '../node-agent/capabilities/index.js';
import type { ThreadsCapability } from '../node-agent/capabilities/threads/index.js';
import { hostFor, realDeps, type Host } from '../node-agent/host/index.js';
import { checkCapabilities, projectionsOf } from '../node-agent/kernel/index.js';
import type { SendInput, Transcript } from '../protocol/commands.js';
import { NexusError } from '../protocol/errors.js';
import { OpPayloadSchema } from '../protocol/ops.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

const ALICE = { actor: 'alice', session: null, hop: null };
const send = (text: string): SendInput => ({ to: '@bob', subject: 'probe', text, caller: ALICE });

async function opsOfKind(store: Store, kind: string): Promise<number> {
  const [row] = await store.db.select({ n: count() }).from(tables.ops).where(eq(tables.ops.kind, kind));
  return Number(row!.n);
}

describe('a capability is one record', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
  });
  afterAll(() => ws.cleanup());

  /** A host over the real store, composed of `caps`. */
  function hostOf(store: Store, caps: CapabilityList): Host {
    const workspace = findWorkspace(ws.root, { NEXUS_HOME: process.env['NEXUS_HOME'] });
    return hostFor(realDeps(workspace, store.db, { now: ws.clock.now }), { capabilities: caps });
  }

  it('an append policy adds facts inside the batch\'s transaction, and the effects it schedules run only once that transaction committed', async () => {
    const events: string[] = [];
    const probe: ThreadsCapability = {
      name: 'probe',
      opKinds: [],
      projections: [],
      handlers: {},
      appendPolicies: [
        {
          name: 'note every send',
          async before(_c, _tx, batch) {
            if (batch.cause !== 'send') return;
            events.push('before');
            const opened = batch.drafts[0]!;
            batch.drafts.push({ operation: opened.operation, thread: opened.thread, session: null, kind: 'message.posted', body: { message: `m-probe-${events.length}`, author: { handle: 'probe', session: null }, text: 'noted by the probe', effect: 'none', substituted: false, refs: { working_copy: null } } });
          },
          async after(c, tx, batch, stored, commit) {
            if (batch.cause !== 'send') return;
            events.push(`after:${stored.filter((op) => op.kind === 'message.posted').length} messages`);
            afterCommit(tx, () => void events.push('committed'));
            commit.later(async () => {
              // After the commit the store itself (not the transaction) sees the fact the policy added.
              const [row] = await c.deps.db.select({ n: count() }).from(tables.ops).where(sql`${tables.ops.body}->>'text' = 'noted by the probe'`);
              events.push(`effect:${row!.n} noted`);
            });
          },
        },
      ],
      afterCommit: [{ name: 'probe', committed: async () => void events.push('reaction') }],
      tick: [],
    };
    await ws.withStore(async (store) => {
      const host = hostOf(store, [...CAPABILITIES, probe]);
      const before = await opsOfKind(store, 'message.posted');
      const receipt = await host.run('send', send('hello with a probe'));
      expect(receipt.posted).toBe(true);
      // The command's own message and the probe's note, stored together.
      expect((await opsOfKind(store, 'message.posted')) - before).toBe(2);
      const texts = (await store.db.select().from(tables.ops).where(eq(tables.ops.thread, receipt.thread))).flatMap((op) => (op.kind === 'message.posted' ? [(op.body as { text: string }).text] : []));
      expect(texts.sort()).toEqual(['hello with a probe', 'noted by the probe']);
    });
    expect(events).toEqual(['before', 'after:2 messages', 'committed', 'effect:1 noted', 'reaction']);
  });

  it('an append policy that refuses leaves nothing written, and nothing it scheduled runs', async () => {
    const events: string[] = [];
    const refuser: ThreadsCapability = {
      name: 'refuser',
      opKinds: [],
      projections: [],
      handlers: {},
      appendPolicies: [
        {
          name: 'no sends about secrets',
          async before(_c, _tx, batch) {
            if (batch.drafts.some((d) => d.kind === 'message.posted' && d.body.text.includes('secret'))) throw new NexusError('USAGE', 'no secrets here');
          },
          async after(_c, _tx, _batch, _stored, commit) {
            commit.later(async () => void events.push('effect'));
          },
        },
      ],
      afterCommit: [],
      tick: [],
    };
    await ws.withStore(async (store) => {
      const host = hostOf(store, [...CAPABILITIES, refuser]);
      const [before] = await store.db.select({ n: count() }).from(tables.ops);
      await expect(host.run('send', send('the secret plan'))).rejects.toMatchObject({ code: 'USAGE' });
      const [after] = await store.db.select({ n: count() }).from(tables.ops);
      expect(after!.n).toBe(before!.n);
      expect(events).toEqual([]);
      // Anything else passes the same policy and is written.
      await host.run('send', send('the public plan'));
      expect(events).toEqual(['effect']);
    });
  });

  it('the handler table comes from the list: a capability added to it answers its command with no other edit, and one left out answers nothing', async () => {
    const transcript: Transcript = { session: 's-probe', turn: 1, turns: [1], file: '/nowhere', mode: '600', bytes: 5, truncated: false, text: 'probe' };
    const probe: ThreadsCapability<'transcripts.show'> = {
      name: 'probe-transcripts',
      opKinds: [],
      projections: [],
      handlers: { 'transcripts.show': async (_c, input) => ({ ...transcript, session: input.session }) },
      appendPolicies: [],
      afterCommit: [],
      tick: [],
    };
    const without = CAPABILITIES.filter((c) => c.name !== 'transcripts');
    await ws.withStore(async (store) => {
      await expect(hostOf(store, without).run('transcripts.show', { session: 's-x', turn: null })).rejects.toThrow(TypeError);
      expect(await hostOf(store, [...without, probe]).run('transcripts.show', { session: 's-x', turn: null })).toEqual({ ...transcript, session: 's-x' });
    });
  });

  it('a later capability answering the same command is handed the earlier one as `next`', async () => {
    const seen: string[] = [];
    const layer: ThreadsCapability<'send'> = {
      name: 'send-layer',
      opKinds: [],
      projections: [],
      handlers: {
        send: async (_c, input, next) => {
          seen.push(input.to);
          return next();
        },
      },
      appendPolicies: [],
      afterCommit: [],
      tick: [],
    };
    await ws.withStore(async (store) => {
      const receipt = await hostOf(store, [...CAPABILITIES, layer]).run('send', send('through a layer'));
      expect(receipt.posted).toBe(true);
    });
    expect(seen).toEqual(['@bob']);
  });

  it('projections come from the list: a capability\'s projection sees every stored batch inside its transaction', async () => {
    const seen: string[] = [];
    const probe: ThreadsCapability = {
      name: 'probe-projection',
      opKinds: [],
      projections: [{ name: 'probe', apply: async (_db, added) => void seen.push(...added.map((op) => op.kind)) }],
      handlers: {},
      appendPolicies: [],
      afterCommit: [],
      tick: [],
    };
    expect(projectionsOf([...CAPABILITIES, probe]).map((p) => p.name)).toEqual([...PROJECTIONS.map((p) => p.name), 'probe']);
    await ws.withStore(async (store) => {
      await hostOf(store, [...CAPABILITIES, probe]).run('send', send('projected'));
    });
    expect(seen).toEqual(['thread.opened', 'message.posted']);
  });

  it('the tick runs every capability\'s steps stage by stage (what ended, then the clocks, then the sweeps), in list order within a stage', async () => {
    const order: string[] = [];
    const step = (name: string, stage: 'settle' | 'clock' | 'sweep') => ({ name, stage, run: async () => void order.push(name) });
    const early: ThreadsCapability = { name: 'early', opKinds: [], projections: [], handlers: {}, appendPolicies: [], afterCommit: [], tick: [step('early sweep', 'sweep'), step('early clock', 'clock')] };
    const late: ThreadsCapability = { name: 'late', opKinds: [], projections: [], handlers: {}, appendPolicies: [], afterCommit: [], tick: [step('late settle', 'settle'), step('late clock', 'clock')] };
    await ws.withStore(async (store) => {
      const out = await hostOf(store, [early, ...CAPABILITIES, late]).run('tick', {});
      expect(out.settled).toBe(0);
    });
    expect(order).toEqual(['late settle', 'early clock', 'late clock', 'early sweep']);
  });
});

describe('the list of capabilities', () => {
  it('owns every op kind exactly once', () => {
    const kinds = OpPayloadSchema.options.map((o) => o.shape.kind.value).sort();
    expect(CAPABILITIES.flatMap((c) => [...c.opKinds]).sort()).toEqual(kinds);
  });

  it('is refused when two capabilities claim one op kind or share a name', () => {
    const a = { name: 'a', opKinds: ['message.posted'] };
    expect(() => checkCapabilities([a, { name: 'b', opKinds: ['message.posted'] }])).toThrow(/claimed by both a and b/);
    expect(() => checkCapabilities([a, { name: 'a', opKinds: [] }])).toThrow(/two capabilities are named a/);
  });
});
