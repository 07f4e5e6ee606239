// `nxs sync trust add | list | remove` through the real CLI: which workspaces' stamped commissions a workspace admits.
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';

/** A workspace's public JWK, as `nxs key show` will print it (read from its key folder until then). */
function publicJwkText(ws: TestWorkspace): string {
  return readFileSync(join(ws.root, '.nxs', 'keys', 'workspace.pub.jwk'), 'utf8');
}

function trustFile(ws: TestWorkspace): string {
  return join(ws.root, '.nxs', 'trust.json');
}

function trustBytes(ws: TestWorkspace): string | null {
  return existsSync(trustFile(ws)) ? readFileSync(trustFile(ws), 'utf8') : null;
}

describe('nxs sync trust', () => {
  let me: TestWorkspace;
  let bee: TestWorkspace;
  let cee: TestWorkspace;
  beforeAll(async () => {
    [me, bee, cee] = await Promise.all([makeWorkspace({ git: false }), makeWorkspace({ git: false }), makeWorkspace({ git: false })]);
  });
  afterAll(async () => {
    await Promise.all([me, bee, cee].map((w) => w?.cleanup()));
  });

  it('lists nothing at first', async () => {
    const r = await me.nxs(['sync', 'trust', 'list', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toEqual({ workspace: me.id, trusted: [] });
    const text = await me.nxs(['sync', 'trust', 'list']);
    expect(text.stdout).toMatch(/no workspace is trusted here/);
  });

  it('refuses a key that is not the key of the workspace id, with exit 2, and changes nothing', async () => {
    const before = trustBytes(me);
    const r = await me.nxs(['sync', 'trust', 'add', '--workspace', bee.id, '--key', publicJwkText(cee), '--json']);
    expect(r.code).toBe(2);
    expect(r.json.error).toMatchObject({ code: 'TRUST_KEY_MISMATCH', details: { workspace: bee.id, key_workspace: cee.id } });
    expect(trustBytes(me)).toBe(before);
    const text = await me.nxs(['sync', 'trust', 'add', '--workspace', bee.id, '--key', publicJwkText(cee)]);
    expect(text.code).toBe(2);
    expect(text.stderr).toMatch(/^error TRUST_KEY_MISMATCH: /);
    expect(trustBytes(me)).toBe(before);
  });

  it('refuses malformed input with USAGE and changes nothing', async () => {
    const before = trustBytes(me);
    const jwk = JSON.parse(publicJwkText(bee));
    const cases: string[][] = [
      ['--workspace', bee.id, '--key', '{"kty":"OKP","crv":"Ed25519"'], // not JSON
      ['--workspace', bee.id, '--key', JSON.stringify({ ...jwk, crv: 'X25519' })], // not an Ed25519 JWK
      ['--workspace', bee.id, '--key', JSON.stringify({ ...jwk, kid: 'k1' })], // extra members
      ['--workspace', bee.id, '--key', JSON.stringify({ ...jwk, d: 'A'.repeat(43) })], // a private key
      ['--workspace', bee.id, '--key', 'no-such-file.jwk'], // neither JSON nor a file
      ['--workspace', 'NOT-AN-ID', '--key', publicJwkText(bee)],
      ['--workspace', me.id, '--key', publicJwkText(me)], // itself
      ['--workspace', bee.id, '--key', publicJwkText(bee), '--name', 'Bad Alias'],
      ['--workspace', bee.id, '--key', publicJwkText(bee), '--name', cee.id], // an alias that reads as an id
      ['--workspace', bee.id], // no key
      ['--key', publicJwkText(bee), publicJwkText(bee)], // the key twice
      ['--workspace', bee.id, 'nxs-invite:%%%'], // a damaged invite
      ['--workspace', bee.id, '--key', publicJwkText(bee), '--bogus'],
    ];
    for (const args of cases) {
      const r = await me.nxs(['sync', 'trust', 'add', ...args, '--json']);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.json.error.code, args.join(' ')).toBe('USAGE');
      expect(r.stdout).not.toContain('A'.repeat(43)); // a private key is never echoed
    }
    expect(trustBytes(me)).toBe(before);
  });

  it('adds a workspace from its JWK as a JSON string, with an alias; again is a no-op that says so', async () => {
    const r = await me.nxs(['sync', 'trust', 'add', '--workspace', bee.id, '--key', publicJwkText(bee), '--name', 'bee', '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json).toMatchObject({ added: true, renamed: false, workspace: bee.id, name: 'bee', key: JSON.parse(publicJwkText(bee)) });
    expect(statSync(trustFile(me)).mode & 0o777).toBe(0o600);

    const before = trustBytes(me);
    const again = await me.nxs(['sync', 'trust', 'add', '--workspace', bee.id, '--key', publicJwkText(bee), '--json']);
    expect(again.code).toBe(0);
    expect(again.json).toMatchObject({ added: false, renamed: false, workspace: bee.id, name: 'bee' });
    const text = await me.nxs(['sync', 'trust', 'add', '--workspace', bee.id, '--key', publicJwkText(bee), '--name', 'bee']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/already trusted.*nothing changed/);
    expect(trustBytes(me)).toBe(before);
  });

  it('adds a workspace from a key file (a path relative to the current folder)', async () => {
    writeFileSync(join(me.root, 'cee.jwk'), publicJwkText(cee));
    const r = await me.nxs(['sync', 'trust', 'add', '--workspace', cee.id, '--key', 'cee.jwk']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`trusting ${cee.id}`));
    const abs = await me.nxs(['sync', 'trust', 'add', '--workspace', cee.id, '--key', join(cee.root, '.nxs', 'keys', 'workspace.pub.jwk'), '--json']);
    expect(abs.json).toMatchObject({ added: false, workspace: cee.id, name: null });
    const stdin = await me.nxs(['sync', 'trust', 'add', '--workspace', cee.id, '--key', '-', '--json'], { input: publicJwkText(cee) });
    expect(stdin.json).toMatchObject({ added: false, workspace: cee.id });
    const folder = await me.nxs(['sync', 'trust', 'add', '--workspace', cee.id, '--key', '.', '--json']);
    expect(folder.code).toBe(2);
    expect(folder.json.error.code).toBe('USAGE');
  });

  it('refuses an alias that already names another workspace', async () => {
    const before = trustBytes(me);
    const r = await me.nxs(['sync', 'trust', 'add', '--workspace', cee.id, '--key', publicJwkText(cee), '--name', 'bee', '--json']);
    expect(r.code).toBe(2);
    expect(r.json.error).toMatchObject({ code: 'USAGE', details: { alias: 'bee', workspace: bee.id } });
    expect(trustBytes(me)).toBe(before);
  });

  it('gives an existing entry an alias when added again with one', async () => {
    const r = await me.nxs(['sync', 'trust', 'add', '--workspace', cee.id, '--key', publicJwkText(cee), '--name', 'cee', '--json']);
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ added: false, renamed: true, workspace: cee.id, name: 'cee' });
  });

  it('lists the entries in the order they were added', async () => {
    const r = await me.nxs(['sync', 'trust', 'list', '--json']);
    expect(r.code).toBe(0);
    expect(r.json.trusted.map((e: any) => [e.workspace, e.name])).toEqual([
      [bee.id, 'bee'],
      [cee.id, 'cee'],
    ]);
    for (const e of r.json.trusted) {
      expect(Object.keys(e).sort()).toEqual(['added_at', 'key', 'name', 'workspace']);
      expect(Number.isNaN(Date.parse(e.added_at))).toBe(false);
    }
    const text = await me.nxs(['sync', 'trust', 'list']);
    expect(text.stdout).toContain(`${bee.id}  bee  added `);
    expect(text.stdout).toContain(`${cee.id}  cee  added `);
    // The file holds the same thing (it is the workspace's, not the node's).
    expect(JSON.parse(trustBytes(me)!)).toMatchObject({ version: 1, trusted: [{ workspace: bee.id }, { workspace: cee.id }] });
  });

  it('removes by alias and by id; an unknown one is UNKNOWN_TRUST with exit 2', async () => {
    const byAlias = await me.nxs(['sync', 'trust', 'remove', '--workspace', 'bee', '--json']);
    expect(byAlias.code, byAlias.stdout + byAlias.stderr).toBe(0);
    expect(byAlias.json).toMatchObject({ removed: true, workspace: bee.id, name: 'bee' });

    const again = await me.nxs(['sync', 'trust', 'remove', '--workspace', 'bee', '--json']);
    expect(again.code).toBe(2);
    expect(again.json.error.code).toBe('UNKNOWN_TRUST');
    const unknownId = await me.nxs(['sync', 'trust', 'remove', '--workspace', bee.id]);
    expect(unknownId.code).toBe(2);
    expect(unknownId.stderr).toMatch(/^error UNKNOWN_TRUST: /);

    const byId = await me.nxs(['sync', 'trust', 'remove', '--workspace', cee.id]);
    expect(byId.code).toBe(0);
    expect(byId.stdout).toMatch(new RegExp(`no longer trusting ${cee.id} \\("cee"\\)`));
    expect((await me.nxs(['sync', 'trust', 'list', '--json'])).json.trusted).toEqual([]);

    // The alias is free again once its entry is gone.
    const reuse = await me.nxs(['sync', 'trust', 'add', '--workspace', cee.id, '--key', publicJwkText(cee), '--name', 'bee', '--json']);
    expect(reuse.json).toMatchObject({ added: true, workspace: cee.id, name: 'bee' });
  });

  it('refuses a bad command line with USAGE (exit 2)', async () => {
    for (const args of [['trust'], ['trust', 'frobnicate'], ['trust', 'list', 'extra'], ['trust', 'remove'], ['trust', 'list', '--name', 'x']]) {
      const r = await me.nxs(['sync', ...args, '--json']);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.json.error.code).toBe('USAGE');
    }
  });

  it('a trust.json that is not JSON is CONFIG_INVALID (exit 2), not a store failure', async () => {
    const file = trustFile(me);
    const before = existsSync(file) ? readFileSync(file, 'utf8') : null;
    writeFileSync(file, '{ not json');
    try {
      const r = await me.nxs(['sync', 'trust', 'list', '--json']);
      expect(r.code).toBe(2);
      expect(r.json.error.code).toBe('CONFIG_INVALID');
    } finally {
      if (before === null) rmSync(file, { force: true });
      else writeFileSync(file, before);
    }
  });

  it('is refused outside a workspace', async () => {
    const r = await me.nxs(['sync', 'trust', 'list', '--json'], { cwd: join(me.root, '..') });
    expect(r.code).toBe(2);
    expect(r.json.error.code).toBe('NOT_A_WORKSPACE');
  });
});

