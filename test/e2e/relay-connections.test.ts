// The relay's door for sockets: one that says no hello is closed, silent sockets from one address are capped,
// and a node that stops says goodbye with a normal close that the relay logs as one. Real relay, real sockets, a real node.
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SYNC_ERROR_TABLE, SYNC_PROTOCOL, syncUrl } from '../../protocol/sync.js';
import { createLogger, startRelay, type Relay } from '../../server/index.js';
import { createStream, OPERATOR, relayFolders } from '../helpers/relay.js';
import { sleep, until } from '../helpers/until.js';
import { makeWorkspace } from '../helpers/workspace.js';

const HELLO_MS = 300;
const CAP = 3;
let folders: Awaited<ReturnType<typeof relayFolders>>;
let relay: Relay;
let token: string;
const logged: Array<Record<string, unknown>> = [];

type Socket = { ws: WebSocket; frames: Array<Record<string, unknown>>; closed: Promise<number> };

/** Opens a sync socket; resolves once open, or to the HTTP status the upgrade was refused with. */
function open(): Promise<Socket | { status: number }> {
  const ws = new WebSocket(syncUrl(relay.url));
  const frames: Array<Record<string, unknown>> = [];
  ws.on('message', (d: Buffer) => frames.push(JSON.parse(d.toString()) as Record<string, unknown>));
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, frames, closed }));
    ws.once('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0 });
      ws.terminate();
    });
    ws.once('error', reject);
  });
}

function socket(s: Socket | { status: number }): Socket {
  if ('status' in s) throw new Error(`the upgrade was refused with HTTP ${s.status}`);
  return s;
}

beforeAll(async () => {
  folders = await relayFolders();
  relay = await startRelay({
    port: 0,
    dataDir: folders.fresh(),
    operatorToken: OPERATOR,
    helloTimeoutMs: HELLO_MS,
    maxPendingPerAddress: CAP,
    log: createLogger({ component: 'relay', level: 'debug', sink: (line) => void logged.push(JSON.parse(line) as Record<string, unknown>) }),
  });
  token = await createStream(relay.url, 'team');
});

afterAll(async () => {
  await relay?.close();
  folders?.cleanup();
});

describe('sockets that do not say hello', () => {
  it('are closed with HELLO_TIMEOUT once the hello timeout has passed', async () => {
    const s = socket(await open());
    expect(await s.closed).toBe(SYNC_ERROR_TABLE.HELLO_TIMEOUT.close);
    expect(s.frames).toContainEqual(expect.objectContaining({ type: 'error', code: 'HELLO_TIMEOUT' }));
  });

  it('a socket that said hello stays open past the hello timeout', async () => {
    const s = socket(await open());
    s.ws.send(JSON.stringify({ type: 'hello', protocol: SYNC_PROTOCOL, stream: 'team', token, node: 'test-node', since: 0 }));
    await until('welcome', async () => (s.frames.some((f) => f['type'] === 'welcome') ? true : undefined), 10_000, 20);
    await sleep(3 * HELLO_MS);
    expect(s.ws.readyState).toBe(WebSocket.OPEN);
    s.ws.close(1000);
    await s.closed;
  });

  it('past the cap of silent sockets from one address, the upgrade is refused with 429; one admitted frees its place', async () => {
    const silent = await Promise.all(Array.from({ length: CAP }, async () => socket(await open())));
    const refused = await open();
    expect(refused).toEqual({ status: 429 });
    expect(logged).toContainEqual(expect.objectContaining({ msg: 'sync connection refused', code: 'TOO_MANY_PENDING' }));
    // One of them says hello and is admitted: no longer pending, so a new socket gets in.
    silent[0]!.ws.send(JSON.stringify({ type: 'hello', protocol: SYNC_PROTOCOL, stream: 'team', token, node: 'test-node', since: 0 }));
    await until('welcome', async () => (silent[0]!.frames.some((f) => f['type'] === 'welcome') ? true : undefined), 10_000, 20);
    const next = socket(await open());
    // The rest, and the newcomer, go at the hello timeout; the admitted one stays.
    for (const s of [...silent.slice(1), next]) expect(await s.closed).toBe(SYNC_ERROR_TABLE.HELLO_TIMEOUT.close);
    expect(silent[0]!.ws.readyState).toBe(WebSocket.OPEN);
    silent[0]!.ws.close(1000);
    await silent[0]!.closed;
  });
});

describe('a node that stops', () => {
  it('closes its sync connection with 1000, and the relay logs a normal close, not 1006', async () => {
    const w = await makeWorkspace({ git: false, real: true, cliInProcess: true });
    try {
      await w.startNode();
      const r = await w.nxs(['sync', 'bind', relay.url, '--stream', 'team', '--token', token, '--json']);
      expect(r.code, r.stderr).toBe(0);
      // The node's own connection: the one still open once sync says connected (bind's probe has come and gone).
      await until('sync connected', async () => ((await w.nxs(['sync', 'status', '--json'])).json.connected ? true : undefined), 30_000);
      const ended = new Set(logged.filter((l) => l['msg'] === 'node disconnected').map((l) => l['conn']));
      const node = logged.filter((l) => l['msg'] === 'node connected' && l['node'] !== 'test-node' && !ended.has(l['conn'])).at(-1)!;
      const conn = node['conn'];
      await w.stopNode();
      const gone = await until('the node disconnected', async () => logged.find((l) => l['msg'] === 'node disconnected' && l['conn'] === conn), 10_000);
      expect(gone).toMatchObject({ code: 1000, normal: true, level: 'info' });
      // Bind's probe left the same way.
      const closes = logged.filter((l) => l['msg'] === 'node disconnected' && l['node'] === node['node']).map((l) => l['code']);
      expect(closes).toEqual([1000, 1000]);
    } finally {
      await w.cleanup();
    }
  });
});
