// What the session sandbox adds to a turn's start: the runtime's process started bare, and started as a sidecar starts it
// in a sandbox (the policy, the session socket, bwrap around the program), with the default network (none) and with a
// host list (the filtering proxy started and stopped, the bridge inside). Part of `npm run bench`; alone, `npm run bench:sandbox`.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { turnSandbox } from '../node-agent/adapters/sandbox/index.js';
import { initWorkspace } from '../node-agent/adapters/workspace/index.js';
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
  const listed = { ...persona, network: ['api.example.com'] };
  const boxedRun = async (i: number, p: typeof persona & { network?: string[] }) => {
    const session = await serveSession({ workspaceDir: root, env: {}, base: {}, nexusHome: env['NEXUS_HOME'] });
    try {
      const box = turnSandbox({ workspaceDir: root, sessionDir: join(sessions, `s${i}`), persona: p, env, socket: session.path });
      if (!box.on) throw new Error('the bench workspace runs with sandbox: off');
      await box.start();
      try {
        await runToExit(box.wrap(program, root), root, box.env(env));
      } finally {
        await box.close();
      }
    } finally {
      await session.close();
    }
  };
  try {
    // Alternated, one of each per round, so a machine that gets busier mid-run weighs on all alike.
    const bareTimes: number[] = [];
    const boxedTimes: number[] = [];
    const listedTimes: number[] = [];
    for (let i = 0; i < n; i++) {
      let t = performance.now();
      await runToExit(program, root, env);
      bareTimes.push(performance.now() - t);
      t = performance.now();
      await boxedRun(i, persona);
      boxedTimes.push(performance.now() - t);
      t = performance.now();
      await boxedRun(i, listed);
      listedTimes.push(performance.now() - t);
    }
    const bare = summarize(bareTimes);
    const boxed: Summary = summarize(boxedTimes);
    const withList: Summary = summarize(listedTimes);
    const addedMs = boxed.median - bare.median;
    const within = addedMs < SANDBOX_BUDGET_MS;
    const text = [
      row('turn start, no sandbox (node -e 0)', bare),
      row('turn start in the sandbox (policy, socket, bwrap)', boxed, bare),
      row('the same with a host list (proxy, bridge)', withList, bare),
      `  the sandbox adds ${ms(addedMs)} per turn (median); budget ${SANDBOX_BUDGET_MS} ms: ${within ? 'met' : 'MISSED'}`,
      `  a host list adds ${ms(withList.median - boxed.median)} more (median): the proxy and the bridge, only for turns that declare one`,
    ].join('\n');
    return { text, addedMs, within };
  } finally {
    rmSync(sessions, { recursive: true, force: true });
  }
}

/** Alone (`npm run bench:sandbox`): a scratch workspace, the rows above, exit 1 when the budget is missed. */
async function alone(): Promise<void> {
  const base = mkdtempSync(join(tmpdir(), 'nexus-bench-sandbox-'));
  try {
    const root = join(base, 'repo');
    const home = join(base, 'home');
    mkdirSync(root);
    execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: root });
    writeFileSync(join(root, 'README.md'), 'bench\n');
    await initWorkspace(root, { name: 'bench', home });
    const r = await sandboxBench(root, { ...process.env, NEXUS_HOME: home }, Number(process.env['BENCH_SANDBOX_N'] ?? 30));
    console.log(r.text);
    if (!r.within) process.exitCode = 1;
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await alone();
