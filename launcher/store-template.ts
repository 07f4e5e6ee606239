// A build step (`npm run build`, so `npm install` too): ships the empty databases every store and
// relay starts from inside the package, so that no user's first `nxs init` or `nxs relay serve` waits
// for PGlite's initdb: dist/store-template-<schema> (a migrated workspace store) and
// dist/relay-template-<version> (an empty relay database). Their files are writable by their owner
// alone (a template anybody could change would be copied into every store); one left otherwise by an
// older build is made again.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { removeOtherTemplates } from '../infra/index.js';
import { makeTemplate, packagedTemplateDir, templateProblem } from '../node-agent/adapters/store/index.js';
import { makeRelayTemplate, packagedRelayTemplateDir } from '../server/index.js';

/** Makes the template at `dir` with `make` when it is missing or fails its check, saying so. */
async function ensure(what: string, dir: string, make: () => Promise<string>): Promise<void> {
  if (existsSync(join(dir, 'PG_VERSION')) && templateProblem(dir, { shared: true }) === null) return;
  process.stderr.write(`preparing the ${what} template shipped in dist/ (once per change: PGlite creates a database)...\n`);
  const started = Date.now();
  await make();
  process.stderr.write(`${what} template ready in ${Math.round((Date.now() - started) / 1000)} s: ${dir}\n`);
}

const store = packagedTemplateDir();
const relay = packagedRelayTemplateDir();
removeOtherTemplates(store);
removeOtherTemplates(relay);
await ensure('store', store, () => makeTemplate(store, { shared: true }));
await ensure('relay', relay, () => makeRelayTemplate(relay));
