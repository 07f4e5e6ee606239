// nxc verbs handed to the node: with a node serving the workspace, `bin/nxc` sends argv, cwd, environment and
// (when asked) stdin over the node's socket, the verb runs in the node, and the client only prints what it
// wrote. Everything here is the real `nxs node run` process and real `bin/nxc` children; the reference
// outputs come from the CLI's main run in this process on the route it had before (the node's RPC commands).
// Nothing here asserts a timing.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestKeys } from '../../node-agent/cli/entry.js';
import { STDIN_LIMIT_BYTES } from '../../node-agent/cli/stdin.js';
import { nodePaths } from '../../node-agent/host/node/files.js';
import { CLI_PATH, REQUEST_KEYS } from '../../node-agent/cli/handover-wire.js';
import { packageVersion } from '../../node-agent/paths.js';
import { RequestKeySchema } from '../../protocol/commands.js';
import { runMain } from '../helpers/host.js';
import { makeWorkspace, REPO, type CliResult, type TestWorkspace } from '../helpers/workspace.js';

const RECORD_MODULES = join(REPO, 'test', 'fixtures', 'record-modules.mjs');

/** bin/nxc as a child process of the workspace, with `input` on its stdin and an optional loader hook. */
function nxc(ws: TestWorkspace, args: string[], opts: { input?: string; env?: Record<string, string>; nodeArgs?: string[] } = {}): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('NXC_')) env[k] = v;
  Object.assign(env, { NEXUS_HOME: ws.home!, NXC_ACTOR: 'alice', AGENT_LOG: ws.log, ...opts.env });
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [...(opts.nodeArgs ?? []), join(REPO, 'bin', 'nxc'), ...args], { cwd: ws.root, env, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      let json: any = null;
      try {
        json = JSON.parse(stdout);
      } catch {
        /* not JSON */
      }
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr, json });
    });
    // A command that never reads stdin may exit before the write lands: its EPIPE is not the test's failure.
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(opts.input ?? '');
  });
}

/** The same verb through the CLI's main in this process, which reaches the node by its RPC commands. */
function reference(ws: TestWorkspace, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const full: NodeJS.ProcessEnv = { ...process.env, NEXUS_HOME: ws.home!, NXC_ACTOR: 'alice', ...env };
  for (const k of Object.keys(full)) if (k.startsWith('NXC_') && !(k in env) && k !== 'NXC_ACTOR') delete full[k];
  return runMain('nxc', args, { env: full, cwd: ws.root });
}

