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

/** A live process as /proc tells it: its parent, its state letter, the kernel function it sleeps in, its command. */
export type ProcessSeen = { pid: number; ppid: number; state: string; wchan: string; command: string };

/** `pid` as /proc tells it; null when it is gone or a zombie. */
export function processSeen(pid: number): ProcessSeen | null {
  const stat = read(`/proc/${pid}/stat`);
  if (stat === null) return null;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const state = fields[0] ?? '?';
  if (state === 'Z' || state === 'X') return null;
  // wchan is 0 for a process on the CPU, and empty where the kernel will not say.
  const raw = read(`/proc/${pid}/wchan`)?.trim() ?? '';
  const wchan = raw === '0' ? 'on-cpu' : raw || '-';
  const command = (read(`/proc/${pid}/cmdline`) ?? '').split('\0').filter(Boolean).join(' ');
  return { pid, ppid: Number(fields[1]), state, wchan, command };
}

/** Every live process on the machine (none where there is no /proc). */
export function liveProcesses(): ProcessSeen[] {
  if (!existsSync('/proc/self/environ')) return [];
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map((n) => processSeen(Number(n)))
    .filter((p): p is ProcessSeen => p !== null);
}

/** Whether `pid` carries `run`'s mark in its environment. */
export function carriesMark(pid: number, run: string): boolean {
  return (read(`/proc/${pid}/environ`) ?? '').split('\0').includes(`${TEST_RUN_VARIABLE}=${run}`);
}

/** The pids of this process and its ancestors: the test runner itself carries the mark too. */
function lineage(): Set<number> {
  const out = new Set<number>();
  for (let pid = process.pid; pid > 1 && !out.has(pid); ) {
    out.add(pid);
    const seen = processSeen(pid);
    if (seen === null) break;
    pid = seen.ppid;
  }
  return out;
}

/**
 * Live processes (zombies excluded) carrying `run`'s mark, other than the runner and its workers.
 * Linux only (/proc); elsewhere none are found.
 */
export function leftoverProcesses(run: string): Leftover[] {
  const mine = lineage();
  return liveProcesses()
    // vitest's own workers are forks of the runner and carry the mark; they end with it.
    .filter((p) => !mine.has(p.pid) && !/[/\\]vitest[/\\]/.test(p.command) && carriesMark(p.pid, run))
    .map(({ pid, command }) => ({ pid, command }));
}

function alive(pid: number): boolean {
  return processSeen(pid) !== null;
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
