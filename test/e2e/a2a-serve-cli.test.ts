// `nxs a2a serve` as a person runs it: the built CLI prints where its agents are, serves their cards, refuses a
// call without a client's token, and stops cleanly on SIGTERM.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO, makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';

let ws: TestWorkspace;

beforeAll(async () => {
  ws = await makeWorkspace({ real: true });
  mkdirSync(join(ws.root, '.nxs-personas'), { recursive: true });
  writeFileSync(join(ws.root, '.nxs-personas', 'helper.yaml'), 'model: m\nsystem_prompt: You help.\ntools: []\naddressable: { a2a: true }\nruntime:\n  builtin: { provider: anthropic }\n');
});
afterAll(async () => {
  await ws.cleanup();
});

describe('nxs a2a serve through the built CLI', () => {
  it('prints its agents, serves their cards, refuses a call without a token, and stops on SIGTERM', async () => {
    const added = await ws.nxs(['a2a', 'token', 'add', 'bob', '--json']);
    expect(added.json).toMatchObject({ client: 'bob', handle: 'a2a-bob', replaced: false });
    expect((await ws.nxs(['a2a', 'token', 'list', '--json'])).json.clients).toEqual([expect.objectContaining({ client: 'bob' })]);
    const child = spawn(process.execPath, [join(REPO, 'bin', 'nxs'), 'a2a', 'serve', '--listen', '127.0.0.1:0', '--json'], {
      cwd: ws.root,
      env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/tmp', NEXUS_HOME: ws.home ?? inject('nexusHome') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      let out = '';
      const started = await new Promise<any>((resolve, reject) => {
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString('utf8');
          try {
            resolve(JSON.parse(out));
          } catch {
            /* not all of it yet */
          }
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
      });
      expect(started).toMatchObject({ agents: [{ role: 'helper' }], clients: 1 });
      const card = (await (await fetch(started.agents[0].card)).json()) as any;
      expect(card).toMatchObject({ name: `${ws.short}/helper`, supportedInterfaces: [{ url: started.agents[0].url, protocolBinding: 'JSONRPC' }] });
      const refused = await fetch(started.agents[0].url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: {} }) });
      expect(refused.status).toBe(401);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