describe('trust in one paste', () => {
  let me: TestWorkspace;
  let dee: TestWorkspace;
  let eff: TestWorkspace;
  beforeAll(async () => {
    [me, dee, eff] = await Promise.all([makeWorkspace({ git: false }), makeWorkspace({ git: false }), makeWorkspace({ git: false })]);
  });
  afterAll(async () => {
    await Promise.all([me, dee, eff].map((w) => w?.cleanup()));
  });

  it('takes the line `nxs key show --invite` prints, with no --workspace: the key fixes the id', async () => {
    const invite = await dee.nxs(['key', 'show', '--invite']);
    expect(invite.code, invite.stderr).toBe(0);
    const line = invite.stdout.trim();
    expect(line).toMatch(/^nxs-invite:[A-Za-z0-9_-]+$/);
    expect(line.split('\n')).toHaveLength(1);
    const r = await me.nxs(['sync', 'trust', 'add', line, '--name', 'dee', '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json).toMatchObject({ added: true, workspace: dee.id, name: 'dee', key: JSON.parse(publicJwkText(dee)) });
    const json = await dee.nxs(['key', 'show', '--invite', '--json']);
    expect(json.json).toEqual({ workspace: dee.id, invite: line });
  });

  it('takes the whole output of `nxs key show --json`, on stdin', async () => {
    const shown = await eff.nxs(['key', 'show', '--json']);
    expect(shown.code).toBe(0);
    const r = await me.nxs(['sync', 'trust', 'add', '-', '--json'], { input: shown.stdout });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json).toMatchObject({ added: true, workspace: eff.id });
  });

  it('checks an id the paste or --workspace claims against the key, and writes nothing when they differ', async () => {
    const before = trustBytes(me);
    const shown = (await eff.nxs(['key', 'show', '--json'])).json;
    const forged = JSON.stringify({ ...shown, workspace: dee.id });
    const r = await me.nxs(['sync', 'trust', 'add', forged, '--json']);
    expect(r.code).toBe(2);
    expect(r.json.error).toMatchObject({ code: 'TRUST_KEY_MISMATCH', details: { workspace: dee.id, key_workspace: eff.id } });
    const line = (await dee.nxs(['key', 'show', '--invite'])).stdout.trim();
    const claimed = await me.nxs(['sync', 'trust', 'add', line, '--workspace', eff.id, '--json']);
    expect(claimed.code).toBe(2);
    expect(claimed.json.error).toMatchObject({ code: 'TRUST_KEY_MISMATCH', details: { workspace: eff.id, key_workspace: dee.id } });
    const body = JSON.parse(Buffer.from(line.slice('nxs-invite:'.length), 'base64url').toString());
    const tampered = 'nxs-invite:' + Buffer.from(JSON.stringify({ ...body, workspace: eff.id })).toString('base64url');
    const t = await me.nxs(['sync', 'trust', 'add', tampered, '--json']);
    expect(t.json.error.code).toBe('TRUST_KEY_MISMATCH');
    expect(trustBytes(me)).toBe(before);
  });
});
