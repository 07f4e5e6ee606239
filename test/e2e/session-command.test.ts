// A session's socket runs the Nexus MCP tools' commands as the session it belongs to: the caller is its recorded
// identity, never one the request names; and it runs those tools' commands only.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { postSessionCommand } from '../../node-agent/cli/session-call.js';
import { serveSession } from '../../node-agent/cli/session-socket.js';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';

let ws: TestWorkspace;
let session: Awaited<ReturnType<typeof serveSession>>;

beforeAll(async () => {
  ws = await makeWorkspace({ real: true });
  ws.cliInProcess = true;
  ws.persona('worker', { mode: 'reply' });
  // The identity the socket holds: here a person, bob, as a spec records one.
  session = await serveSession({ workspaceDir: ws.root, env: { NXC_ACTOR: 'bob' }, base: { PATH: process.env['PATH'] ?? '' }, nexusHome: ws.home ?? inject('nexusHome') });
});
afterAll(async () => {
  await session?.close();
  await ws.cleanup();
});

describe('a command through the session socket', () => {
  it('runs as the socket\'s holder, whatever caller the request names', async () => {
    const r = await postSessionCommand(session.path, 'send', { to: 'worker', subject: 'via socket', text: 'Hello.', caller: { actor: 'mallory', session: null, hop: 5 } });
    expect(r.result).toMatchObject({ posted: true });
    await ws.waitIdle(60_000);
    const view = await ws.nxc(['threads', 'show', String(r.result['thread']), '--json']);
    expect(view.json.messages[0]).toMatchObject({ author: 'bob', text: 'Hello.' });
    const row = (await ws.status()).operations.flatMap((o: any) => o.threads).find((t: any) => t.thread === r.result['thread']);
    expect(row).toMatchObject({ opener: 'bob', session: { depth: 1 } });
  });

  it('refuses a command that is not one of the tools\', and carries a refusal back with its code', async () => {
    await expect(postSessionCommand(session.path, 'withdraw', { thread: 't-x' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(postSessionCommand(session.path, 'threads.show', { thread: 't-01M000000000000000000000000' })).rejects.toMatchObject({ code: 'UNKNOWN_THREAD' });
  });
});
