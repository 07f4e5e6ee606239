// Runs once around the suite. Before: builds dist/ as `npm run build` does (sessions run the built CLI;
// the migrated store template is shipped there), makes one NEXUS_HOME, and marks this run in the environment every process it starts
// inherits. After: every process still carrying the mark (a node, a relay, a sidecar, an agent) was
// leaked by some test: it is killed, listed, and the run fails.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { leftoverProcesses, stopProcesses, TEST_RUN_OWNER_VARIABLE, TEST_RUN_VARIABLE } from './leftovers.js';
import { WASM_TIERING_VARIABLE } from '../../infra/wasm.js';
import { STORE_CACHE_VARIABLE } from '../../infra/pglite-wasm.js';

const REPO = resolve(import.meta.dirname, '..', '..');

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // A build newer than every file it reads is kept (a clean install builds, and so did the last run):
  // tsc's own incremental check reads every source and took ~5 s before any test could start.
  const built = builtAt();
  if (built === null) {
    const started = new Date();
    // tsc through node itself: no npx, so nothing here depends on the user's npm cache or HOME.
    execFileSync(process.execPath, [join(REPO, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: REPO, stdio: 'inherit' });
    // tsc leaves its record alone when nothing it compiles changed (a file touched, a branch switched
    // back): dated to this build's start, it says dist/ holds every source as it was then.
    utimesSync(join(REPO, 'dist', '.tsbuildinfo'), started, started);
  }
  // The rest of `npm run build`: the store template shipped in dist/, which every test workspace copies
  // (made again only when the schema changed).
  execFileSync(process.execPath, [join(REPO, 'dist', 'launcher', 'store-template.js')], { cwd: REPO, stdio: 'inherit' });
  // And its last step: the commands' bundles, which bin/ starts.
  if (built === null || !newerThan(join(REPO, 'dist', 'bin', 'nxc.js'), built)) {
    execFileSync(process.execPath, [join(REPO, 'dist', 'launcher', 'bundle.js')], { cwd: REPO, stdio: 'inherit' });
  }
  const run = `${process.pid}-${randomBytes(4).toString('hex')}`;
  // Scratch space in memory where the machine has it: every case copies a 25 MB store template and
  // removes it again, which costs ~600 ms on this kind of virtual disk and ~50 ms on tmpfs. Workers,
  // and everything they start, inherit TMPDIR; what the product writes is the same either way.
  const scratch = memoryScratch();
  // A case that needs its folders on disk (a sandbox that hides /dev/shm) finds the disk's temp folder here.
  process.env['NEXUS_TEST_DISK_TMPDIR'] = tmpdir();
  if (scratch !== null) process.env['TMPDIR'] = scratch;
  // An extra CA bundle is parsed by every Node process at start: ~90 ms of CPU each with the system's
  // whole bundle (measured 130 ms against 42 ms for `node -e 0`), and the suite starts many of them
  // (nodes, CLI calls, agents, sidecars). Nothing here speaks TLS to the outside world: every provider
  // and relay it talks to is a loopback server, so the run goes without it.
  delete process.env['NODE_EXTRA_CA_CERTS'];
  // The nodes and relays a case starts live for seconds, not hours: V8's optimising WebAssembly tier,
  // which they keep in production, would cost each ~1.5 s of CPU compiling PGlite on background threads.
  // What they do is the same on either tier. A run with NEXUS_WASM_TIERING=on keeps the default.
  process.env[WASM_TIERING_VARIABLE] ??= 'off';
  // PostgreSQL zeroes a store's buffer cache at every open, about 5 ms of CPU per MB here, and the suite
  // opens stores by the hundred, each holding a few hundred kilobytes of data: 4 MB instead of the 16 MB a
  // user's store gets saves ~40 ms of CPU per open. What a store does is the same at either size.
  process.env[STORE_CACHE_VARIABLE] ??= '4MB';
  // Workers are forked after this, so they and everything they start carry the mark.
  process.env[TEST_RUN_VARIABLE] = run;
  process.env[TEST_RUN_OWNER_VARIABLE] = String(process.pid);
  // One NEXUS_HOME for the whole run (workspaces that need a node of their own get a private one).
  const home = mkdtempSync(join(tmpdir(), 'nexus-test-home-'));
  project.provide('nexusHome', home);

  return async () => {
    const left = leftoverProcesses(run);
    if (left.length > 0) await stopProcesses(left.map((p) => p.pid));
    rmSync(home, { recursive: true, force: true });
    if (scratch !== null) rmSync(scratch, { recursive: true, force: true });
    if (left.length === 0) return;
    const list = left.map((p) => `  pid ${p.pid}: ${p.command}`).join('\n');
    process.stderr.write(`\n!!! the suite left ${left.length} process(es) running; they were killed now:\n${list}\n\n`);
    // vitest reports an error thrown here but keeps its exit code: set it, so CI fails.
    process.exitCode = 1;
    throw new Error(`the suite leaked ${left.length} process(es): every test must stop what it starts (see the list above)`);
  };
}

/** What `npm run build` compiles (tsconfig.build.json's own include list), and the settings it compiles with. */
function buildInputs(): string[] {
  const { include } = JSON.parse(readFileSync(join(REPO, 'tsconfig.build.json'), 'utf8')) as { include: string[] };
  return [...new Set(include), 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'];
}

/** When dist/ was last compiled, if that is later than every change to what it is compiled from; else null. */
function builtAt(): number | null {
  let built: number;
  try {
    built = statSync(join(REPO, 'dist', '.tsbuildinfo')).mtimeMs;
  } catch {
    return null;
  }
  const changed = (path: string): boolean => {
    const st = statSync(path, { throwIfNoEntry: false });
    if (st === undefined) return false;
    if (st.mtimeMs >= built) return true;
    // A folder's own time moves when an entry is added, removed or renamed in it.
    return st.isDirectory() && readdirSync(path).some((name) => changed(join(path, name)));
  };
  return buildInputs().some((p) => changed(join(REPO, p))) ? null : built;
}

function newerThan(path: string, when: number): boolean {
  const st = statSync(path, { throwIfNoEntry: false });
  return st !== undefined && st.mtimeMs >= when;
}

/** A private folder on a tmpfs with room to spare (NEXUS_TEST_TMPDIR=disk keeps the default), or null. */
function memoryScratch(): string | null {
  if (process.env['NEXUS_TEST_TMPDIR'] === 'disk') return null;
  const base = '/dev/shm';
  try {
    const fs = statfsSync(base);
    // tmpfs's magic number; and room for a few hundred stores at once, with some to spare.
    if (fs.type !== 0x01021994 || fs.bavail * fs.bsize < 4 * 1024 ** 3) return null;
    return mkdtempSync(join(base, 'nexus-test-'));
  } catch {
    return null;
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    nexusHome: string;
  }
}
