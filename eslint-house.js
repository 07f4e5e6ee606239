// The house's import rules that a pattern on the import text cannot say: they need the importing
// file's folder, the imported file's resolved path, or the whole import graph (cycles, found by
// dependency-cruiser over the project, type-only imports included). An ESLint plugin used by
// eslint.config.js, so one baseline there exempts a file from any of them.
import { spawnSync } from 'node:child_process';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = import.meta.dirname;
const CAPABILITIES = ['node-agent', 'capabilities'];
const FS_MODULES = new Set(['fs', 'fs/promises', 'node:fs', 'node:fs/promises']);

/** The file's path from the repository's root, as folder names. */
function partsOf(file) {
  return relative(ROOT, file).split(sep);
}

/** The capability folder a path lies in (`node-agent/capabilities/<name>/...`), or null. */
function capabilityOf(parts) {
  const inside = parts.length > 3 && CAPABILITIES.every((p, i) => parts[i] === p);
  return inside ? parts[2] : null;
}

/** Calls `check(source, node)` for every module a file imports or re-exports, dynamic imports included. */
function eachImport(check) {
  const visit = (node) => {
    if (node.source != null && typeof node.source.value === 'string') check(node.source.value, node.source);
  };
  return { ImportDeclaration: visit, ExportNamedDeclaration: visit, ExportAllDeclaration: visit, ImportExpression: visit };
}

/** The resolved path of a relative import, as folder names from the root (extension as written). */
function targetOf(context, source) {
  if (!source.startsWith('.')) return null;
  return partsOf(resolve(dirname(context.filename), source));
}

/** The folders the import graph is drawn over (tsconfig.json's). */
const GRAPH_ROOTS = ['protocol', 'crypto', 'infra', 'node-agent', 'server', 'launcher', 'bench', 'test'];

/** @type {{ modules: Set<string>, cycles: Map<string, Array<{ to: string, cycle: string[] }>> } | null} */
let graph = null;

/**
 * The project's import cycles, by file: drawn once per lint run (dependency-cruiser over the whole
 * project takes a few seconds) and again only when a file being linted was not in the graph.
 */
function cyclesOf(file) {
  const name = relative(ROOT, file).split(sep).join('/');
  if (graph === null || !graph.modules.has(name)) graph = drawGraph();
  return graph.cycles.get(name) ?? [];
}

function drawGraph() {
  const bin = join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
  const run = spawnSync(process.execPath, [bin, '--config', '.dependency-cruiser.cjs', '--output-type', 'json', ...GRAPH_ROOTS], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  let out;
  try {
    out = JSON.parse(run.stdout);
  } catch {
    throw new Error(`dependency-cruiser gave no graph (exit ${run.status}): ${run.stderr}`);
  }
  const cycles = new Map();
  // dependency-cruiser names one edge of each cycle; every file on it is told, at its own edge.
  for (const v of out.summary.violations) {
    if (v.type !== 'cycle') continue;
    const ring = v.cycle.map((c) => c.name); // ends with v.from
    ring.forEach((file, i) => {
      const to = ring[(i + 1) % ring.length];
      const list = cycles.get(file) ?? [];
      if (list.some((c) => c.to === to)) return;
      list.push({ to, cycle: [...ring.slice(i), ...ring.slice(0, i + 1)] });
      cycles.set(file, list);
    });
  }
  return { modules: new Set(out.modules.map((m) => m.source)), cycles };
}

/** The project path a relative import names, written as dependency-cruiser writes it (`.js` read as the `.ts` it compiles from). */
function graphName(context, source) {
  const parts = targetOf(context, source);
  return parts === null ? null : parts.join('/').replace(/\.js$/, '.ts');
}

const rule = (description, create) => ({ meta: { type: 'problem', docs: { description }, schema: [] }, create });

export const house = {
  meta: { name: 'house' },
  rules: {
    // No import cycles, type-only ones included: each import that closes one is reported with the cycle.
    'no-cycle': rule('no import cycles', (context) => {
      const cycles = cyclesOf(context.filename);
      if (cycles.length === 0) return {};
      const left = new Map(cycles.map((c) => [c.to, c.cycle]));
      const say = (cycle) => `import cycle: ${cycle.join(' -> ')}`;
      return {
        ...eachImport((source, node) => {
          const to = graphName(context, source);
          const cycle = to === null ? undefined : left.get(to) ?? left.get(to.replace(/\.ts$/, '/index.ts'));
          if (cycle === undefined) return;
          left.delete(cycle[1]);
          context.report({ node, message: say(cycle) });
        }),
        'Program:exit'(node) {
          for (const cycle of left.values()) context.report({ node, loc: { line: 1, column: 0 }, message: say(cycle) });
        },
      };
    }),
    // A capability folder is reached from another only through its index.ts: what is not exported there is private.
    'capability-door': rule('imports between capability folders go through the folder index', (context) => {
      const from = capabilityOf(partsOf(context.filename));
      if (from === null) return {};
      return eachImport((source, node) => {
        const to = targetOf(context, source);
        if (to === null) return;
        const target = capabilityOf(to);
        if (target === null || target === from) return;
        const door = to.length === 4 && /^index\.[jt]s$/.test(to[3]);
        if (!door) context.report({ node, message: `${source}: another capability's inner file; import ${target}/index.js, and export what is needed there` });
      });
    }),
    // Adapters wrap the outside world for the capabilities; an arrow from an adapter to a capability runs back up.
    'adapters-below-capabilities': rule('adapters never import a capability', (context) => {
      const parts = partsOf(context.filename);
      if (parts[0] !== 'node-agent' || parts[1] !== 'adapters') return {};
      return eachImport((source, node) => {
        const to = targetOf(context, source);
        if (to !== null && to[0] === 'node-agent' && to[1] === 'capabilities') {
          context.report({ node, message: `${source}: adapters never import capabilities/ (move the shared piece down to the kernel, protocol/ or the adapter)` });
        }
      });
    }),
    // Capabilities decide; files are read and written behind adapters/ and infra/ (one atomic write, one lock).
    'no-fs-in-capabilities': rule('capabilities never import node:fs', (context) => {
      if (capabilityOf(partsOf(context.filename)) === null && !isCapabilityRootFile(context.filename)) return {};
      return eachImport((source, node) => {
        if (FS_MODULES.has(source)) context.report({ node, message: `${source}: file I/O lives behind adapters/ or infra/, not in capabilities/` });
      });
    }),
  },
};

/** capabilities/index.ts and its siblings belong to no one capability but are capability code all the same. */
function isCapabilityRootFile(file) {
  const parts = partsOf(file);
  return parts.length === 3 && CAPABILITIES.every((p, i) => parts[i] === p);
}
