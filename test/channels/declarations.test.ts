// Channel declarations: what is accepted and how it reads, what is refused and with which field.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isNexusError, type NexusError } from '../../protocol/errors.js';
import { CHANNEL_MAX_BYTES, channelAddress, listChannels, loadChannel } from '../../node-agent/capabilities/channels/index.js';

const roots: string[] = [];

afterEach(async () => {
  await Promise.all(roots.splice(0).map((root) => rm(root, { recursive: true, force: true })));
});

async function workspace(files: Record<string, string> = {}): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'nxs-channels-'));
  roots.push(root);
  await mkdir(path.join(root, '.nxs-channels'));
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(root, '.nxs-channels', name), text);
  return root;
}

async function refusal(root: string, name: string): Promise<NexusError> {
  const err = await loadChannel(root, name).then(
    () => null,
    (e: unknown) => e,
  );
  if (!isNexusError(err)) throw new Error(`expected a NexusError, got ${String(err)}`);
  return err;
}

describe('accepted declarations', () => {
  it.each([
    ['a fan-out by members', 'members: [coder, reviewer]\n', { flow: 'fanout', steps: [{ name: 'coder', rework: null }, { name: 'reviewer', rework: null }], passes: 3, owner: null }],
    ['members in order', 'members: [planner, coder]\nflow: sequential\n', { flow: 'sequential', steps: [{ name: 'planner' }, { name: 'coder' }] }],
    [
      'steps with rework, windows and a pass limit',
      'steps:\n  - role: coder\n    timeout: 30m\n  - role: reviewer\n    rework: coder\npasses: 5\ntimeout: 2h\nworking_tree: exclusive\n',
      { flow: 'sequential', passes: 5, timeout_ms: 7_200_000, working_tree: 'exclusive', steps: [{ name: 'coder', timeout_ms: 1_800_000, rework: null }, { name: 'reviewer', timeout_ms: null, rework: 0 }] },
    ],
    ['one role twice under two names', 'steps:\n  - role: coder\n  - role: reviewer\n  - role: coder\n    name: fixer\n    rework: reviewer\n', { steps: [{ name: 'coder' }, { name: 'reviewer' }, { name: 'fixer', role: 'coder', rework: 1 }] }],
    ['a member of a trusted workspace', 'members: [coder, partner/critic]\nowner: lead\n', { owner: 'lead', steps: [{ workspace: null, role: 'coder' }, { workspace: 'partner', role: 'critic', address: 'partner/critic' }] }],
  ])('%s', async (_what, text, expected) => {
    const root = await workspace({ 'review.yaml': text });
    expect(await loadChannel(root, 'review')).toMatchObject({ name: 'review', file: '.nxs-channels/review.yaml', ...expected });
  });

  it('gives a hash that formatting and key order cannot change, and an edit can', async () => {
    const a = await loadChannel(await workspace({ 'r.yaml': 'members: [a, b]\ntimeout: 90s\n' }), 'r');
    const b = await loadChannel(await workspace({ 'r.yml': '# same\ntimeout: 90\nmembers:\n  - a\n  - b\n' }), 'r');
    const c = await loadChannel(await workspace({ 'r.yaml': 'members: [a, b]\ntimeout: 91s\n' }), 'r');
    expect(a!.hash).toBe(b!.hash);
    expect(a!.hash).not.toBe(c!.hash);
  });

  it('a channel nobody declared is null', async () => {
    expect(await loadChannel(await workspace(), 'nope')).toBeNull();
  });
});

