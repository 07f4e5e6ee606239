// PGlite is PostgreSQL compiled to one large WebAssembly module. Under V8's default tiering a process
// that opens a store compiles it with the baseline compiler and then again, function by function, with
// the optimising one on background threads: on a 2-core machine that is ~1.5 s of CPU per process
// (measured: open, 200 queries, close took 2.4 s of CPU with tiering and 0.95 s without, and the
// queries ran no slower). Nodes, direct commands and sidecars open workspace stores and do little in
// them, so they keep the baseline code. The relay does not call this: it ingests in bulk for hours,
// and there the optimised code was ~10% faster. NEXUS_WASM_TIERING=on restores V8's default here too.
import { setFlagsFromString } from 'node:v8';

let applied = false;

/** Keeps V8 on its baseline WebAssembly compiler; call before the first PGlite.create in the process. */
export function useBaselineWasm(): void {
  if (applied) return;
  applied = true;
  if (process.env['NEXUS_WASM_TIERING'] === 'on') return;
  setFlagsFromString('--liftoff-only');
}
