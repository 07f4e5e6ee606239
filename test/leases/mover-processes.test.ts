// What the mover asks git, counted: the refs a move reads come in one process, a guard names the token's blob
// itself, and both still hold in a SHA-256 repository, where the blob has another name.
import { afterEach, describe, expect, it } from 'vitest';
import { fenceGrant, park, restore } from '../../node-agent/capabilities/leases/index.js';
import { probe, readToken, resolveAll } from '../../node-agent/capabilities/leases/repo.js';
import { isNexusError } from '../../protocol/errors.js';
import { countingGit, type CountingGit } from '../helpers/counting-git.js';
import { cleanupRepos, git, gitPicture, messUp, picture, richRepo, tempDir, write } from './repos.js';

const NOW = 1_700_000_000_000;
let counted: CountingGit | null = null;

afterEach(async () => {
  await counted?.remove();
  counted = null;
  await cleanupRepos();
});

/** The git subcommands of the calls noted, in order (the `-c` pins every call carries left out). */
function verbs(calls: string[]): string[] {
  return calls.map((line) => {
    const words = line.split(' ');
    let i = 0;
    while (words[i] === '-c') i += 2;
    return words[i]!;
  });
}

describe('the git processes of a move', () => {
  it('a park and its restore read their refs in one process each and never hash the token to guard', async () => {
    const dir = await richRepo();
    await messUp(dir);
    const before = await picture(dir);
    await fenceGrant(dir, 1);
    counted = await countingGit();
    const r = await counted.around(() => park(dir, { operation: 'op1', base: 'main', token: 1, now: NOW }));
    if (r.outcome !== 'parked') throw new Error(JSON.stringify(r));
    const parking = verbs(await counted.take());
    await counted.around(() => fenceGrant(dir, 2));
    const fencing = verbs(await counted.take());
    const back = await counted.around(() => restore(dir, { operation: 'op1', token: 2, record: r.record }));
    expect(back.applied).toBe(true);
    const restoring = verbs(await counted.take());
    expect(await picture(dir)).toEqual(before);

    // Before the batching a park started 20 processes (rev-parse five times, hash-object once), a restore 16 and
    // a fence 6 (the token ref and its blob apart).
    expect(parking.filter((v) => v === 'rev-parse')).toEqual(['rev-parse']);
    expect(parking.filter((v) => v === 'cat-file')).toEqual(['cat-file']);
    expect(parking).not.toContain('hash-object');
    expect(parking.filter((v) => v === 'update-ref')).toHaveLength(3);
    // Finding the repository, and the branch after the checkout; the staged state's commit comes with the refs.
    expect(restoring.filter((v) => v === 'rev-parse')).toHaveLength(2);
    expect(restoring).not.toContain('hash-object');
    // The token ref and its blob in one process; the new token's blob is written once.
    expect(fencing).toEqual(['rev-parse', 'cat-file', 'hash-object', 'update-ref', 'symbolic-ref']);
    // One more since: the bundle that keeps a copy of the work where no session reaches.
    expect(parking.filter((v) => v === 'bundle')).toHaveLength(1);
    expect(parking.length).toBeLessThanOrEqual(16);
    expect(restoring.length).toBeLessThanOrEqual(13);
  });

  it('parks, fences and restores in a SHA-256 repository, whose token blob has another name', async () => {
    const dir = await tempDir();
    await git(dir, 'init', '-q', '-b', 'main', '--object-format=sha256');
    await write(dir, 'a.txt', 'alpha\n');
    await git(dir, 'add', '-A');
    await git(dir, 'commit', '-q', '-m', 'first');
    await git(dir, 'checkout', '-q', '-b', 'feat');
    await write(dir, 'a.txt', 'edited\n');
    await write(dir, 'new.txt', 'new\n');
    const before = await picture(dir);
    expect((await probe(dir))?.objectFormat).toBe('sha256');

    await fenceGrant(dir, 1);
    const r = await park(dir, { operation: 'op1', base: 'main', token: 1, now: NOW });
    if (r.outcome !== 'parked') throw new Error(JSON.stringify(r));
    expect(r.record.work).toMatch(/^[0-9a-f]{64}$/);
    expect(await gitPicture(dir)).toEqual({ status: '', staged: '', branch: 'main' });
    // A superseded grant is still fenced off when the name is worked out here.
    await fenceGrant(dir, 3);
    const stale = await restore(dir, { operation: 'op1', token: 2, record: r.record }).then(
      () => 'restored',
      (err: unknown) => (isNexusError(err) ? err.code : String(err)),
    );
    expect(stale).toBe('LEASE_FENCED');
    const back = await restore(dir, { operation: 'op1', token: 3, record: r.record });
    expect(back.applied).toBe(true);
    expect(await picture(dir)).toEqual(before);
  });

  it('resolves names in order, missing ones and one holding a newline to null', async () => {
    const dir = await richRepo();
    const repo = (await probe(dir))!;
    const head = (await git(dir, 'rev-parse', 'HEAD')).trim();
    const tree = (await git(dir, 'rev-parse', 'HEAD^{tree}')).trim();
    expect(await resolveAll(repo, ['HEAD^{tree}', 'refs/heads/nope^{commit}', 'HEAD^{commit}', 'refs/heads/main\nHEAD^{commit}', 'HEAD^{commit}'])).toEqual([
      tree,
      null,
      head,
      null,
      head,
    ]);
  });
});

describe('the token ref read in one process', () => {
  it('reads the token a grant left, 0 where none was fenced, and a ref turned to another kind of object as foreign', async () => {
    const dir = await richRepo();
    expect(await readToken((await probe(dir))!)).toEqual({ oid: null, token: 0, foreign: null });
    await fenceGrant(dir, 7);
    const blob = (await git(dir, 'rev-parse', 'refs/nexus/lease/token')).trim();
    expect(await readToken((await probe(dir))!)).toEqual({ oid: blob, token: 7, foreign: null });
    // Git's objects and refs are a session's to write: a token ref moved to a commit is read as such, and stops a
    // move that has no store to ask whether its grant is the latest (token-ref.test.ts has the one that does).
    await git(dir, 'update-ref', 'refs/nexus/lease/token', 'HEAD');
    const head = (await git(dir, 'rev-parse', 'HEAD')).trim();
    expect(await readToken((await probe(dir))!)).toEqual({ oid: head, token: 0, foreign: 'commit' });
    const r = await park(dir, { operation: 'op1', base: 'main', token: 7, now: NOW });
    expect(r.outcome).toBe('refused_passable');
  });
});