describe('refusals', () => {
  it.each([
    ['neither members nor steps', 'timeout: 5m\n', 'members'],
    ['both members and steps', 'members: [a]\nsteps:\n  - role: b\n', 'steps'],
    ['an empty member list', 'members: []\n', 'members'],
    ['a member listed twice', 'members: [a, b, a]\n', 'members.2'],
    ['a member that is no role', 'members: [Coder]\n', 'members.0'],
    ['a member with two slashes', 'members: [a/b/c]\n', 'members.0'],
    ['steps declared as a fan-out', 'flow: fanout\nsteps:\n  - role: a\n', 'flow'],
    ['an unknown flow', 'members: [a]\nflow: parallel\n', 'flow'],
    ['a step without a role', 'steps:\n  - timeout: 5m\n', 'steps.0.role'],
    ['an unknown key in a step', 'steps:\n  - role: a\n    retries: 2\n', 'steps.0.retries'],
    ['two steps with one name', 'steps:\n  - role: a\n  - role: a\n', 'steps.1.role'],
    ['rework naming a later step', 'steps:\n  - role: a\n    rework: b\n  - role: b\n', 'steps.0.rework'],
    ['rework naming itself', 'steps:\n  - role: a\n  - role: b\n    rework: b\n', 'steps.1.rework'],
    ['rework naming no step', 'steps:\n  - role: a\n  - role: b\n    rework: c\n', 'steps.1.rework'],
    ['passes without any rework', 'members: [a]\npasses: 2\n', 'passes'],
    ['passes of zero', 'steps:\n  - role: a\n  - role: b\n    rework: a\npasses: 0\n', 'passes'],
    ['passes that are not whole', 'steps:\n  - role: a\n  - role: b\n    rework: a\npasses: 1.5\n', 'passes'],
    ['an owner of another workspace', 'members: [a]\nowner: other/lead\n', 'owner'],
    ['a misspelt key', 'members: [a]\nowners: lead\n', 'owners'],
    ['an unknown working tree mode', 'members: [a]\nworking_tree: private\n', 'working_tree'],
    ['a timeout of zero', 'members: [a]\ntimeout: 0\n', 'timeout'],
    ['a step timeout in an unknown unit', 'steps:\n  - role: a\n    timeout: 3d\n', 'steps.0.timeout'],
    ['a duplicate key', 'members: [a]\nmembers: [b]\n', 'members'],
    ['a YAML syntax error', 'members: [a\n', null],
    ['an empty file', '', null],
    ['a list at the top level', '- members: [a]\n', null],
    ['an alias bomb', 'members: [a]\ndescription: x\nx: &x [1, 1, 1, 1]\ny: &y [*x, *x, *x, *x, *x, *x]\nz: [*y, *y, *y, *y, *y, *y]\n', null],
  ])('refuses %s with CHANNEL_INVALID naming the field', async (_what, text, field) => {
    const err = await refusal(await workspace({ 'review.yaml': text }), 'review');
    expect(err.code).toBe('CHANNEL_INVALID');
    expect(err.details).toMatchObject({ file: '.nxs-channels/review.yaml', field });
    expect(String(err.details?.['reason'])).not.toBe('');
  });

  it('refuses a file over the byte cap without reading it whole', async () => {
    const root = await workspace({ 'big.yaml': `members: [a]\ndescription: "${'x'.repeat(CHANNEL_MAX_BYTES)}"\n` });
    expect((await refusal(root, 'big')).details).toMatchObject({ field: null, reason: expect.stringContaining(`${CHANNEL_MAX_BYTES}-byte`) });
  });

  it('refuses a symbolic link, even to a valid declaration', async () => {
    const root = await workspace({});
    const outside = path.join(root, 'elsewhere.yaml');
    await writeFile(outside, 'members: [a]\n');
    await symlink(outside, path.join(root, '.nxs-channels', 'linked.yaml'));
    expect((await refusal(root, 'linked')).details).toMatchObject({ reason: expect.stringContaining('symbolic link') });
  });

  it('refuses a NUL written as a YAML escape, naming the field', async () => {
    const err = await refusal(await workspace({ 'review.yaml': 'members: [a]\ndescription: "x\\0y"\n' }), 'review');
    expect(err.code).toBe('CHANNEL_INVALID');
    expect(err.details).toMatchObject({ file: '.nxs-channels/review.yaml', field: 'description', reason: expect.stringContaining('NUL') });
  });

  it('refuses a FIFO without blocking on it', async () => {
    const root = await workspace({});
    execFileSync('mkfifo', [path.join(root, '.nxs-channels', 'pipe.yaml')]);
    expect((await refusal(root, 'pipe')).details).toMatchObject({ reason: 'is not a regular file' });
  });

  it('refuses one channel declared as both .yaml and .yml', async () => {
    const root = await workspace({ 'r.yaml': 'members: [a]\n', 'r.yml': 'members: [b]\n' });
    expect((await refusal(root, 'r')).details).toMatchObject({ reason: expect.stringContaining('declared twice') });
  });

  it('refuses a file whose name is no channel name', async () => {
    const root = await workspace({ 'Review.yaml': 'members: [a]\n' });
    expect((await refusal(root, 'Review')).details).toMatchObject({ field: null, reason: expect.stringContaining('rename the file') });
  });

  it('a bad file never hides the good ones', async () => {
    const root = await workspace({ 'good.yaml': 'members: [a]\n', 'bad.yaml': 'members: []\n', 'notes.txt': 'ignored' });
    const { channels, errors } = await listChannels(root);
    expect(channels.map((c) => c.name)).toEqual(['good']);
    expect(errors).toEqual([expect.objectContaining({ file: '.nxs-channels/bad.yaml', field: 'members' })]);
  });
});

describe('addresses', () => {
  it.each([
    ['#review', 'review'],
    ['review', null],
    ['@alice', null],
    ['ab12/coder', null],
  ])('%s names channel %s', (to, name) => {
    expect(channelAddress(to)).toBe(name);
  });

  it.each(['#', '#Review', '#a/b', '#../x'])('refuses %s with UNKNOWN_RECIPIENT', (to) => {
    let code: string | null = null;
    try {
      channelAddress(to);
    } catch (err) {
      code = isNexusError(err) ? err.code : 'other';
    }
    expect(code).toBe('UNKNOWN_RECIPIENT');
  });
});
