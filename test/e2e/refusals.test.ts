// Every refusal: a stable code, exit 2, `{ok:false,error:{code,message}}` with --json, and nothing written.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { makeWorkspace, REPO, runCli, type CliResult, type RunOpts, type TestWorkspace } from '../helpers/workspace.js';

/** The store's op log and its folds, as JSON text: what "nothing was written" is checked against. */
function dumpStore(ws: TestWorkspace): Promise<string> {
  return ws.withStore(async (store) => {
    const ops = await store.pg.query('select * from ops order by local_seq');
    const operations = await store.pg.query('select * from operations order by id');
    const parts = await store.pg.query('select * from operation_parts order by operation, kind, key');
    return JSON.stringify({ ops: ops.rows, operations: operations.rows, parts: parts.rows });
  });
}

/**
 * Like the harness's runCli, for an input larger than nxc will read: nxc stops reading and exits,
 * so writing the rest of stdin fails with EPIPE, which is expected here and ignored.
 */
function nxcWithHugeStdin(cwd: string, args: string[], input: string): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('NXC_')) env[k] = v;
  Object.assign(env, { NEXUS_HOME: inject('nexusHome'), NXC_ACTOR: 'alice' });
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [join(REPO, 'bin', 'nxc'), ...args], { cwd, env }, (err, stdout, stderr) => {
      let json: any = null;
      try {
        json = JSON.parse(stdout);
      } catch {
        /* not JSON */
      }
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr, json });
    });
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input);
  });
}

/** A session id that is well formed (`s-` + a ULID body) and belongs to no session anywhere. */
const STRANGER_SESSION = 's-01ARZ3NDEKTSV4RRFFQ69G5FAV';
const UNKNOWN_THREAD = 't-01ARZ3NDEKTSV4RRFFQ69G5FAV';
const LIMIT = 256 * 1024;

type Ctx = { ws: TestWorkspace; thread: string; outside: string };
type Case = {
  name: string;
  code: string;
  run: (c: Ctx) => Promise<CliResult>;
  check?: (r: CliResult, c: Ctx) => void;
};

const nxc = (args: string[], opts?: RunOpts) => (c: Ctx) => c.ws.nxc(args, opts);

