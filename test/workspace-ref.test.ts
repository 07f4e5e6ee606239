// Naming another workspace in `nxc send <workspace>/<role>`: its full id, an alias, or any unambiguous
// start of a trusted id (status shows four characters). A start that fits several is refused, listing them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateWorkspaceKey, type WorkspaceKey } from '../crypto/index.js';
import { writeWorkspaceKey } from '../node-agent/adapters/keys/index.js';
import { addTrust, resolveWorkspaceRef } from '../node-agent/capabilities/trust/index.js';
import { isNexusError } from '../protocol/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'nexus-ref-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const paths = { nxs: dir, keys: join(dir, 'keys') };
const self = generateWorkspaceKey();
writeWorkspaceKey(paths.keys, self);

/** Keys until two (besides this workspace) share a first character: some ids then share a start. */
function keysSharingAStart(): [WorkspaceKey, WorkspaceKey, WorkspaceKey] {
  const seen = new Map<string, WorkspaceKey>();
  for (;;) {
    const k = generateWorkspaceKey();
    if (k.id[0] === self.id[0]) continue;
    const twin = seen.get(k.id[0]!);
    if (twin) {
      const other = [...seen.values()].find((o) => o.id[0] !== k.id[0] && o.id[0] !== self.id[0])!;
      if (other) return [twin, k, other];
    }
    seen.set(k.id[0]!, k);
  }
}

const [twinA, twinB, lone] = keysSharingAStart();
addTrust(paths, { workspace: twinA.id, key: twinA.publicJwk, name: 'alpha' });
addTrust(paths, { workspace: twinB.id, key: twinB.publicJwk });
addTrust(paths, { workspace: lone.id, key: lone.publicJwk });

describe('resolveWorkspaceRef', () => {
  it.each([
    ['a full id, trusted or not', () => [lone.id, lone.id]],
    ['a full id not trusted here', () => ['a'.repeat(26), 'a'.repeat(26)]],
    ['an alias', () => ['alpha', twinA.id]],
    ['the four characters status shows', () => [lone.id.slice(0, 4), lone.id]],
    ['one character, when only one trusted id starts with it', () => [lone.id.slice(0, 1), lone.id]],
    ['the start of this very workspace', () => [self.id.slice(0, 4), self.id]],
    ['a start long enough to tell twins apart', () => [twinB.id.slice(0, commonLength() + 1), twinB.id]],
  ])('accepts %s', (_what, pair) => {
    const [ref, id] = pair();
    expect(resolveWorkspaceRef(paths, ref!, self.id)).toBe(id);
  });

  it.each([
    ['a start of no trusted id', '7777'],
    ['an unknown alias', 'nowhere'],
    ['something that is neither', 'Not-An-Id'],
  ])('finds nothing for %s', (_what, ref) => {
    expect(resolveWorkspaceRef(paths, ref, self.id)).toBeNull();
  });

  it('refuses a start that fits several trusted ids, listing each (with its alias)', () => {
    const ref = twinA.id.slice(0, commonLength());
    let caught: unknown;
    try {
      resolveWorkspaceRef(paths, ref, self.id);
    } catch (err) {
      caught = err;
    }
    expect(isNexusError(caught) && caught.code).toBe('AMBIGUOUS_RECIPIENT');
    const err = caught as Error & { details: { candidates: string[] } };
    expect(new Set(err.details.candidates)).toEqual(new Set([twinA.id, twinB.id]));
    expect(err.message).toContain(`${twinA.id} (alpha)`);
    expect(err.message).toContain(twinB.id);
  });
});

/** How many leading characters the twins share. */
function commonLength(): number {
  let n = 0;
  while (twinA.id[n] === twinB.id[n]) n++;
  return n;
}

describe('nxc send <short>/<role>', () => {
  it('commissions the trusted workspace whose id starts so, as the full id would', async () => {
    const { makeWorkspace } = await import('./helpers/workspace.js');
    const [a, b] = await Promise.all([makeWorkspace({ git: false }), makeWorkspace({ git: false })]);
    try {
      const added = await a.nxs(['sync', 'trust', 'add', '--workspace', b.id, '--key', join(b.root, '.nxs', 'keys', 'workspace.pub.jwk'), '--json']);
      expect(added.code, added.stdout + added.stderr).toBe(0);
      const sent = await a.nxc(['send', `${b.short}/reviewer`, '--subject', 'review', 'please review', '--json']);
      expect(sent.code, sent.stdout + sent.stderr).toBe(0);
      expect(sent.json).toMatchObject({ woke: null, remote: { workspace: b.id, role: 'reviewer' } });
      const unknown = await a.nxc(['send', '7777/reviewer', '--subject', 'x', 'please', '--json']);
      expect(unknown.json.error.code).toBe('UNKNOWN_RECIPIENT');
    } finally {
      await Promise.all([a.cleanup(), b.cleanup()]);
    }
  });
});
