// The house's import rules as `npm run lint` applies them: small files written into the project's own
// layout (a capability folder, an adapter, infra/) and linted with the project's eslint.config.js.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ESLint } from 'eslint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '..', '..');

// Unique per run, so two runs (or a leftover of a killed one) never share folders.
const tag = `lintfx${process.pid}${Date.now().toString(36)}`;
const capA = `node-agent/capabilities/${tag}a`;
const capB = `node-agent/capabilities/${tag}b`;
const adapter = `node-agent/adapters/${tag}`;
const infra = `infra/${tag}`;

const FILES: Record<string, string> = {
  // capability b: a door and an inner file
  [`${capB}/index.ts`]: `export { inner } from './inner.js';\n`,
  [`${capB}/inner.ts`]: `export const inner = 1;\n`,
  // capability a: through b's door (allowed), its own inner file (allowed), b's inner file (refused), node:fs and fs (refused)
  [`${capA}/door.ts`]: `import { inner } from '../${tag}b/index.js';\nimport { own } from './own.js';\nexport const viaDoor = inner + own;\n`,
  [`${capA}/own.ts`]: `export const own = 2;\n`,
  [`${capA}/inner.ts`]: `import { inner } from '../${tag}b/inner.js';\nexport const past = inner;\n`,
  [`${capA}/files.ts`]: `import { readFileSync } from 'node:fs';\nexport const read = (p: string): string => readFileSync(p, 'utf8');\n`,
  [`${capA}/plain-fs.ts`]: `import { existsSync } from 'fs';\nexport const there = (p: string): boolean => existsSync(p);\n`,
  // an adapter: node:fs is its job (allowed); a capability, even through its door, is above it (refused)
  [`${adapter}/files.ts`]: `import { readFileSync } from 'node:fs';\nexport const read = (p: string): string => readFileSync(p, 'utf8');\n`,
  [`${adapter}/up.ts`]: `import { inner } from '../../capabilities/${tag}b/index.js';\nexport const up = inner;\n`,
  // infra: a cycle of values, a cycle closed by a type-only import, and a one-way chain (allowed)
  [`${infra}/one.ts`]: `import { two } from './two.js';\nexport const one = (): number => two + 1;\n`,
  [`${infra}/two.ts`]: `import { one } from './one.js';\nexport const two = 2;\nexport const again = (): number => one();\n`,
  [`${infra}/shape.ts`]: `import type { Made } from './make.js';\nexport type Shape = { made: Made };\n`,
  [`${infra}/make.ts`]: `import type { Shape } from './shape.js';\nexport type Made = number;\nexport const make = (s: Shape): Made => s.made;\n`,
  [`${infra}/top.ts`]: `import { low } from './low.js';\nexport const top = low + 1;\n`,
  [`${infra}/low.ts`]: `export const low = 1;\n`,
  // a worker started from source text (refused) and one started from its own file (allowed)
  [`${infra}/evaluated.ts`]: `import { Worker } from 'node:worker_threads';\nexport const start = (): Worker => new Worker('require("x")', { eval: true });\n`,
  [`${infra}/from-file.ts`]: `import { Worker } from 'node:worker_threads';\nexport const start = (): Worker => new Worker(new URL('./w.js', import.meta.url));\n`,
};

/** Each linted file's messages from the house's rules, as `rule: message`. */
let found: Map<string, string[]>;
let eslint: ESLint;

beforeAll(async () => {
  for (const [file, text] of Object.entries(FILES)) {
    mkdirSync(dirname(join(REPO, file)), { recursive: true });
    writeFileSync(join(REPO, file), text);
  }
  // The project's config as it is; only the rules that need the type checker are left out (they are not
  // what this tests, and a typed parse of the project would cost more than the rest of the file).
  eslint = new ESLint({
    cwd: REPO,
    overrideConfig: {
      languageOptions: { parserOptions: { projectService: false } },
      rules: { '@typescript-eslint/no-floating-promises': 'off', '@typescript-eslint/no-misused-promises': 'off', '@typescript-eslint/await-thenable': 'off' },
    },
  });
  const results = await eslint.lintFiles(Object.keys(FILES).map((f) => join(REPO, f)));
  found = new Map(results.map((r) => [r.filePath.slice(REPO.length + 1), r.messages.map((m) => `${m.ruleId ?? 'parse'}: ${m.message}`)]));
}, 300_000);

