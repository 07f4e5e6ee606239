// The architecture map, the decisions and the performance page name files and folders; a map that names a
// path the code no longer has misleads its reader, so every path they name must exist.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DOCS = ['docs/ARCHITECTURE.md', 'docs/PERFORMANCE.md', ...readdirSync(join(ROOT, 'docs/decisions')).map((f) => `docs/decisions/${f}`)];
/** Where a path written short (`host/direct.ts`, `store/`) may start. */
const BASES = ['', 'node-agent/', 'node-agent/capabilities/', 'node-agent/adapters/', 'node-agent/host/', 'migrations/'];
/** Paths that are made at run time or name something other than a file of the repository. */
const NOT_IN_REPO = /^(\/|dist\/|\.nxs|NEXUS_HOME|refs\/|nexus\/)|[<>*:= ]/;

function sourceFiles(dir: string, out: Set<string>): Set<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.')) continue;
    if (entry.isDirectory()) sourceFiles(join(dir, entry.name), out);
    else out.add(entry.name);
  }
  return out;
}
const NAMES = sourceFiles(ROOT, new Set());

/** The paths a doc names: its links, and the code spans that look like a file or a folder. */
function named(doc: string): Array<{ path: string; from: string }> {
  const text = readFileSync(join(ROOT, doc), 'utf8');
  const found: Array<{ path: string; from: string }> = [];
  for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
    if (!/^[a-z]+:/.test(m[1]!)) found.push({ path: join(dirname(doc), m[1]!), from: 'link' });
  }
  for (const m of text.matchAll(/`([^`\n]+)`/g)) {
    const span = m[1]!;
    if (NOT_IN_REPO.test(span)) continue;
    if (span.includes('/') || /\.(ts|md|sql)$/.test(span)) found.push({ path: span, from: 'code' });
  }
  return found;
}

function exists(path: string, from: string): boolean {
  if (from === 'link') return existsSync(join(ROOT, path));
  const bare = path.replace(/\/$/, '');
  if (!path.includes('/')) return NAMES.has(bare);
  return BASES.some((base) => existsSync(join(ROOT, base, bare)));
}

describe('the docs that map the code', () => {
  it.each(DOCS)('%s names only paths that exist', (doc) => {
    const missing = named(doc)
      .filter(({ path, from }) => !exists(path, from))
      .map(({ path }) => path);
    expect(missing).toEqual([]);
  });

  it('reads the paths it checks: a name that does not exist is caught', () => {
    expect(exists('node-agent/kernel/log.ts', 'code')).toBe(true);
    expect(exists('kernel/no-such-file.ts', 'code')).toBe(false);
    expect(exists(basename('no-such-file.ts'), 'code')).toBe(false);
  });
});
