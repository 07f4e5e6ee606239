// The suite's leak check: processes started under a run's mark are found and stopped, others are not.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, expect, it } from 'vitest';
import { leftoverProcesses, stopProcesses, TEST_RUN_VARIABLE } from '../helpers/leftovers.js';

const started: ChildProcess[] = [];
afterEach(() => {
  for (const c of started.splice(0)) c.kill('SIGKILL');
});

function idle(env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { env, stdio: 'ignore' });
  started.push(child);
  return child;
}

it.skipIf(process.platform !== 'linux')('finds a process carrying the run mark, and only that one, and stops it', async () => {
  const run = `leak-check-${process.pid}-${Date.now()}`;
  const marked = idle({ ...process.env, [TEST_RUN_VARIABLE]: run });
  const other = idle({ ...process.env, [TEST_RUN_VARIABLE]: `${run}-other` });
  await Promise.all([once(marked, 'spawn'), once(other, 'spawn')]);
  expect(leftoverProcesses(run).map((p) => p.pid)).toEqual([marked.pid]);
  expect(leftoverProcesses(run)[0]!.command).toContain('setInterval');

  const exited = once(marked, 'exit');
  await stopProcesses([marked.pid!]);
  await exited;
  expect(leftoverProcesses(run)).toEqual([]);
  expect(other.exitCode).toBeNull();
});

it('this run is marked, so everything the suite starts can be found afterwards', () => {
  expect(process.env[TEST_RUN_VARIABLE]).toMatch(/^\d+-[0-9a-f]{8}$/);
});