const cases: Case[] = [
  // The removed per-call overrides are unknown options now.
  { name: 'send --model is an unknown option', code: 'USAGE', run: nxc(['send', 'coder', '--model', 'big', '--subject', 's', '--json', 'hi']) },
  { name: 'send --deadline is an unknown option', code: 'USAGE', run: nxc(['send', 'coder', '--deadline', '1h', '--json', 'hi']) },
  { name: 'send --kind is an unknown option', code: 'USAGE', run: nxc(['send', 'coder', '--kind', 'task', '--json', 'hi']) },
  { name: 'send --priority is an unknown option', code: 'USAGE', run: nxc(['send', 'coder', '--priority', 'high', '--json', 'hi']) },
  { name: 'send --disposition is an unknown option', code: 'USAGE', run: nxc(['send', 'coder', '--disposition', 'wait', '--json', 'hi']) },
  { name: 'reply --kind is an unknown option', code: 'USAGE', run: (c) => c.ws.nxc(['reply', '--thread', c.thread, '--kind', 'answer', '--json', 'hi']) },
  { name: 'reply without --thread is a usage error', code: 'USAGE', run: nxc(['reply', '--json', 'hi']) },
  { name: 'send without a recipient is a usage error', code: 'USAGE', run: nxc(['send', '--json']) },
  { name: 'send with an empty --subject is a usage error', code: 'USAGE', run: nxc(['send', 'coder', '--subject', ' ', '--json', 'hi']) },
  { name: 'an unknown command is a usage error', code: 'USAGE', run: nxc(['shout', '--json', 'hi']) },
  {
    name: 'send to a name that is neither a persona nor a person who posted is an unknown recipient',
    code: 'UNKNOWN_RECIPIENT',
    run: nxc(['send', 'nobody', '--subject', 's', '--json', 'hi']),
  },
  {
    name: 'send to something that is not a handle at all is an unknown recipient',
    code: 'UNKNOWN_RECIPIENT',
    run: nxc(['send', '@Not A Handle', '--subject', 's', '--json', 'hi']),
  },
  { name: 'reply to a thread this workspace never had is an unknown thread', code: 'UNKNOWN_THREAD', run: nxc(['reply', '--thread', UNKNOWN_THREAD, '--json', 'hi']) },
  { name: 'reply to a malformed thread id is an unknown thread', code: 'UNKNOWN_THREAD', run: nxc(['reply', '--thread', 'nope', '--json', 'hi']) },
  { name: 'a blank message is empty', code: 'EMPTY_MESSAGE', run: nxc(['send', 'coder', '--subject', 's', '--json', '  \n ']) },
  { name: 'an empty stdin message is empty', code: 'EMPTY_MESSAGE', run: nxc(['reply', '--thread', UNKNOWN_THREAD, '--json', '-'], { input: '' }) },
  {
    name: 'a message one byte over 256 KiB is too large',
    code: 'MESSAGE_TOO_LARGE',
    run: nxc(['send', 'coder', '--subject', 's', '--json', '-'], { input: 'x'.repeat(LIMIT + 1) }),
  },
  {
    name: 'a message of several MiB on stdin is too large',
    code: 'MESSAGE_TOO_LARGE',
    run: (c) => nxcWithHugeStdin(c.ws.root, ['reply', '--thread', c.thread, '--json', '-'], 'y'.repeat(4 * 1024 * 1024)),
  },
  {
    name: 'a malformed NXC_SESSION is a bad environment',
    code: 'BAD_ENVIRONMENT',
    run: nxc(['send', 'coder', '--subject', 's', '--json', 'hi'], { env: { NXC_SESSION: 'session-42' } }),
  },
  {
    name: 'a well-formed NXC_SESSION that no session here has is an unknown session (send)',
    code: 'UNKNOWN_SESSION',
    run: nxc(['send', 'coder', '--subject', 's', '--json', 'hi'], { env: { NXC_SESSION: STRANGER_SESSION } }),
  },
  {
    name: 'a well-formed NXC_SESSION that no session here has is an unknown session (reply)',
    code: 'UNKNOWN_SESSION',
    run: (c) => c.ws.nxc(['reply', '--thread', c.thread, '--json', 'hi'], { env: { NXC_SESSION: STRANGER_SESSION } }),
  },
  {
    name: 'an NXC_HOP that is not a non-negative integer is a bad environment',
    code: 'BAD_ENVIRONMENT',
    run: nxc(['send', 'coder', '--subject', 's', '--json', 'hi'], { env: { NXC_HOP: '-1' } }),
  },
  {
    name: 'an NXC_ACTOR that is not a handle is a bad environment',
    code: 'BAD_ENVIRONMENT',
    run: nxc(['send', 'coder', '--subject', 's', '--json', 'hi'], { env: { NXC_ACTOR: 'Alice Smith' } }),
  },
  {
    name: 'a person claiming NXC_HOP=32 cannot commission past the cap',
    code: 'DEPTH_EXCEEDED',
    run: nxc(['send', 'coder', '--subject', 's', '--json', 'hi'], { env: { NXC_HOP: '32' } }),
    check: (r) => expect(r.json.error.details).toMatchObject({ caller_depth: 32, cap: 32 }),
  },
  {
    name: 'a persona whose file has a bad field is refused, naming the file and the field',
    code: 'PERSONA_INVALID',
    run: nxc(['send', 'broken', '--subject', 's', '--json', 'hi']),
    check: (r) => {
      expect(r.json.error.details).toMatchObject({ file: '.nxs-personas/broken.yaml', field: 'timeout' });
      expect(r.json.error.message).toContain('.nxs-personas/broken.yaml');
    },
  },
  {
    name: 'nxc outside any workspace is not a workspace',
    code: 'NOT_A_WORKSPACE',
    run: (c) => c.ws.nxc(['send', 'coder', '--subject', 's', '--json', 'hi'], { cwd: c.outside }),
    check: (_r, c) => expect(existsSync(join(c.outside, '.nxs'))).toBe(false),
  },
  {
    name: 'nxc status outside any workspace is not a workspace',
    code: 'NOT_A_WORKSPACE',
    run: (c) => c.ws.nxc(['status', '--json'], { cwd: c.outside }),
  },
  {
    name: 'an NXC_WORKSPACE_DIR that holds no workspace is not a workspace',
    code: 'NOT_A_WORKSPACE',
    run: (c) => c.ws.nxc(['status', '--json'], { env: { NXC_WORKSPACE_DIR: c.outside } }),
  },
  {
    name: 'nxs init --name with an invalid name is a usage error and makes nothing',
    code: 'USAGE',
    run: (c) => runCli('nxs', ['init', '--name', 'bad/name', '--json'], c.outside),
    check: (_r, c) => expect(existsSync(join(c.outside, '.nxs'))).toBe(false),
  },
  {
    name: 'nxs init with an unknown option is a usage error',
    code: 'USAGE',
    run: (c) => runCli('nxs', ['init', '--force', '--json'], c.outside),
    check: (_r, c) => expect(existsSync(join(c.outside, '.nxs'))).toBe(false),
  },
];

