// A turn started on someone else's behalf (a promotion set off by another session's answer, or by a tick) runs
// with the environment recorded for its session, never the caller's. Real sidecars and agents; the long wait is
// crossed with faketime.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { exitCodeOf } from '../../../protocol/receipts.js';
import { gitEnv } from '../../helpers/git-env.js';
import { AGENT, makeWorkspace, REPO, type CliResult, type TestWorkspace } from '../../helpers/workspace.js';
import { waitFor } from '../../channels/scenario.js';

const FAKETIME = (() => {
  try {
    return execFileSync('sh', ['-c', 'command -v faketime'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
})();

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: gitEnv(), encoding: 'utf8' });
}

async function leaseRepo(): Promise<TestWorkspace> {
  const ws = await makeWorkspace({ real: true });
  ws.cliInProcess = true;
  writeFileSync(join(ws.root, 'tracked.txt'), 'first version\n');
  git(ws.root, 'add', '-A');
  git(ws.root, 'commit', '-q', '-m', 'files');
  return ws;
}

async function send(ws: TestWorkspace, to: string, env: Record<string, string> = {}): Promise<any> {
  const r = await ws.nxc(['send', to, '--subject', 'work', '--json', 'please'], { env });
  expect(r.code, r.stdout + r.stderr).toBe(r.json?.warnings ? exitCodeOf(r.json.warnings) : 0);
  return r.json;
}

function starts(ws: TestWorkspace, role: string): any[] {
  return ws.agentLog().filter((e) => e.cmd === 'start' && e.role === `${ws.short}/${role}`);
}

/** A persona whose runtime first writes its environment to `file`, then runs the fixture agent in `mode`. */
function envDumper(ws: TestWorkspace, role: string, file: string, mode: string, arg?: string): void {
  mkdirSync(join(ws.root, '.nxs-personas'), { recursive: true });
  const command = ['/bin/sh', '-c', `env > ${JSON.stringify(file)}; exec "$0" "$@"`, process.execPath, AGENT, mode, ...(arg === undefined ? [] : [arg])];
  writeFileSync(join(ws.root, '.nxs-personas', `${role}.yaml`), ['model: fake-model', `system_prompt: You are ${role}.`, 'tools: ["Bash"]', 'working_tree: exclusive', 'runtime:', `  command: ${JSON.stringify(command)}`].join('\n') + '\n');
}

function envOf(file: string): Record<string, string> {
  return Object.fromEntries(readFileSync(file, 'utf8').split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

/** `nxc` run under faketime, `offset` ahead of the wall clock, with `extra` in its environment. */
function nxcLater(ws: TestWorkspace, offset: string, args: string[], extra: Record<string, string>): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('NXC_')) env[k] = v;
  Object.assign(env, { NEXUS_HOME: inject('nexusHome'), PATH: `${join(REPO, 'bin')}:${process.env['PATH'] ?? ''}`, NXC_ACTOR: 'alice', AGENT_LOG: ws.log, FAKETIME_DONT_FAKE_MONOTONIC: '1', ...extra });
  return new Promise((resolve) => {
    execFile(FAKETIME!, ['-f', offset, process.execPath, join(REPO, 'bin', 'nxc'), ...args], { cwd: ws.root, env }, (err, stdout, stderr) => {
      let json: any = null;
      try {
        json = JSON.parse(stdout);
      } catch {
        /* not JSON */
      }
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr, json });
    });
  });
}

describe.skipIf(FAKETIME === null)('a turn started on someone else\'s behalf', () => {
  let ws: TestWorkspace;
  const gate = () => join(ws.root, '..', 'shared', 'holder-gate');
  beforeAll(async () => {
    ws = await leaseRepo();
  });
  afterAll(async () => {
    writeFileSync(gate(), '');
    await ws.cleanup();
  });

  it('promoted by another session\'s answer, runs with its sender\'s environment and none of that session\'s', async () => {
    const holderFile = join(ws.root, '..', 'shared', 'holder-env.txt');
    envDumper(ws, 'holder', holderFile, 'gate', gate());
    const file = join(ws.root, '..', 'shared', 'waiter-env.txt');
    envDumper(ws, 'waiter', file, 'reply');
    await send(ws, 'holder', { HOLDERVAR: 'from the holder\'s sender' });
    const b = await send(ws, 'waiter', { NXC_ACTOR: 'bob', BOBVAR: 'from bob' });
    expect(b.queued).toBeDefined();
    // The holder, started by its sender's own command, has its sender's variables.
    await waitFor('the holder to run', () => existsSync(holderFile), 90_000);
    expect(envOf(holderFile)['HOLDERVAR']).toBe('from the holder\'s sender');
    writeFileSync(gate(), '');
    await waitFor('the waiter to run', () => existsSync(file), 90_000);
    await ws.waitIdle();
    const env = envOf(file);
    expect(env['BOBVAR']).toBe('from bob');
    expect(env['HOLDERVAR']).toBeUndefined();
  });

  it('promoted by a tick under faketime, runs with its sender\'s environment, not the ticker\'s clock or variables', async () => {
    ws.persona('asker', { mode: 'escalate', extra: 'working_tree: exclusive' });
    const file = join(ws.root, '..', 'shared', 'queued-env.txt');
    envDumper(ws, 'queued', file, 'reply');
    await send(ws, 'asker');
    await ws.waitIdle();
    const b = await send(ws, 'queued', { NXC_ACTOR: 'bob', BOBVAR: 'from bob' });
    expect(b.queued).toBeDefined();
    const later = await nxcLater(ws, '+31m', ['tick', '--json'], { TICKERVAR: 'from the ticker' });
    expect(later.code, later.stdout + later.stderr).toBe(0);
    await waitFor('the queued commission to run', () => existsSync(file), 90_000);
    await ws.waitIdle();
    const env = envOf(file);
    expect(env['BOBVAR']).toBe('from bob');
    expect(env['TICKERVAR']).toBeUndefined();
    expect(env['FAKETIME']).toBeUndefined();
    expect(env['LD_PRELOAD'] ?? '').not.toContain('faketime');
  });
});
