// Finds the processes a test run started and left behind. Every process the suite starts inherits
// NEXUS_TEST_RUN=<run id> from the vitest process (nodes pass their environment on to sidecars, and
// sidecars to agents), so the mark finds them however they were started, and never touches a
// process of another run or of anybody else on the machine.
import { existsSync, readdirSync, readFileSync } from 'node:fs';

export const TEST_RUN_VARIABLE = 'NEXUS_TEST_RUN';
/** The pid of the vitest process that set the mark: a nested run (a test that runs vitest) inherits the mark but not this. */
export const TEST_RUN_OWNER_VARIABLE = 'NEXUS_TEST_RUN_OWNER';

export type Leftover = { pid: number; command: string };

function read(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null; // gone meanwhile, or not ours to read
  }
}

/** The pids of this process and its ancestors: the test runner itself carries the mark too. */
function lineage(): Set<number> {
  const out = new Set<number>();
  for (let pid = process.pid; pid > 1 && !out.has(pid); ) {
    out.add(pid);
    const stat = read(`/proc/${pid}/stat`);
    if (stat === null) break;
    pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  }
  return out;
}

/**
 * Live processes (zombies excluded) carrying `run`'s mark, other than the runner and its workers.
 * Linux only (/proc); elsewhere none are found.
 */
export function leftoverProcesses(run: string): Leftover[] {
  if (!existsSync('/proc/self/environ')) return [];
  const mark = `${TEST_RUN_VARIABLE}=${run}`;
  const mine = lineage();
  const out: Leftover[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (mine.has(pid)) continue;
    const environ = read(`/proc/${pid}/environ`);
    if (environ === null || !environ.split('\0').includes(mark)) continue;
    const stat = read(`/proc/${pid}/stat`);
    const state = stat?.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === undefined || state === 'Z' || state === 'X') continue;
    const command = (read(`/proc/${pid}/cmdline`) ?? '').split('\0').filter(Boolean).join(' ');
    // vitest's own workers are forks of the runner and carry the mark; they end with it.
    if (/[/\\]vitest[/\\]/.test(command)) continue;
    out.push({ pid, command });
  }
  return out;
}

function alive(pid: number): boolean {
  const stat = read(`/proc/${pid}/stat`);
  if (stat === null) return false;
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state !== 'Z' && state !== 'X';
}

/** SIGTERM, then SIGKILL whatever still runs a few seconds later. */
export async function stopProcesses(pids: readonly number[], graceMs = 3_000): Promise<void> {
  const signal = (pid: number, sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
    } catch {
      /* already gone */
    }
  };
  for (const pid of pids) signal(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (const pid of pids.filter(alive)) signal(pid, 'SIGKILL');
}
