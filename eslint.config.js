// Lint: the TypeScript rules that catch real bugs (promises nobody awaits), and the layering the
// architecture rests on, written as import restrictions so a wrong arrow fails CI, and no import cycles
// (the house/* rules: eslint-house.js).
import tseslint from 'typescript-eslint';
import { house } from './eslint-house.js';

/** Packages whose own paths hold a `server/` folder (an SDK's server half): not our server/. */
const PACKAGES_WITH_SERVER = ['!@modelcontextprotocol/sdk/**', '!@a2a-js/sdk/**'];

/** An import-restriction rule: no module matching `groups` may be imported from these files. */
const forbid = (groups, message) => ({
  'no-restricted-imports': ['error', { patterns: groups.map((g) => ({ group: [g, ...PACKAGES_WITH_SERVER], message })) }],
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'migrations/**', 'test/fixtures/**', 'bin/**', 'deploy/**', '**/*.js', '**/*.mjs', 'drizzle.config.ts'] },
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser, parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { '@typescript-eslint': tseslint.plugin, house },
    rules: {
      // A cycle makes every file in it load, change and be tested with all the others.
      'house/no-cycle': 'error',
      'house/capability-door': 'error',
      'house/adapters-below-capabilities': 'error',
      // No file is exempt from a house rule: a break is fixed, not listed.
      'house/no-fs-in-capabilities': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-debugger': 'error',
      // A thread's code lives in a module of its own, linted and typed: never source text evaluated as a worker.
      'no-restricted-syntax': ['error', { selector: "NewExpression[callee.name='Worker'] Property[key.name='eval']", message: 'a worker runs a module file of its own (see crypto/verify-worker.ts), not evaluated source' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  // protocol/: the shared vocabulary. It imports nothing of ours but itself.
  { files: ['protocol/**/*.ts'], rules: forbid(['**/crypto/**', '**/infra/**', '**/node-agent/**', '**/server/**', '**/launcher/**', 'node:fs', 'node:child_process'], 'protocol/ is pure vocabulary: no I/O, no other layer') },
  // crypto/: pure keys, signatures and stamps on top of protocol/.
  { files: ['crypto/**/*.ts'], rules: forbid(['**/infra/**', '**/node-agent/**', '**/server/**', '**/launcher/**', 'node:fs', 'node:child_process'], 'crypto/ is pure: it depends on protocol/ only and touches no files') },
  // infra/: small runtime pieces shared by node and relay; above protocol/ only.
  { files: ['infra/**/*.ts'], rules: forbid(['**/crypto/**', '**/node-agent/**', '**/server/**', '**/launcher/**'], 'infra/ depends on protocol/ only') },
  // The relay and the node never import each other.
  { files: ['server/**/*.ts'], rules: forbid(['**/node-agent/**', '**/launcher/**'], 'server/ and node-agent/ never import each other (launcher/ composes them)') },
  { files: ['node-agent/**/*.ts'], rules: forbid(['**/server/**', '**/launcher/**'], 'node-agent/ and server/ never import each other (launcher/ composes them)') },
  // The engine (kernel and capabilities) never imports a host or the CLI: hosts call the engine.
  {
    files: ['node-agent/kernel/**/*.ts', 'node-agent/capabilities/**/*.ts'],
    rules: forbid(['**/host/**', '**/cli/**', '**/server/**', '**/launcher/**'], 'the engine never imports a host or the CLI'),
  },
  // The kernel knows no capability: capabilities register projections and handlers with it.
  {
    files: ['node-agent/kernel/**/*.ts'],
    rules: forbid(['**/capabilities/**', '**/host/**', '**/cli/**', '**/server/**', '**/launcher/**'], 'the kernel knows no capability, host or CLI'),
  },
  // Adapters wrap the outside world (store, git, files, processes); they do not reach up.
  {
    files: ['node-agent/adapters/**/*.ts'],
    rules: forbid(['**/host/**', '**/cli/**', '**/server/**', '**/launcher/**'], 'adapters never import a host or the CLI'),
  },
  // The node's composition root composes its parts and does nothing else: a part that grows inside it goes to a file of its own.
  { files: ['node-agent/host/node/daemon.ts'], rules: { 'max-lines-per-function': ['error', { max: 99, skipBlankLines: false, skipComments: false }] } },
);
