// The token ref against a session that moves it. Git's refs are a session's to write; the store, which the lease
// reads its latest grant from, is not. A ref that does not hold the latest grant was not set by a newer grant: the
// mover sets it back and says so. A grant that is not the latest is still fenced, whatever the ref holds.
import { afterEach, describe, expect, it } from 'vitest';
import { fenceGrant, park, restore } from '../../node-agent/capabilities/leases/index.js';
import { probe, readToken, type TokenAuthority } from '../../node-agent/capabilities/leases/repo.js';
import { isNexusError } from '../../protocol/errors.js';
import { cleanupRepos, git, gitPicture, messUp, picture, richRepo } from './repos.js';

const NOW = 1_700_000_000_000;
const REF = 'refs/nexus/lease/token';

afterEach(cleanupRepos);

/** The store's word: `latest` is the last token granted. Collects what was set back. */
function store(latest: number): TokenAuthority & { resets: Array<{ token: number; found: string }>; asked: number } {
  const out = {
    resets: [] as Array<{ token: number; found: string }>,
    asked: 0,
    lastGranted: async () => {
      out.asked++;
      return latest;
    },
    onReset: (r: { token: number; found: string }) => void out.resets.push(r),
  };
  return out;
}

/** Points the token ref at a blob saying `text`, as a session with a shell can. */
async function setRef(dir: string, text: string): Promise<void> {
  const oid = (await gitStdin(dir, text)).trim();
  await git(dir, 'update-ref', REF, oid);
}

async function gitStdin(dir: string, text: string): Promise<string> {
  const { execFileSync } = await import('node:child_process');
  return execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: dir, input: text }).toString();
}

async function tokenText(dir: string): Promise<string> {
  return git(dir, 'cat-file', 'blob', REF);
}

function codeOf(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => 'ok',
    (err: unknown) => (isNexusError(err) ? err.code : String(err)),
  );
}

describe('a token ref a session moved, under the latest grant', () => {
  it.each([
    ['raised past every grant', (dir: string) => setRef(dir, 'nexus-lease-token 999\n'), /^token 999 \(/],
    ['deleted', (dir: string) => git(dir, 'update-ref', '-d', REF).then(() => undefined), /^nothing$/],
    ['pointed at a commit', (dir: string) => git(dir, 'update-ref', REF, 'HEAD').then(() => undefined), /^a commit \(/],
    ['lowered', (dir: string) => setRef(dir, 'nexus-lease-token 1\n'), /^token 1 \(/],
    ['pointed at a blob that says no token', (dir: string) => setRef(dir, 'hello\n'), /^token 0 \(/],
  ])('is set back when %s, and the park goes ahead', async (_what, move, found) => {
    const dir = await richRepo();
    await fenceGrant(dir, 7);
    await messUp(dir);
    const before = await picture(dir);
    await move(dir);
    const s = store(7);
    const r = await park(dir, { operation: 'op1', base: 'main', token: 7, now: NOW }, { authority: s });
    expect(r.outcome).toBe('parked');
    expect(await tokenText(dir)).toBe('nexus-lease-token 7\n');
    expect(s.resets).toEqual([{ token: 7, found: expect.stringMatching(found) }]);
    // The work is on its branch as it was, and comes back byte for byte under the next grant.
    if (r.outcome !== 'parked') return;
    await fenceGrant(dir, 8, { authority: store(8) });
    const back = await restore(dir, { operation: 'op1', token: 8, record: r.record }, { authority: store(8) });
    expect(back.applied).toBe(true);
    expect(await picture(dir)).toEqual(before);
  });

  it('fences a new grant over a ref a session raised past it, and asks the store only then', async () => {
    const dir = await richRepo();
    const quiet = store(1);
    await fenceGrant(dir, 1, { authority: quiet });
    expect(quiet.asked).toBe(0);
    await setRef(dir, 'nexus-lease-token 999\n');
    const s = store(2);
    expect(await fenceGrant(dir, 2, { authority: s })).toEqual({ branch: 'feat/x' });
    expect(await tokenText(dir)).toBe('nexus-lease-token 2\n');
    expect(s.resets).toEqual([{ token: 2, found: expect.stringMatching(/^token 999 /) }]);
    // A ref at the grant's own token guards without a word to the store.
    const after = store(2);
    await messUp(dir);
    expect((await park(dir, { operation: 'op1', base: 'main', token: 2, now: NOW }, { authority: after })).outcome).toBe('parked');
    expect(after.asked).toBe(0);
  });

  it('a workspace made again in the same repository (a new store, tokens from 1) is not fenced by the old one', async () => {
    const dir = await richRepo();
    await fenceGrant(dir, 5);
    expect(await codeOf(fenceGrant(dir, 1))).toBe('LEASE_FENCED');
    const s = store(1);
    await fenceGrant(dir, 1, { authority: s });
    expect(await tokenText(dir)).toBe('nexus-lease-token 1\n');
    expect(s.resets).toHaveLength(1);
  });
});

describe('a grant that is not the latest', () => {
  it.each([
    ['the newer grant fenced it', 'nexus-lease-token 8\n', true],
    ['a session raised it past both', 'nexus-lease-token 999\n', true],
    // A fence raises a ref below its token without asking anybody: that is how every grant starts.
    ['a session lowered it', 'nexus-lease-token 3\n', false],
  ])('never moves the checkout and never sets the ref back (%s)', async (_what, text, above) => {
    const dir = await richRepo();
    await fenceGrant(dir, 7);
    await messUp(dir);
    await setRef(dir, text);
    const ref = (await git(dir, 'rev-parse', REF)).trim();
    const before = await gitPicture(dir);
    const tree = await picture(dir);
    const s = store(8);
    expect(await codeOf(park(dir, { operation: 'op1', base: 'main', token: 7, now: NOW }, { authority: s }))).toBe('LEASE_FENCED');
    expect((await git(dir, 'rev-parse', REF)).trim()).toBe(ref);
    if (above) expect(await codeOf(fenceGrant(dir, 7, { authority: s }))).toBe('LEASE_FENCED');
    expect(s.resets).toEqual([]);
    expect((await git(dir, 'rev-parse', REF)).trim()).toBe(ref);
    expect(await gitPicture(dir)).toEqual(before);
    expect(await picture(dir)).toEqual(tree);
  });

  it('without the store to ask, a moved ref fences as it always did, and a commit in its place stops the move', async () => {
    const dir = await richRepo();
    await fenceGrant(dir, 7);
    await setRef(dir, 'nexus-lease-token 999\n');
    expect(await codeOf(park(dir, { operation: 'op1', base: 'main', token: 7, now: NOW }))).toBe('LEASE_FENCED');
    await git(dir, 'update-ref', REF, 'HEAD');
    expect(await readToken((await probe(dir))!)).toMatchObject({ token: 0, foreign: 'commit' });
    expect(await codeOf(fenceGrant(dir, 8))).toBe('GIT_FAILED');
  });
});
