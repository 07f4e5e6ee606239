// The working-copy lease through the whole engine: a real workspace (real git, real PGlite, the real CLI code)
// served in process, scripted sessions, and a test clock. Helpers shared by the engine-level lease tests.
import { exitCodeOf } from '../../protocol/receipts.js';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { git } from './repos.js';

export const MIN = 60_000;
export const HOUR = 60 * MIN;

/** A workspace whose repository holds a tracked file, a file to delete, and a .gitignore that ignores *.log. */
export async function leaseWorkspace(): Promise<TestWorkspace> {
  const ws = await makeWorkspace();
  writeFileSync(join(ws.root, 'tracked.txt'), 'first version\n');
  writeFileSync(join(ws.root, 'gone.txt'), 'to be deleted\n');
  writeFileSync(join(ws.root, '.gitignore'), '.nxs-personas/\n*.log\n');
  await git(ws.root, 'add', '-A');
  await git(ws.root, 'commit', '-q', '-m', 'files');
  return ws;
}

/** A persona that needs the working copy to itself, running the `steps` script (see test/helpers/agents.ts). */
export function exclusive(ws: TestWorkspace, role: string, steps: string, extra = ''): void {
  ws.persona(role, { mode: 'steps', arg: steps, extra: `working_tree: exclusive${extra ? `\n${extra}` : ''}` });
}

export function shared(ws: TestWorkspace, role: string, steps: string): void {
  ws.persona(role, { mode: 'steps', arg: steps });
}

export function gate(ws: TestWorkspace, name: string): string {
  return join(ws.root, '..', `gate-${name}`);
}

export function open(path: string): void {
  writeFileSync(path, '');
}

/** `nxc send` as alice (or `env`), which must succeed; returns the receipt. */
export async function send(ws: TestWorkspace, to: string, text = 'please', env?: Record<string, string>): Promise<any> {
  const r = await ws.nxc(['send', to, '--subject', text, '--json', text], { env });
  // The command did its work: 0, or 3 when a trigger failed after its message was written (the receipt says which).
  expect(r.code, r.stdout + r.stderr).toBe(r.json ? exitCodeOf(r.json.warnings ?? []) : 0);
  return r.json;
}

export async function reply(ws: TestWorkspace, thread: string, text: string, env?: Record<string, string>): Promise<any> {
  const r = await ws.nxc(['reply', '--thread', thread, '--json', text], { env });
  // The command did its work: 0, or 3 when a trigger failed after its message was written (the receipt says which).
  expect(r.code, r.stdout + r.stderr).toBe(r.json ? exitCodeOf(r.json.warnings ?? []) : 0);
  return r.json;
}

export async function tick(ws: TestWorkspace): Promise<any> {
  const r = await ws.nxc(['tick', '--json']);
  // The command did its work: 0, or 3 when a trigger failed after its message was written (the receipt says which).
  expect(r.code, r.stdout + r.stderr).toBe(r.json ? exitCodeOf(r.json.warnings ?? []) : 0);
  return r.json;
}

/** The lease line of an operation in `nxc status --json` (null when the lease says nothing of it). */
export async function leaseOf(ws: TestWorkspace, operation: string): Promise<any> {
  const op = (await ws.status(true)).operations.find((o: any) => o.operation === operation);
  return op?.lease ?? null;
}

/** Turn starts of a role, from the scripted agents' log. */
export function starts(ws: TestWorkspace, role: string): any[] {
  return ws.agentLog().filter((e) => e.cmd === 'start' && e.role === `${ws.short}/${role}`);
}

/** The nxc calls a role made, of one command. */
export function calls(ws: TestWorkspace, role: string, cmd: string): any[] {
  return ws.agentLog().filter((e) => e.cmd === cmd && e.role === `${ws.short}/${role}`);
}

/** Waits (real time, for scripted sessions to act) until `ready` holds. Never used to wait out a rule's duration. */
export async function until(what: string, ready: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The pid of the running turn of `session` on the in-process host. */
export async function pidOf(ws: TestWorkspace, session: string): Promise<number> {
  const pids = ws.inproc!.runningPids();
  const rows = await ws.withStore(async (s) => (await s.pg.query<{ session: string; sidecar_pid: number }>('select session, sidecar_pid from session_procs where ended_at is null')).rows);
  const row = rows.find((r) => r.session === session && pids.includes(r.sidecar_pid));
  if (!row) throw new Error(`no running turn of ${session}`);
  return row.sidecar_pid;
}

export function exists(ws: TestWorkspace, path: string): boolean {
  return existsSync(join(ws.root, path));
}

/** A file at a commit-ish, or null when it is not there. */
export async function show(ws: TestWorkspace, rev: string, path: string): Promise<string | null> {
  return git(ws.root, 'show', `${rev}:${path}`).catch(() => null);
}

export async function branch(ws: TestWorkspace): Promise<string> {
  return (await git(ws.root, 'symbolic-ref', '-q', '--short', 'HEAD').catch(() => 'DETACHED\n')).trim();
}

export async function porcelain(ws: TestWorkspace): Promise<string> {
  return git(ws.root, 'status', '--porcelain', '--untracked-files=all');
}

/** Leaves uncommitted work of every kind the park must carry: a change, a deletion, an untracked file, an ignored one. */
export function leaveWork(ws: TestWorkspace, tag: string): void {
  writeFileSync(join(ws.root, 'tracked.txt'), `changed by ${tag}\n`);
  writeFileSync(join(ws.root, 'debug.log'), `ignored, of ${tag}\n`);
  rmSync(join(ws.root, 'gone.txt'), { force: true });
  writeFileSync(join(ws.root, `new-${tag}.txt`), `untracked, of ${tag}\n`);
}
