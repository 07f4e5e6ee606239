// The process helper: programs run through it end exactly as they would run from here (bytes, stdin, exit
// codes, timeouts, a missing program), a helper that dies fails only what it held, stops the programs it ran
// and is replaced, and it neither keeps its parent alive nor outlives it.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processAlive } from '../../infra/fs.js';
import { HELPER_GONE, processHelperPid, runFile, runFileHere, stopProcessHelper, useProcessHelper, type RunFileRequest } from '../../infra/spawner.js';
import { REPO } from '../helpers/workspace.js';
import { until } from '../helpers/until.js';

const req = (file: string, args: string[], extra: Partial<RunFileRequest> = {}): RunFileRequest => ({
  file,
  args,
  cwd: REPO,
  env: process.env,
  timeoutMs: 30_000,
  maxBuffer: 1024 * 1024,
  ...extra,
});

afterAll(() => stopProcessHelper());

/**
 * A program (`node -e` source) that writes its pid to `pidFile`, then waits a minute; on SIGTERM it writes
 * `term` to `termFile` and ends. Stopped so, git would remove its lock files (SIGKILL leaves them).
 */
function lingering(pidFile: string, termFile: string): string {
  return `const fs = require('fs'); process.on('SIGTERM', () => { fs.writeFileSync(${JSON.stringify(termFile)}, 'term'); process.exit(0); }); fs.writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setTimeout(()=>{}, 60000)`;
}

describe('programs run through the process helper', () => {
  useProcessHelper();
  const node = process.execPath;

  it('runs in a process other than this one, and hands back stdout and stderr byte for byte', async () => {
    const helper = processHelperPid();
    expect(helper).not.toBeNull();
    expect(helper).not.toBe(process.pid);
    // Bytes that are not UTF-8 must come back unchanged (git listings carry such paths).
    const r = await runFile(req(node, ['-e', 'process.stdout.write(Buffer.from([0xff, 0x00, 0xc3])); process.stderr.write("é")']));
    expect(r).toMatchObject({ exitCode: 0, errorCode: undefined, killed: false });
    expect([...r.stdout]).toEqual([0xff, 0x00, 0xc3]);
    expect(r.stderr.toString('utf8')).toBe('é');
    const parent = await runFile(req(node, ['-e', 'process.stdout.write(String(process.ppid))']));
    expect(Number(parent.stdout.toString())).toBe(helper);
  });

  it('feeds stdin, runs in the given folder with the given environment, and reports the exit code', async () => {
    const r = await runFile(
      req(node, ['-e', 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{process.stdout.write(s.toUpperCase()+"|"+process.cwd()+"|"+process.env.X);process.exit(7)})'], {
        cwd: '/tmp',
        env: { PATH: process.env['PATH'], X: 'set' },
        input: Buffer.from('abc'),
      }),
    );
    expect(r.exitCode).toBe(7);
    expect(r.stdout.toString()).toBe('ABC|/tmp|set');
  });

  it('answers the same as a program run from here: missing program, timeout, overflow, git', async () => {
    for (const r of [req('/no/such/program', []), req(node, ['-e', 'setTimeout(()=>{}, 60000)'], { timeoutMs: 300 }), req(node, ['-e', 'process.stdout.write("x".repeat(5000))'], { maxBuffer: 100 }), req('git', ['rev-parse', '--is-inside-work-tree'])]) {
      const [there, here] = await Promise.all([runFile(r), runFileHere(r)]);
      expect({ ...there, stdout: there.stdout.length, stderr: there.stderr.toString() }).toEqual({ ...here, stdout: here.stdout.length, stderr: here.stderr.toString() });
    }
    const missing = await runFile(req('/no/such/program', []));
    expect(missing.errorCode).toBe('ENOENT');
    const slow = await runFile(req(node, ['-e', 'setTimeout(()=>{}, 60000)'], { timeoutMs: 300 }));
    expect(slow.killed).toBe(true);
  });

  it('runs many at once, each answered with its own output', async () => {
    const all = await Promise.all(Array.from({ length: 20 }, (_, i) => runFile(req(node, ['-e', `process.stdout.write("${i}")`]))));
    expect(all.map((r) => r.stdout.toString())).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
  });

  it('a helper killed mid-call fails what it held with HELPER_GONE, stops the program it ran, and the next call starts a new one', async () => {
    const first = processHelperPid()!;
    const dir = mkdtempSync(join(tmpdir(), 'nexus-spawner-'));
    try {
      const pidFile = join(dir, 'pid');
      const termFile = join(dir, 'term');
      const held = runFile(req(node, ['-e', lingering(pidFile, termFile)]));
      const pid = await until('the held program to run', async () => (existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : undefined));
      process.kill(first, 'SIGKILL');
      const r = await held;
      expect(r).toMatchObject({ exitCode: null, errorCode: HELPER_GONE });
      // Left alone it would run for a minute, its answer given up.
      await until('the program of a killed helper to end', async () => (processAlive(pid) ? undefined : true), 10_000, 50);
      expect(readFileSync(termFile, 'utf8')).toBe('term');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const next = await runFile(req(node, ['-e', 'process.stdout.write("again")']));
    expect(next.stdout.toString()).toBe('again');
    expect(processHelperPid()).not.toBe(first);
  });

  it('keeps no process alive once idle, and ends with the process that started it, taking the program it ran', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nexus-spawner-'));
    const pidFile = join(dir, 'pid');
    const termFile = join(dir, 'term');
    const source = lingering(pidFile, termFile);
    // Hanging (its one argument, argv[1] under -e), it also has the helper run a program that lasts a minute.
    const script = `
      import { existsSync, readFileSync } from 'node:fs';
      import { runFile, useProcessHelper, processHelperPid } from ${JSON.stringify(`${REPO}/dist/infra/spawner.js`)};
      useProcessHelper();
      const r = await runFile({ file: 'git', args: ['--version'], cwd: '/', env: process.env, timeoutMs: 10000, maxBuffer: 65536 });
      let program = null;
      if (process.argv[1] === 'hang') {
        setInterval(() => {}, 1000);
        void runFile({ file: process.execPath, args: ['-e', ${JSON.stringify(source)}], cwd: '/', env: process.env, timeoutMs: 120000, maxBuffer: 65536 });
        while (!existsSync(${JSON.stringify(pidFile)})) await new Promise((r) => setTimeout(r, 20));
        await new Promise((r) => setTimeout(r, 20));
        program = Number(readFileSync(${JSON.stringify(pidFile)}, 'utf8'));
      }
      console.log(JSON.stringify({ helper: processHelperPid(), program, ok: r.exitCode === 0 }));`;
    // Left alone, the process ends by itself after its last call: the idle helper holds nothing open.
    const done = JSON.parse(execFileSync(node, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 })) as { helper: number; ok: boolean };
    expect(done.ok).toBe(true);
    await until('the helper of an ended process to end', async () => (processAlive(done.helper) ? undefined : true), 30_000, 50);
    // Killed outright, it takes its helper with it.
    const child = spawn(node, ['--input-type=module', '-e', script, 'hang'], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const line = await new Promise<string>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(d.toString())));
      const { helper, program } = JSON.parse(line) as { helper: number; program: number };
      expect(processAlive(helper)).toBe(true);
      expect(processAlive(program)).toBe(true);
      child.kill('SIGKILL');
      await until('the helper of a killed process to end', async () => (processAlive(helper) ? undefined : true), 30_000, 50);
      await until('the program the helper ran to end', async () => (processAlive(program) ? undefined : true), 10_000, 50);
      expect(readFileSync(termFile, 'utf8')).toBe('term');
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
