// The build's last step: the commands a person (or a session, on every turn) starts are bundled into a
// few files under dist/bin/. Node 20 has no compile cache, and its ESM loader resolves and reads each
// module on its own: `nxc --version` loaded 152 files (94 of them zod's), and the CLI spent more time
// loading than a bare `node -e 0` takes to start. The bundles share their chunks; what only one path
// needs (the store and PGlite, opened only when no node serves the workspace) stays a chunk of its own,
// loaded when that path is taken. PGlite is left outside: it loads its WebAssembly and data files from
// its own folder.
import { build, type Plugin } from 'esbuild';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../infra/package.js';
import { handoverPaths } from '../protocol/commands.js';

/** The entry points, by the name their bundle gets in dist/bin/. */
const ENTRIES: Record<string, string> = {
  // The whole nxc CLI; `nxc` itself starts from the thin first module bundled on its own below.
  'nxc-cli': 'dist/node-agent/cli/nxc.js',
  nxs: 'dist/node-agent/cli/nxs.js',
  'relay-cli': 'dist/server/cli.js',
  infra: 'dist/infra/index.js',
  sidecar: 'dist/node-agent/cli/sidecar.js',
  // Worker threads, started by file from beside the chunks that start them (crypto/opsig.ts,
  // server/storage/pglite-thread.ts, node-agent/capabilities/runtime/tools/grep.ts).
  'verify-worker': 'dist/crypto/verify-worker.js',
  'pglite-worker': 'dist/server/storage/pglite-worker.js',
  'grep-worker': 'dist/node-agent/capabilities/runtime/tools/grep-worker.js',
};

/**
 * zod's `z` namespace re-exports every locale it ships (about forty), so a bundle that imports `z` held
 * and evaluated all of them: half of zod's bundled size. Nexus words its own errors and zod only ever
 * speaks English here (its default), so the bundles get a locale index holding `en` alone. Importing the
 * protocol's schemas went from ~42 to ~37 ms (bundled, quiet machine).
 */
const englishOnlyZod: Plugin = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /\/locales\/index\.js$/ }, (args) => (args.importer.includes('/zod/') ? { path: 'zod-locales-en', namespace: 'nexus-zod-locales' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'nexus-zod-locales' }, () => ({ contents: "export { default as en } from 'zod/v4/locales/en.js';", resolveDir: root }));
  },
};

/** The first module's `import('./nxc.js')`: the full CLI's bundle, `nxc-cli.js` beside it, left to load at run time. */
const fullCliBeside: Plugin = {
  name: 'full-cli-beside',
  setup(b) {
    b.onResolve({ filter: /^\.\/nxc\.js$/ }, (args) => (args.importer.endsWith(join('cli', 'entry.js')) ? { path: './nxc-cli.js', external: true } : undefined));
  },
};

/**
 * nxc's first module reads which verbs a node may run from the command list, which loads zod: in its bundle
 * that module is the list's answer as a constant, computed here from the same list (test/bundle.test.ts
 * checks the two agree).
 */
const handoverVerbsInline: Plugin = {
  name: 'handover-verbs-inline',
  setup(b) {
    b.onLoad({ filter: /[\\/]cli[\\/]handover-verbs\.js$/ }, () => ({
      contents: `export const HANDOVER_PATHS = ${JSON.stringify(handoverPaths())};\n`,
      loader: 'js',
    }));
  },
};

const root = packageRoot();
const outdir = join(root, 'dist', 'bin');
{
  rmSync(outdir, { recursive: true, force: true });
  await build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, file]) => [name, join(root, file)])),
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outdir,
    external: ['@electric-sql/pglite', '@electric-sql/pglite/*'],
    // Bundled CommonJS dependencies call require(); an ES module has none of its own.
    banner: { js: "import { createRequire as __nexusRequire } from 'node:module'; const require = __nexusRequire(import.meta.url);" },
    plugins: [englishOnlyZod],
    logLevel: 'warning',
  });
  // nxc's first module (node-agent/cli/entry.ts), in one file of its own: a command a node runs loads this
  // file and Node's own modules, nothing else. Shared chunks and the `require` banner would cost it more
  // than the code they hold (one ES module against five: ~11 ms of a 150 ms command, in hyperfine runs).
  // Its one dynamic import, the whole CLI for a verb that runs here, is the bundle above.
  await build({
    absWorkingDir: root,
    entryPoints: { nxc: join(root, 'dist', 'node-agent', 'cli', 'entry.js') },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outdir,
    plugins: [fullCliBeside, handoverVerbsInline],
    logLevel: 'warning',
  });
}
