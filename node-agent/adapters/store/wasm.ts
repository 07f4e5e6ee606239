// PGlite is PostgreSQL compiled to one large WebAssembly module. Under V8's default tiering a process
// that opens a store compiles it with the baseline compiler and then again, function by function, with
// the optimising one on background threads: on a 2-core machine that is ~1.5 s of CPU per process
// (measured: open, 200 queries, close took 2.4 s of CPU with tiering and 0.95 s without, and those
// queries ran no slower). A direct command, a sidecar settling its turn and the test workers open a
// store and do little in it, so they keep the baseline code. A node (openStore's `tiering`) and the
// relay run for hours and may take in a backlog, where the optimised code is 20-25% faster.
// NEXUS_WASM_TIERING=on restores V8's default everywhere.
import { setFlagsFromString } from 'node:v8';

let applied = false;

/** Keeps V8 on its baseline WebAssembly compiler; call before the first PGlite.create in the process. */
export function useBaselineWasm(): void {
  if (applied) return;
  applied = true;
  if (process.env['NEXUS_WASM_TIERING'] === 'on') return;
  setFlagsFromString('--liftoff-only');
}
