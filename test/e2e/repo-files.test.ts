// Files anybody who can commit to the repository can put in place: a persona declaration, or a file
// under .nxs/ when a repository carries one. A link to /dev/zero or a FIFO there is refused with a code,
// quickly, by the CLI and by the node, and a bad file never holds up other commands.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';

describe('a persona file that is a link to /dev/zero or to a FIFO, in a workspace a node serves', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace({ real: true });
    ws.persona('coder', { mode: 'reply' });
    execFileSync('mkfifo', [join(ws.root, '..', 'pipe')]);
    symlinkSync(join(ws.root, '..', 'pipe'), join(ws.root, '.nxs-personas', 'pipe.yaml'));
    symlinkSync('/dev/zero', join(ws.root, '.nxs-personas', 'zero.yaml'));
    await ws.startNode();
  });
  afterAll(async () => ws?.cleanup());

  it.each(['pipe', 'zero'])('a send to %s is refused with PERSONA_INVALID (exit 2), naming the file', { timeout: 30_000 }, async (role) => {
    const r = await ws.nxc(['send', role, '--subject', 's', '--json', 'hi']);
    expect(r.code, r.stderr).toBe(2);
    expect(r.json.error).toMatchObject({ code: 'PERSONA_INVALID', details: { file: `.nxs-personas/${role}.yaml`, reason: expect.stringContaining('symbolic link') } });
  });

  it('the workspace queue goes on: the personas are listed with the two problems, and a send to a good persona is answered', { timeout: 60_000 }, async () => {
    const listed = await ws.nxs(['personas', 'list', '--json']);
    // Exit 2 says some declarations are not valid; the good ones are listed all the same.
    expect(listed.code, listed.stderr).toBe(2);
    expect(listed.json.personas.map((p: { role: string }) => p.role)).toEqual(['coder']);
    expect(JSON.stringify(listed.json)).toContain('.nxs-personas/pipe.yaml');
    expect(JSON.stringify(listed.json)).toContain('.nxs-personas/zero.yaml');
    const sent = await ws.nxc(['send', 'coder', '--subject', 's', '--json', 'hi']);
    expect(sent.code, sent.stderr).toBe(0);
    await ws.waitIdle();
    const shown = await ws.nxc(['threads', 'show', sent.json.thread, '--json']);
    expect(JSON.stringify(shown.json)).toContain('"state":"answered"');
  });
});

describe('files under .nxs/ that are not regular files', () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await makeWorkspace({ real: true });
  });
  afterAll(async () => ws?.cleanup());

  it('a trust.json that links to /dev/zero is refused (CONFIG_INVALID), not read without end', { timeout: 30_000 }, async () => {
    symlinkSync('/dev/zero', join(ws.root, '.nxs', 'trust.json'));
    const r = await ws.nxs(['sync', 'trust', 'list', '--json']);
    expect(r.json?.error, r.stdout + r.stderr).toMatchObject({ code: 'CONFIG_INVALID' });
    rmSync(join(ws.root, '.nxs', 'trust.json'));
  });

  it('a sync.json that is a FIFO is refused (STORE_FAILED) without waiting on it', { timeout: 30_000 }, async () => {
    execFileSync('mkfifo', [join(ws.root, '.nxs', 'sync.json')]);
    const r = await ws.nxs(['sync', 'status', '--json']);
    expect(r.json?.error, r.stdout + r.stderr).toMatchObject({ code: 'STORE_FAILED' });
    rmSync(join(ws.root, '.nxs', 'sync.json'));
  });

  it('a config.json that is a FIFO is refused (CONFIG_INVALID) without waiting on it', { timeout: 30_000 }, async () => {
    const other = await makeWorkspace({ real: true });
    try {
      rmSync(join(other.root, '.nxs', 'config.json'));
      execFileSync('mkfifo', [join(other.root, '.nxs', 'config.json')]);
      mkdirSync(join(other.root, 'sub'));
      const r = await other.nxc(['status', '--json'], { cwd: join(other.root, 'sub') });
      expect(r.json?.error, r.stdout + r.stderr).toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining('not a regular file') });
    } finally {
      await other.cleanup();
    }
  });
});
