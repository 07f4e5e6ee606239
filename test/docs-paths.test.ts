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

describe('the maps stay maps', () => {
  const perf = readFileSync(join(ROOT, 'docs/PERFORMANCE.md'), 'utf8');
  /** The rows of the first table under the page's first section. */
  const rows = () => {
    const section = perf.slice(perf.indexOf('\n## '));
    const table = section.slice(section.indexOf('\n|') + 1).split('\n\n')[0]!;
    return table.split('\n').slice(2).map((line) => line.split('|').slice(1, -1).map((c) => c.trim()));
  };

  it('PERFORMANCE.md opens with one table that gives every target of every bench and lane a figure and a verdict', () => {
    expect(perf.match(/^## .*/m)?.[0]).toBe('## Where each row stands');
    const table = rows();
    const scripts = Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts);
    // The benches that judge a target; bench:verify and bench:stamps have none and keep tables of their own.
    const judged = scripts.filter((s) => /^bench(:|$)/.test(s) && s !== 'bench:verify' && s !== 'bench:stamps');
    for (const name of [...judged.map((s) => `\`${s}\``), '`npm test`', '`npm run test:fast`']) {
      expect(table.some((r) => r[0] === name), `a row of ${name}`).toBe(true);
    }
    // The two without targets keep a table each, read row against row.
    expect(perf).toContain('| `bench:verify` row');
    expect(perf).toContain('| `bench:stamps` row');
    for (const r of table) {
      expect(r, 'a row has five cells').toHaveLength(5);
      expect(r[3], `${r[1]}: a figure`).not.toMatch(/^$|not yet measured/);
      expect(['met', 'within noise', 'MISSED', '-'], `${r[1]}: a verdict`).toContain(r[4]);
    }
  });

  it('PERFORMANCE.md holds the latest figures, not the history of runs, and ARCHITECTURE.md stays a map', () => {
    expect(perf.split('\n').length).toBeLessThan(300);
    expect(readFileSync(join(ROOT, 'docs/ARCHITECTURE.md'), 'utf8').split('\n').length).toBeLessThan(400);
  });
});
