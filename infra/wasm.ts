// PGlite is PostgreSQL compiled to one large WebAssembly module. Under V8's default tiering a process
// that opens a store compiles it with the baseline compiler and then again, function by function, with
// the optimising one on background threads: on a 2-core machine that is ~1.5 s of CPU per process
// (measured: open, 200 queries, close took 2.4 s of CPU with tiering and 0.95 s without, and those
// queries ran no slower). A direct command, a sidecar settling its turn and the test workers open a
// store and do little in it, so they keep the baseline code. A node and the relay run for hours and
// may take in a backlog, where the optimised code is 20-25% faster: they ask for `longLived`.
//
// NEXUS_WASM_TIERING overrides the choice: `on` keeps V8's default in every process, `off` keeps the
// baseline code in every process (the test suite's setting: its nodes and relays live for seconds).
import { setFlagsFromString } from 'node:v8';
import { NexusError } from '../protocol/errors.js';

export const WASM_TIERING_VARIABLE = 'NEXUS_WASM_TIERING';

let applied = false;

/** The setting in force: null when unset; a coded error for any value but `on` or `off`. */
export function wasmTieringSetting(env: NodeJS.ProcessEnv = process.env): 'on' | 'off' | null {
  const value = env[WASM_TIERING_VARIABLE];
  if (value === undefined || value === '') return null;
  if (value === 'on' || value === 'off') return value;
  throw new NexusError('USAGE', `${WASM_TIERING_VARIABLE} must be "on" or "off", not ${JSON.stringify(value)}`);
}

/**
 * Picks V8's WebAssembly tier for this process; call before the first PGlite.create in it (the module
 * is compiled once per process, so the first call decides). `longLived`: a node or a relay.
 */
export function chooseWasmTier(longLived: boolean): void {
  // Read at each call, so a bad value is refused wherever a store opens, not only in the first.
  const setting = wasmTieringSetting();
  if (applied) return;
  applied = true;
  if (setting === 'on' || (longLived && setting !== 'off')) return;
  setFlagsFromString('--liftoff-only');
}
