// A build step (`npm run build`, so `npm install` too): ships a migrated store template inside the
// package, dist/store-template-<schema>, so that no user's first `nxs init` waits for PGlite's initdb.
// Its files are writable by their owner alone (a template anybody could change would be copied into
// every store); one left otherwise by an older build is made again.
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { makeTemplate, packagedTemplateDir, templateProblem } from '../node-agent/adapters/store/index.js';

const dir = packagedTemplateDir();
// A template of an older schema is never used again.
for (const name of readdirSync(dirname(dir))) {
  if (/^store-template-[0-9a-f]+$/.test(name) && name !== basename(dir)) rmSync(join(dirname(dir), name), { recursive: true, force: true });
}
if (!existsSync(join(dir, 'PG_VERSION')) || templateProblem(dir, { shared: true }) !== null) {
  process.stderr.write('preparing the store template shipped in dist/ (once per schema change: PGlite creates and migrates a database)...\n');
  const started = Date.now();
  await makeTemplate(dir, { shared: true });
  process.stderr.write(`store template ready in ${Math.round((Date.now() - started) / 1000)} s: ${dir}\n`);
}
