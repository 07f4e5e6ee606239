// Runs in every test worker before each file. A worker opens relay stores and workspace stores in any
// order, and PGlite's module is compiled once per process: were a relay store first (sync.test.ts
// leads the run), the whole worker would run on V8's tiered code, which the relay keeps on purpose
// and which costs a short-lived user of a store ~1.5 s of CPU. Workers are such users, as direct
// commands are, so they take baseline code from the start.
import { useBaselineWasm } from '../../infra/index.js';

useBaselineWasm();
