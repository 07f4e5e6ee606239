// The import graph's one rule: no cycles, type-only imports included (a cycle of types still ties the
// files' changes together). `npm run lint` runs this through ESLint (eslint-house.js, rule
// house/no-cycle), which reports each file in a cycle and honours the baseline in eslint.config.js.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [{ name: 'no-cycle', severity: 'error', from: {}, to: { circular: true } }],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules|migrations|test/fixtures)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