/** A raw POST on the node's hand-over route. */
function postCli(ws: TestWorkspace, body: unknown): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const req = request(
      { socketPath: nodePaths(ws.home!).socket, path: CLI_PATH, method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': payload.length } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe('nxc verbs handed to a node that serves the workspace', () => {
  let ws: TestWorkspace;
  let other: TestWorkspace;
  let logDir: string;
  beforeAll(async () => {
    ws = await makeWorkspace({ real: true, git: false });
    await ws.startNode();
    // A second workspace under the same home, not registered: the node does not serve it.
    other = await makeWorkspace({ real: true, git: false });
    other.home = ws.home;
    logDir = mkdtempSync(join(tmpdir(), 'nexus-modules-'));
  });
  afterAll(async () => {
    rmSync(logDir, { recursive: true, force: true });
    other.home = undefined; // the node there is ws's, stopped by its own cleanup
    await other.cleanup();
    await ws.cleanup();
  });

  /** The dist/bin files a run loaded, by the loader hook's record. */
  async function loaded(target: TestWorkspace, args: string[]): Promise<{ result: CliResult; files: string[] }> {
    const log = join(logDir, `${Math.random().toString(36).slice(2)}.log`);
    const result = await nxc(target, args, { nodeArgs: ['--import', RECORD_MODULES], env: { NEXUS_TEST_MODULE_LOG: log } });
    const files = readFileSync(log, 'utf8')
      .split('\n')
      .filter((u) => u.startsWith('file:') && u.includes('/dist/bin/'))
      .map((u) => new URL(u).pathname);
    return { result, files: [...new Set(files)] };
  }
  const holdsZod = (file: string) => readFileSync(file, 'utf8').includes('_zod');

  /** Sends `text` on stdin (`nxc send @bob -`) in `target` and returns the text its thread holds. */
  async function sentFromStdin(target: TestWorkspace, text: string): Promise<string> {
    const sent = await nxc(target, ['send', '@bob', '--subject', 'piped', '--json', '-'], { input: text });
    expect(sent.code, sent.stderr).toBe(0);
    return (await nxc(target, ['threads', 'show', sent.json.thread, '--json'])).json.messages[0].text;
  }

  it('status, send, reply and threads show run in the node: the client process loads no zod', async () => {
    const status = await loaded(ws, ['status', '--json']);
    expect(status.result.code, status.result.stderr).toBe(0);
    expect(status.result.json).toMatchObject({ operations: [] });
    expect(status.files.length).toBeGreaterThan(0);
    expect(status.files.filter(holdsZod)).toEqual([]);

    const sent = await loaded(ws, ['send', '@bob', '--subject', 'handed over', '--json', 'hello']);
    expect(sent.result.code, sent.result.stderr).toBe(0);
    expect(sent.files.filter(holdsZod)).toEqual([]);
    const replied = await nxc(ws, ['reply', '--thread', sent.result.json.thread, '--json', 'hi'], { env: { NXC_ACTOR: 'bob' } });
    expect(replied.code, replied.stderr).toBe(0);
    const shown = await loaded(ws, ['threads', 'show', sent.result.json.thread, '--json']);
    expect(shown.result.json.messages.map((m: { text: string }) => m.text)).toEqual(['hello', 'hi']);
    expect(shown.files.filter(holdsZod)).toEqual([]);
  });

  it('a workspace the node does not serve runs in the client, which loads the CLI (the check above can fail)', async () => {
    const r = await loaded(other, ['tick', '--json']);
    expect(r.result.code, r.result.stderr).toBe(0);
    expect(r.result.json).toMatchObject({ ticked: true, via: 'direct', warnings: [] });
    expect(r.files.some(holdsZod)).toBe(true);
  });

  it('stdin the node asked for, for a workspace it then turned out not to serve, is read once and sent from the client', async () => {
    const text = 'piped once\n';
    expect(await sentFromStdin(other, text)).toBe(text);
  });

  it('prints what the CLI prints on the RPC route, byte for byte, as JSON and as text, and exits the same', async () => {
    const sent = await nxc(ws, ['send', '@bob', '--subject', 'compare', '--json', 'same words']);
    const thread = sent.json.thread as string;
    /** The handed-over run of `args`, once it printed and exited exactly as the reference run. */
    const same = async (args: string[]): Promise<CliResult> => {
      const handed = await nxc(ws, args);
      const ref = await reference(ws, args);
      expect({ args, code: handed.code, stdout: handed.stdout, stderr: handed.stderr }).toEqual({ args, code: ref.code, stdout: ref.stdout, stderr: ref.stderr });
      return handed;
    };
    for (const args of [['status', '--json'], ['status'], ['status', '--all'], ['threads', 'show', thread, '--json'], ['threads', 'show', thread], ['guide', 'personas']]) await same(args);
    // Refusals: the coded error, its words and exit 2, from the node as from the client.
    for (const args of [['threads', 'show', 't-nope', '--json'], ['threads', 'show', 't-nope'], ['status', '--bogus'], ['reply', '--json', 'no thread']]) {
      expect((await same(args)).code).toBe(2);
    }
  });

  it('the environment is the client’s: NXC_ACTOR names the author, a malformed one is refused with BAD_ENVIRONMENT', async () => {
    const sent = await nxc(ws, ['send', '@alice', '--subject', 'from carol', '--json', 'hi alice'], { env: { NXC_ACTOR: 'carol' } });
    expect(sent.code, sent.stderr).toBe(0);
    const shown = await nxc(ws, ['threads', 'show', sent.json.thread, '--json']);
    expect(shown.json.messages[0].author).toBe('carol');
    const bad = await nxc(ws, ['send', '@bob', '--json', 'x'], { env: { NXC_ACTOR: 'Not A Handle' } });
    expect(bad.code).toBe(2);
    expect(bad.json).toMatchObject({ ok: false, error: { code: 'BAD_ENVIRONMENT' } });
  });

  it('a message on stdin is read by the client when the node asks for it, and sent', async () => {
    const text = 'line one\nline two, with "quotes" and ünïcödé\n';
    expect(await sentFromStdin(ws, text)).toBe(text);
  });

  it('stdin over the limit is refused with MESSAGE_TOO_LARGE, exit 2, and nothing is written', async () => {
    const before = (await nxc(ws, ['status', '--all', '--json'])).json.operations.length;
    const big = await nxc(ws, ['send', '@bob', '--subject', 'too big', '--json', '-'], { input: 'x'.repeat(STDIN_LIMIT_BYTES + 1024) });
    expect(big.code).toBe(2);
    expect(big.json).toMatchObject({ ok: false, error: { code: 'MESSAGE_TOO_LARGE' } });
    expect((await nxc(ws, ['status', '--all', '--json'])).json.operations).toHaveLength(before);
  });

  it('answers a request it cannot take with what the client must do, and a malformed one with BAD_REQUEST', async () => {
    const base = {
      version: packageVersion(),
      home: ws.home!,
      argv: ['status', '--json'],
      cwd: ws.root,
      env: { NXC_ACTOR: 'alice' },
      tty: { stdin: false, stdout: false, stderr: false },
      keys: requestKeys(REQUEST_KEYS),
    };
    const ran = await postCli(ws, base);
    expect(ran.json).toMatchObject({ ok: true, exit: 0 });
    expect(JSON.parse(ran.json.output[0][1])).toMatchObject({ operations: expect.any(Array) });
    expect((await postCli(ws, { ...base, version: '0.0.0-other' })).json).toMatchObject({ ok: true, local: expect.stringContaining('version') });
    expect((await postCli(ws, { ...base, home: logDir })).json).toMatchObject({ ok: true, local: expect.stringContaining(ws.home!) });
    for (const argv of [['status', '--watch'], ['status', '-aw'], ['wait', '--thread', 't-x'], ['--help'], ['completion', 'bash']]) {
      expect((await postCli(ws, { ...base, argv })).json, argv.join(' ')).toMatchObject({ ok: true, local: expect.any(String) });
    }
    expect((await postCli(ws, { ...base, argv: ['send', '@bob', '-'] })).json).toEqual({ ok: true, stdin: 'needed' });
    expect((await postCli(ws, { ...base, cwd: other.root })).json).toMatchObject({ ok: true, local: expect.stringContaining('does not serve') });
    for (const bad of ['not json', { ...base, keys: ['r-not-a-key'] }, { ...base, argv: 'status' }, { ...base, tty: null }, []]) {
      const r = await postCli(ws, bad);
      expect(r.status).toBe(400);
      expect(r.json).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    }
    // The node still serves after all that.
    expect((await postCli(ws, base)).json).toMatchObject({ ok: true, exit: 0 });
  });
});

describe('request keys made by the client', () => {
  it('have the form the node checks, and differ', () => {
    const keys = [...requestKeys(REQUEST_KEYS), ...requestKeys(REQUEST_KEYS)];
    for (const k of keys) expect(RequestKeySchema.safeParse(k).success, k).toBe(true);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
