// `nxc guide personas`: what this workspace declares (personas and channels) and which of it other
// workspaces can address. `nxc transcript show`: a session turn's transcript, device-local, mode 600.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { declareChannel } from './scenario.js';

describe('nxc guide personas', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('coder', { mode: 'reply', extra: 'addressable: { external: true }\ndescription: writes the code' });
    ws.persona('reviewer', { mode: 'reply', timeout: '10m' });
    declareChannel(ws, 'review', 'description: code review\nsteps:\n  - role: coder\n  - role: reviewer\n    rework: coder\nworking_tree: exclusive\ntimeout: 20m\n');
    declareChannel(ws, 'panel', 'members: [coder, partner/critic]\nowner: reviewer\n');
    declareChannel(ws, 'broken', 'members: [coder, coder]\n');
  });
  afterAll(() => ws.cleanup());

  it('lists personas and channels, says which personas other workspaces can address, and names refused files', async () => {
    const r = await ws.nxc(['guide', 'personas', '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json.workspace).toMatchObject({ id: ws.id, short: ws.short });
    expect(r.json.personas.map((p: any) => [p.role, p.external, p.address_from_elsewhere])).toEqual([
      ['coder', true, `${ws.id}/coder`],
      ['reviewer', false, null],
    ]);
    expect(r.json.personas[0]).toMatchObject({ handle: `${ws.short}/coder`, description: 'writes the code' });
    expect(r.json.channels.map((c: any) => c.name)).toEqual(['panel', 'review']);
    expect(r.json.channels[1]).toMatchObject({
      address: '#review',
      flow: 'sequential',
      working_tree: 'exclusive',
      timeout_ms: 1_200_000,
      passes: 3,
      description: 'code review',
      steps: [
        { name: 'coder', address: 'coder', rework: null },
        { name: 'reviewer', address: 'reviewer', rework: 'coder' },
      ],
    });
    expect(r.json.channels[0]).toMatchObject({ flow: 'fanout', owner: 'reviewer', steps: [{ address: 'coder' }, { address: 'partner/critic' }] });
    expect(r.json.errors).toEqual([{ kind: 'channel', file: '.nxs-channels/broken.yaml', field: 'members.1', reason: expect.stringContaining('listed twice') }]);

    const text = await ws.nxc(['guide', 'personas']);
    expect(text.stdout).toContain(`also from trusting workspaces as ${ws.id}/coder`);
    expect(text.stdout).toContain('#review  sequential: coder -> reviewer (rework: coder)');
  });
});

describe('nxc transcript show', () => {
  let ws: TestWorkspace;
  let session: string;
  beforeAll(async () => {
    ws = await makeWorkspace();
    ws.persona('coder', { mode: 'reply' });
    const sent = await ws.nxc(['send', 'coder', '--subject', 's', '--json', 'go']);
    session = sent.json.woke.session;
    await ws.waitIdle();
  });
  afterAll(() => ws.cleanup());

  it('prints a turn’s transcript from this machine, written mode 600', async () => {
    const r = await ws.nxc(['transcript', 'show', session, '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json).toMatchObject({ session, turn: 1, turns: [1], mode: '600', truncated: false, file: `.nxs/sessions/${session}/turn-1.log` });
    expect(r.json.text).toContain('agent reply turn 1');
    expect(r.json.text).toContain(`$ nxc reply --thread`);
    const one = await ws.nxc(['transcript', 'show', session, '--turn', '1']);
    expect(one.stdout).toContain('mode 600');
    expect(one.stdout).toContain('agent reply turn 1');
  });

  it('refuses an unknown session, a turn with no transcript and a bad turn number, each with its code', async () => {
    const unknown = await ws.nxc(['transcript', 'show', 's-01ARZ3NDEKTSV4RRFFQ69G5FAV', '--json']);
    expect([unknown.code, unknown.json.error.code]).toEqual([2, 'UNKNOWN_SESSION']);
    const noTurn = await ws.nxc(['transcript', 'show', session, '--turn', '7', '--json']);
    expect([noTurn.code, noTurn.json.error.code]).toEqual([2, 'NO_TRANSCRIPT']);
    expect(noTurn.json.error.details).toMatchObject({ turns: [1] });
    const bad = await ws.nxc(['transcript', 'show', session, '--turn', 'x', '--json']);
    expect([bad.code, bad.json.error.code]).toEqual([2, 'USAGE']);
    const traversal = await ws.nxc(['transcript', 'show', '../../etc', '--json']);
    expect([traversal.code, traversal.json.error.code]).toEqual([2, 'UNKNOWN_SESSION']);
  });

  it('reads no file through a symbolic link', async () => {
    const { symlinkSync, mkdirSync } = await import('node:fs');
    const fake = 's-01ARZ3NDEKTSV4RRFFQ69G5FAW';
    mkdirSync(join(ws.root, '.nxs', 'sessions', fake), { recursive: true });
    writeFileSync(join(ws.root, '..', 'secret.txt'), 'not yours');
    symlinkSync(join(ws.root, '..', 'secret.txt'), join(ws.root, '.nxs', 'sessions', fake, 'turn-1.log'));
    const r = await ws.nxc(['transcript', 'show', fake, '--json']);
    expect([r.code, r.json.error.code]).toEqual([2, 'NO_TRANSCRIPT']);
  });
});