describe('refused commands', () => {
  let ctx: Ctx;
  beforeAll(async () => {
    const ws = await makeWorkspace();
    ws.persona('coder', { mode: 'reply' });
    ws.persona('broken', { mode: 'reply', timeout: 'forever' });
    const outside = mkdtempSync(join(tmpdir(), 'nexus-outside-'));
    // One finished operation, so the store's tables hold something to compare.
    const sent = await ws.nxc(['send', 'coder', '--subject', 'seed', '--json', 'seed the store']);
    if (sent.code !== 0) throw new Error(`seed send failed: ${sent.stdout}${sent.stderr}`);
    await ws.waitIdle();
    ctx = { ws, thread: sent.json.thread, outside };
  });
  afterAll(async () => {
    await ctx?.ws.cleanup();
    if (ctx) rmSync(ctx.outside, { recursive: true, force: true });
  });

  it.each(cases.map((c) => [c.name, c.code, c] as const))('%s: exit 2 with %s, and nothing is written', async (_name, code, { run, check }) => {
    await ctx.ws.waitIdle();
    const before = await dumpStore(ctx.ws);
    const r = await run(ctx);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.json).toMatchObject({ ok: false, error: { code, message: expect.any(String) } });
    check?.(r, ctx);
    expect(ctx.ws.sessionDirs()).toHaveLength(1);
    expect(await dumpStore(ctx.ws)).toBe(before);
  });

  it('without --json a refusal is one line on stderr naming its code, still exit 2', async () => {
    const r = await ctx.ws.nxc(['send', 'coder', '--priority', 'high', 'hi']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error USAGE: /);
  });

  it('nxs personas list --json with an invalid declaration exits 2 and prints one JSON document naming the file and the field', async () => {
    const r = await ctx.ws.nxs(['personas', 'list', '--json']);
    expect(r.code, r.stderr).toBe(2);
    expect(r.json, `stdout is not one JSON document: ${r.stdout}`).not.toBeNull();
    expect(r.json.personas.map((p: any) => p.role)).toEqual(['coder']);
    expect(r.json.errors).toEqual([expect.objectContaining({ file: '.nxs-personas/broken.yaml', field: 'timeout' })]);
  });

  it('a workspace whose config cannot be read is refused like any bad input: exit 2, CONFIG_INVALID', async () => {
    const dir = join(ctx.outside, 'corrupt');
    mkdirSync(join(dir, '.nxs'), { recursive: true });
    writeFileSync(join(dir, '.nxs', 'config.json'), '{ not json');
    const r = await ctx.ws.nxc(['status', '--json'], { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.json).toMatchObject({ ok: false, error: { code: 'CONFIG_INVALID' } });
  });

  it('an internal failure (.nxs is a dangling link, so the new workspace cannot be put in place) exits 1 with INTERNAL and leaves no workspace', async () => {
    // (A NEXUS_HOME that is a file no longer fails: the store template ships in the package.)
    const dir = join(ctx.outside, 'fresh');
    mkdirSync(dir);
    symlinkSync(join(ctx.outside, 'nowhere'), join(dir, '.nxs'));
    const r = await runCli('nxs', ['init', '--json'], dir);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.json).toMatchObject({ ok: false, error: { code: 'INTERNAL' } });
    expect(readdirSync(dir)).toEqual(['.nxs']);
    expect(existsSync(join(dir, '.nxs', 'config.json'))).toBe(false);
  });
});
