// The commands the README and the reference pages show must be commands the CLI knows: every `nxc` and
// `nxs` line of their code blocks (and every inline code span that is a command) names a verb of the
// verb tables, and every --flag it gives is one of that verb's flags. A renamed verb or flag fails here,
// not in a reader's terminal. The same file checks the other things the pages cite: every error code is
// in the code table, and every test a page names as its proof exists under that title.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../protocol/errors.js';
import { findVerb, type Program } from '../node-agent/cli/spec.js';
import { NXC } from '../node-agent/cli/nxc.js';
import { NXS } from '../node-agent/cli/nxs.js';
import { SERVE_OPTIONS, STREAM_OPTIONS, STREAM_VERBS } from '../server/cli.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

type Shown = { page: string; text: string };

/** The commands a page shows: each `nxc`/`nxs` command of its code blocks, and inline code spans that are one. */
export function commandsIn(page: string, markdown: string): Shown[] {
  const found: Shown[] = [];
  const blocks = [...markdown.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```/gm, '');
  const lines = [...blocks.flatMap((b) => b.split('\n')), ...[...prose.matchAll(/`((?:nxc|nxs) [^`\n]+)`/g)].map((m) => m[1]!)];
  for (const line of lines) {
    // A placeholder may hold a `|` of its own (`<invite | file>`): it is one word, whatever is inside.
    const bare = line.replace(/(^|\s)#.*$/, '').replace(/<[^>]*>/g, '<x>');
    for (let part of bare.split(/&&|\|\||;|(?<![[\w-])\|(?![\w-]*\])/)) {
      part = part.trim().replace(/^\$\s+/, '').replace(/^([A-Z_]+=\S*\s+)+/, '');
      if (/^(nxc|nxs)\s/.test(part)) found.push({ page, text: part });
    }
  }
  return found;
}

/** The words before the first flag, placeholder, option group or quoted argument. */
function leadingWords(words: string[]): string[] {
  const out: string[] = [];
  for (const w of words.slice(1)) {
    if (!/^[a-z][a-z-]*$/.test(w)) break;
    out.push(w);
  }
  return out;
}

/** What is wrong with one shown command, or null when the CLI knows its verb and every flag. */
export function problemWith(text: string): string | null {
  const words = text.split(/\s+/).filter(Boolean);
  const flags = [...text.matchAll(/(?:^|[\s[|])--([a-z][a-z0-9-]*)/g)].map((m) => m[1]!);
  const program: Program = words[0] === 'nxc' ? NXC : NXS;
  const lead = leadingWords(words);
  if (program === NXS && lead[0] === 'relay') {
    const allowed = lead[1] === 'serve' ? Object.keys(SERVE_OPTIONS) : lead[1] === 'stream' ? Object.keys(STREAM_OPTIONS) : null;
    if (allowed === null) return `nxs relay ${lead[1] ?? ''}: no such relay command`;
    if (lead[1] === 'stream' && lead[2] !== undefined && !(STREAM_VERBS as readonly string[]).includes(lead[2])) return `nxs relay stream ${lead[2]}: no such stream command`;
    const unknown = flags.filter((f) => !allowed.includes(f));
    return unknown.length > 0 ? `${lead.join(' ')}: unknown flag(s) ${unknown.map((f) => `--${f}`).join(', ')}` : null;
  }
  // The longest prefix of the leading words that names a verb (the rest are its positionals).
  for (let n = lead.length; n >= 1; n -= 1) {
    const found = findVerb(program, lead.slice(0, n));
    if (found === null || found.verb.path.length !== n) continue;
    const known = new Set([...Object.keys(found.verb.flags ?? {}), 'json', 'help']);
    const unknown = flags.filter((f) => !known.has(f));
    return unknown.length > 0 ? `${program.name} ${found.verb.path.join(' ')}: unknown flag(s) ${unknown.map((f) => `--${f}`).join(', ')}` : null;
  }
  // `nxs completion` and `nxc --version` are answered before the verb table; `nxc help` too.
  if (lead.length === 0 || ['help', 'completion'].includes(lead[0]!)) return null;
  return `${program.name} ${lead.join(' ')}: no such verb`;
}

describe('the commands the docs show', () => {
  const shown = PAGES.flatMap((page) => commandsIn(page, readFileSync(join(ROOT, page), 'utf8')));

  it('are found: the README and the pages show commands of both programs', () => {
    expect(shown.filter((s) => s.text.startsWith('nxc ')).length).toBeGreaterThan(10);
    expect(shown.filter((s) => s.text.startsWith('nxs ')).length).toBeGreaterThan(20);
    expect(shown.some((s) => s.page === 'README.md')).toBe(true);
  });

  it('name verbs and flags the CLI knows', () => {
    const wrong = shown.map((s) => ({ ...s, problem: problemWith(s.text) })).filter((s) => s.problem !== null);
    expect(wrong.map((s) => `${s.page}: ${s.text} -> ${s.problem}`)).toEqual([]);
  });

  it('would catch a renamed flag or verb, a wrong relay flag, and a placeholder holding a pipe', () => {
    expect(problemWith('nxs sync bind http://r:7420 --stream team --token-file t')).toBeNull();
    expect(problemWith('nxs sync bind http://r:7420 --stream team --tokenfile t')).toMatch(/--tokenfile/);
    expect(problemWith('nxs sync trust add <id> --keys K')).toMatch(/--keys/);
    expect(problemWith('nxc threads shw t-1')).toMatch(/no such verb/);
    expect(problemWith('nxs relay serve --host 0.0.0.0 --prot 7420')).toMatch(/--prot/);
    expect(problemWith('nxs relay stream create team --relay http://r:7420')).toBeNull();
    expect(commandsIn('x', '```sh\nnxs sync trust add <invite | file | -> [--name ALIAS] | nxc status\n```').map((s) => s.text)).toEqual(['nxs sync trust add <x> [--name ALIAS]', 'nxc status']);
  });
});

describe('what the pages cite', () => {
  it('the code table of docs/commands.md has every error code', () => {
    const page = readFileSync(join(ROOT, 'docs/commands.md'), 'utf8');
    const table = page.slice(page.indexOf('## Errors'));
    const missing = ERROR_CODES.filter((c) => !table.includes(`\`${c}\``) && !(c.startsWith('STAMP_') && table.includes('`STAMP_*`')));
    expect(missing).toEqual([]);
  });

  it('every test a page names as its proof exists, under that title', () => {
    const gone: string[] = [];
    for (const page of PAGES) {
      for (const m of readFileSync(join(ROOT, page), 'utf8').matchAll(/`(test\/[^`]+\.test\.ts)`\s*›\s*((?:"[^"]*"(?:;\s*)?)+)/g)) {
        const file = join(ROOT, m[1]!);
        if (!existsSync(file)) {
          gone.push(`${page}: ${m[1]} does not exist`);
          continue;
        }
        const source = readFileSync(file, 'utf8').replace(/\\'/g, "'");
        for (const t of m[2]!.matchAll(/"([^"]*)"/g)) if (!source.includes(t[1]!)) gone.push(`${page}: ${m[1]} › "${t[1]}"`);
      }
    }
    expect(gone).toEqual([]);
  });
});
