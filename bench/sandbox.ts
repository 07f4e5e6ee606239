// What the session sandbox adds to a turn's start: the runtime's process started bare, and started as a sidecar starts it
// in a sandbox (the policy, the session socket, bwrap around the program). Part of `npm run bench`.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { turnSandbox } from '../node-agent/adapters/sandbox/index.js';
import { serveSession } from '../node-agent/cli/session-socket.js';
import { ms, row, summarize, type Summary } from './stats.js';

/** The per-turn budget the sandbox must stay under on this machine. */
export const SANDBOX_BUDGET_MS = 50;

function runToExit(argv: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${argv.join(' ')} exited ${code}`))));
  });
}

/**
 * Turn starts with and without the sandbox, `n` of each, the program being `node -e 0` (a runtime is a Node
 * process). Returns the printed rows and whether the median difference stays under SANDBOX_BUDGET_MS.
 */
export async function sandboxBench(root: string, env: NodeJS.ProcessEnv, n: number): Promise<{ text: string; addedMs: number; within: boolean }> {
  const program = [process.execPath, '-e', '0'];
  const sessions = mkdtempSync(join(tmpdir(), 'nexus-bench-sessions-'));
  const persona = { tools: ['Bash'], permissions: 'default' as const, runtime: { command: ['node'] } };
  try {
    // Alternated, one of each per round, so a machine that gets busier mid-run weighs on both alike.
    const bareTimes: number[] = [];
    const boxedTimes: number[] = [];
    for (let i = 0; i < n; i++) {
      let t = performance.now();
      await runToExit(program, root, env);
      bareTimes.push(performance.now() - t);
      t = performance.now();
      const session = await serveSession({ workspaceDir: root, env: {}, base: {}, nexusHome: env['NEXUS_HOME'] });
      try {
        const box = turnSandbox({ workspaceDir: root, sessionDir: join(sessions, `s${i}`), persona, env, socket: session.path });
        if (!box.on) throw new Error('the bench workspace runs with sandbox: off');
        await runToExit(box.wrap(program, root), root, box.env(env));
      } finally {
        await session.close();
      }
      boxedTimes.push(performance.now() - t);
    }
    const bare = summarize(bareTimes);
    const boxed: Summary = summarize(boxedTimes);
    const addedMs = boxed.median - bare.median;
    const within = addedMs < SANDBOX_BUDGET_MS;
    const text = [
      row('turn start, no sandbox (node -e 0)', bare),
      row('turn start in the sandbox (policy, socket, bwrap)', boxed, bare),
      `  the sandbox adds ${ms(addedMs)} per turn (median); budget ${SANDBOX_BUDGET_MS} ms: ${within ? 'met' : 'MISSED'}`,
    ].join('\n');
    return { text, addedMs, within };
  } finally {
    rmSync(sessions, { recursive: true, force: true });
  }
}