afterAll(() => {
  for (const dir of [capA, capB, adapter, infra]) rmSync(join(REPO, dir), { recursive: true, force: true });
});

const of = (file: string) => found.get(file) ?? ['(not linted)'];

describe('npm run lint', () => {
  it('fails on an import cycle, each file of it told at its own import', () => {
    expect(of(`${infra}/one.ts`)).toEqual([expect.stringMatching(/^house\/no-cycle: import cycle: .*one\.ts -> .*two\.ts -> .*one\.ts$/)]);
    expect(of(`${infra}/two.ts`)).toEqual([expect.stringMatching(/^house\/no-cycle: import cycle: .*two\.ts -> .*one\.ts -> .*two\.ts$/)]);
  });

  it('fails on a cycle closed only by type imports', () => {
    expect(of(`${infra}/shape.ts`)).toEqual([expect.stringMatching(/^house\/no-cycle: /)]);
    expect(of(`${infra}/make.ts`)).toEqual([expect.stringMatching(/^house\/no-cycle: /)]);
  });

  it("fails on a capability importing another capability's inner file", () => {
    expect(of(`${capA}/inner.ts`)).toEqual([expect.stringMatching(new RegExp(`^house/capability-door: \\.\\./${tag}b/inner\\.js: `))]);
  });

  it('fails on an adapter importing a capability, even through its door', () => {
    expect(of(`${adapter}/up.ts`)).toEqual([expect.stringMatching(/^house\/adapters-below-capabilities: /)]);
  });

  it('fails on node:fs or fs in a capability', () => {
    expect(of(`${capA}/files.ts`)).toEqual([expect.stringMatching(/^house\/no-fs-in-capabilities: node:fs: /)]);
    expect(of(`${capA}/plain-fs.ts`)).toEqual([expect.stringMatching(/^house\/no-fs-in-capabilities: fs: /)]);
  });

  it('fails on a worker started from evaluated source text', () => {
    expect(of(`${infra}/evaluated.ts`)).toEqual([expect.stringMatching(/^no-restricted-syntax: a worker runs a module file of its own/)]);
  });

  it("fails on the node's composition root once startNode passes 99 lines, and passes on it as it is", async () => {
    const daemon = join(REPO, 'node-agent/host/node/daemon.ts');
    const [asIs] = await eslint.lintFiles([daemon]);
    expect(asIs!.messages.filter((m) => m.ruleId === 'max-lines-per-function')).toEqual([]);
    const body = Array.from({ length: 100 }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const [grown] = await eslint.lintText(`export function startNode(): number {\n${body}\n  return v0;\n}\n`, { filePath: daemon });
    expect(grown!.messages.map((m) => `${m.ruleId}: ${m.message}`)).toEqual([expect.stringMatching(/^max-lines-per-function: Function 'startNode' has too many lines \(103\)\. Maximum allowed is 99\./)]);
  });

  it('holds every capability file of the project to no-fs-in-capabilities, with no file exempt', async () => {
    const files = readdirSync(join(REPO, 'node-agent/capabilities'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.includes(tag))
      .map((f) => join(REPO, 'node-agent/capabilities', f));
    expect(files.length).toBeGreaterThan(50);
    const exempt: string[] = [];
    for (const file of files) {
      const config = (await eslint.calculateConfigForFile(file)) as { rules?: Record<string, unknown> };
      const setting = config.rules?.['house/no-fs-in-capabilities'];
      const level = Array.isArray(setting) ? setting[0] : setting;
      if (level !== 2 && level !== 'error') exempt.push(file.slice(REPO.length + 1));
    }
    expect(exempt).toEqual([]);
    const results = await eslint.lintFiles(files);
    const breaks = results.flatMap((r) => r.messages.filter((m) => m.ruleId === 'house/no-fs-in-capabilities').map((m) => `${r.filePath.slice(REPO.length + 1)}: ${m.message}`));
    expect(breaks).toEqual([]);
  });

  it("passes on another capability's door, a capability's own files, node:fs in an adapter, a one-way chain and a worker from a file", () => {
    for (const file of [`${infra}/from-file.ts`, `${capA}/door.ts`, `${capA}/own.ts`, `${capB}/index.ts`, `${capB}/inner.ts`, `${adapter}/files.ts`, `${infra}/top.ts`, `${infra}/low.ts`]) {
      expect({ file, messages: of(file) }).toEqual({ file, messages: [] });
    }
  });
});
