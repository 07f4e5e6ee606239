// Persona declarations: what is accepted, what is refused and how, and what the hash depends on.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isNexusError, type NexusError } from '../protocol/errors.js';
import { declarationHash, listPersonas, loadPersona, PERSONA_MAX_BYTES } from '../node-agent/adapters/personas/index.js';
import { makeWorkspace } from './helpers/workspace.js';

const roots: string[] = [];

afterEach(async () => {
  await Promise.all(roots.splice(0).map((root) => rm(root, { recursive: true, force: true })));
});

/** A fresh workspace holding the given files under .nxs-personas/. */
async function workspace(files: Record<string, string> = {}): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'nxs-personas-'));
  roots.push(root);
  await mkdir(path.join(root, '.nxs-personas'));
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(root, '.nxs-personas', name), text);
  return root;
}

const VALID = `model: claude-sonnet
system_prompt: |
  You write code.
  You keep it small.
runtime:
  command: [claude, -p]
`;

async function refusal(root: string, role: string): Promise<NexusError> {
  const err = await loadPersona(root, role).then(
    () => null,
    (e: unknown) => e,
  );
  if (!isNexusError(err)) throw new Error(`expected a NexusError, got ${String(err)}`);
  return err;
}

describe('refusals', () => {
  it.each([
    ['a missing model', 'system_prompt: x\nruntime: { command: [a] }\n', 'model'],
    ['an empty model', 'model: ""\nsystem_prompt: x\nruntime: { command: [a] }\n', 'model'],
    ['a missing system prompt', 'model: m\nruntime: { command: [a] }\n', 'system_prompt'],
    ['a missing runtime', 'model: m\nsystem_prompt: x\n', 'runtime'],
    ['an empty command', 'model: m\nsystem_prompt: x\nruntime: { command: [] }\n', 'runtime.command'],
    ['an empty argument', 'model: m\nsystem_prompt: x\nruntime: { command: ["", b] }\n', 'runtime.command.0'],
    ['an unknown key in runtime', 'model: m\nsystem_prompt: x\nruntime: { command: [a], cmd: [b] }\n', 'runtime.cmd'],
    ['tools written as null', `${VALID}tools:\n`, 'tools'],
    ['an empty tool name', `${VALID}tools: [Read, ""]\n`, 'tools.1'],
    ['a misspelt key', `${VALID}tool: [Read]\n`, 'tool'],
    ['an unknown permission mode', `${VALID}permissions: yolo\n`, 'permissions'],
    ['an unknown working tree mode', `${VALID}working_tree: private\n`, 'working_tree'],
    ['addressable without external', `${VALID}addressable: {}\n`, 'addressable.external'],
    ['a timeout of zero', `${VALID}timeout: 0\n`, 'timeout'],
    ['a fractional timeout', `${VALID}timeout: 1.5\n`, 'timeout'],
    ['a timeout in an unknown unit', `${VALID}timeout: 90x\n`, 'timeout'],
    ['a timeout over seven days', `${VALID}timeout: 169h\n`, 'timeout'],
    ['a duplicate key', `${VALID}model: other\n`, 'model'],
    ['a YAML syntax error', 'model: m\nsystem_prompt: x\nruntime: { command: [a\n', null],
    ['an empty file', '', null],
    ['a list at the top level', '- model: m\n', null],
    ['an alias bomb', `${VALID}a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b]\n`, null],
  ])('refuses %s with PERSONA_INVALID naming the field', async (_what, text, field) => {
    const root = await workspace({ 'coder.yaml': text });
    const err = await refusal(root, 'coder');
    expect(err.code).toBe('PERSONA_INVALID');
    expect(err.details).toMatchObject({ file: '.nxs-personas/coder.yaml', field });
  });

  it('tells the author of `tools:` to write [] or remove the key', async () => {
    const err = await refusal(await workspace({ 'coder.yaml': `${VALID}tools:\n` }), 'coder');
    expect(String(err.details?.['reason'])).toContain('[]');
    expect(String(err.details?.['reason'])).toMatch(/remove the key/);
  });

  it('gives the line of a YAML syntax error', async () => {
    const root = await workspace({ 'coder.yaml': 'model: m\nsystem_prompt: x\nruntime: [a\n  b: c\n' });
    const err = await refusal(root, 'coder');
    expect(err.details).toMatchObject({ field: null, reason: expect.stringMatching(/line \d+/) });
  });

  it('gives the line of a duplicate key', async () => {
    const err = await refusal(await workspace({ 'coder.yaml': `${VALID}model: other\n` }), 'coder');
    expect(err.details?.['reason']).toMatch(/line 7/);
  });

  it('writes the message as file, field and reason', async () => {
    const err = await refusal(await workspace({ 'coder.yaml': `${VALID}tools:\n` }), 'coder');
    expect(err.message).toMatch(/^\.nxs-personas\/coder\.yaml: field "tools": /);
  });

  it.each([['Coder.yaml', 'Coder'], ['my role.yml', 'my role'], ['9lives.yaml', '9lives']])(
    'refuses the file name %s as not a role',
    async (name, role) => {
      const err = await refusal(await workspace({ [name]: VALID }), role);
      expect(err.code).toBe('PERSONA_INVALID');
      expect(err.details).toMatchObject({ file: `.nxs-personas/${name}`, field: null });
    },
  );

  it('refuses a role declared in both .yaml and .yml', async () => {
    const err = await refusal(await workspace({ 'coder.yaml': VALID, 'coder.yml': VALID }), 'coder');
    expect(err.code).toBe('PERSONA_INVALID');
    expect(err.details).toMatchObject({ field: null, reason: expect.stringMatching(/coder\.yml/) });
  });

  it('refuses a file larger than 256 KiB', async () => {
    const big = `${VALID}description: "${'x'.repeat(PERSONA_MAX_BYTES)}"\n`;
    const err = await refusal(await workspace({ 'coder.yaml': big }), 'coder');
    expect(err.code).toBe('PERSONA_INVALID');
    expect(err.details).toMatchObject({ field: null });
  });
});

// A commit can carry a symlink or a FIFO where a declaration should be: reading one must neither grow
// without bound (a link to /dev/zero) nor wait forever (a FIFO nobody writes to).
describe('files that are not plain declarations', () => {
  it('refuses a symbolic link to /dev/zero without reading from it', async () => {
    const root = await workspace();
    await symlink('/dev/zero', path.join(root, '.nxs-personas', 'zero.yaml'));
    const err = await refusal(root, 'zero');
    expect(err.code).toBe('PERSONA_INVALID');
    expect(err.details).toMatchObject({ file: '.nxs-personas/zero.yaml', field: null, reason: expect.stringContaining('symbolic link') });
  });

  it('refuses a symbolic link even to a valid declaration: only regular files are read', async () => {
    const root = await workspace();
    await writeFile(path.join(root, 'elsewhere.yaml'), VALID);
    await symlink(path.join(root, 'elsewhere.yaml'), path.join(root, '.nxs-personas', 'linked.yaml'));
    expect((await refusal(root, 'linked')).details).toMatchObject({ reason: expect.stringContaining('symbolic link') });
  });

  it('refuses a FIFO without waiting on it', { timeout: 10_000 }, async () => {
    const root = await workspace();
    execFileSync('mkfifo', [path.join(root, '.nxs-personas', 'pipe.yaml')]);
    const err = await refusal(root, 'pipe');
    expect(err.code).toBe('PERSONA_INVALID');
    expect(err.details).toMatchObject({ file: '.nxs-personas/pipe.yaml', reason: 'is not a regular file' });
  });

  it('refuses text no store or process can take (a NUL written as a YAML escape), naming the field', async () => {
    const err = await refusal(await workspace({ 'coder.yaml': 'model: m\nsystem_prompt: "a\\0b"\nruntime: { command: [a] }\n' }), 'coder');
    expect(err.code).toBe('PERSONA_INVALID');
    expect(err.details).toMatchObject({ file: '.nxs-personas/coder.yaml', field: 'system_prompt', reason: expect.stringContaining('NUL') });
    const arg = await refusal(await workspace({ 'coder.yaml': 'model: m\nsystem_prompt: x\nruntime: { command: [a, "b\\0"] }\n' }), 'coder');
    expect(arg.details).toMatchObject({ field: 'runtime.command.1', reason: expect.stringContaining('NUL') });
  });

  it('refuses a symbolic link to a FIFO without waiting on it', { timeout: 10_000 }, async () => {
    const root = await workspace();
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    await symlink(path.join(root, 'pipe'), path.join(root, '.nxs-personas', 'coder.yaml'));
    expect((await refusal(root, 'coder')).details).toMatchObject({ file: '.nxs-personas/coder.yaml', reason: expect.stringContaining('symbolic link') });
  });

  it('lists the good personas beside a FIFO and a link to /dev/zero', { timeout: 10_000 }, async () => {
    const root = await workspace({ 'coder.yaml': VALID });
    execFileSync('mkfifo', [path.join(root, '.nxs-personas', 'pipe.yaml')]);
    await symlink('/dev/zero', path.join(root, '.nxs-personas', 'zero.yml'));
    const { personas, errors } = await listPersonas(root);
    expect(personas.map((p) => p.role)).toEqual(['coder']);
    expect(errors.map((e) => e.file).sort()).toEqual(['.nxs-personas/pipe.yaml', '.nxs-personas/zero.yml']);
  });
});

describe('loading', () => {
  it('returns null when no file declares the role', async () => {
    expect(await loadPersona(await workspace({ 'coder.yaml': VALID }), 'reviewer')).toBeNull();
  });

  it('never resolves a role outside the personas folder', async () => {
    const root = await workspace();
    await writeFile(path.join(root, 'escape.yaml'), VALID);
    expect(await loadPersona(root, '../escape')).toBeNull();
  });

  it('applies defaults and keeps the multi-line prompt', async () => {
    const persona = await loadPersona(await workspace({ 'coder.yml': VALID }), 'coder');
    expect(persona).toMatchObject({
      role: 'coder',
      file: '.nxs-personas/coder.yml',
      model: 'claude-sonnet',
      system_prompt: 'You write code.\nYou keep it small.\n',
      permissions: 'default',
      working_tree: 'shared',
      timeout_ms: null,
      addressable: { external: false },
      runtime: { command: ['claude', '-p'] },
    });
    expect(persona?.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('keeps absent tools, empty tools and listed tools distinct', async () => {
    const root = await workspace({
      'absent.yaml': VALID,
      'none.yaml': `${VALID}tools: []\n`,
      'some.yaml': `${VALID}tools: [Read, Grep]\n`,
    });
    const [absent, none, some] = await Promise.all(['absent', 'none', 'some'].map((r) => loadPersona(root, r)));
    expect(absent?.tools).toBeUndefined();
    expect(none?.tools).toEqual([]);
    expect(some?.tools).toEqual(['Read', 'Grep']);
  });

  it.each([
    [90, 90_000],
    ['90s', 90_000],
    ['30m', 1_800_000],
    ['2h', 7_200_000],
    ['1h30m', 5_400_000],
    [604_800, 604_800_000],
  ])('normalises timeout %s to %d ms', async (timeout, ms) => {
    const persona = await loadPersona(await workspace({ 'coder.yaml': `${VALID}timeout: ${timeout}\n` }), 'coder');
    expect(persona?.timeout_ms).toBe(ms);
  });
});

describe('hash', () => {
  const REFORMATTED = `# same persona, written differently
runtime: {command: ["claude", "-p"]}
permissions: default
system_prompt: "You write code.\\nYou keep it small.\\n"
model: 'claude-sonnet'
`;

  it('is unchanged by key order, quoting, comments and written-out defaults', async () => {
    const root = await workspace({ 'a.yaml': VALID, 'b.yaml': REFORMATTED });
    const { personas } = await listPersonas(root);
    const [a, b] = personas;
    expect(a?.hash).toBeDefined();
    expect(declarationHash({ ...a!, role: 'x' })).toBe(declarationHash({ ...b!, role: 'x' }));
  });

  it('is unchanged by the file extension', async () => {
    const yaml = await loadPersona(await workspace({ 'coder.yaml': VALID }), 'coder');
    const yml = await loadPersona(await workspace({ 'coder.yml': VALID }), 'coder');
    expect(yaml?.hash).toBe(yml?.hash);
  });

  it.each([
    ['the model', VALID.replace('claude-sonnet', 'claude-opus')],
    ['the prompt', VALID.replace('small', 'short')],
    ['the command', VALID.replace('-p]', '-p, --verbose]')],
    ['tools from absent to empty', `${VALID}tools: []\n`],
    ['the permissions', `${VALID}permissions: plan\n`],
    ['the timeout', `${VALID}timeout: 30m\n`],
    ['addressability', `${VALID}addressable: { external: true }\n`],
    ['addressability over A2A', `${VALID}addressable: { a2a: true }\n`],
  ])('changes when %s changes', async (_what, changed) => {
    const before = await loadPersona(await workspace({ 'coder.yaml': VALID }), 'coder');
    const after = await loadPersona(await workspace({ 'coder.yaml': changed }), 'coder');
    expect(after?.hash).not.toBe(before?.hash);
  });

  it('stays the same for a declaration that says a2a: false or nothing of A2A', async () => {
    const before = await loadPersona(await workspace({ 'coder.yaml': VALID }), 'coder');
    const after = await loadPersona(await workspace({ 'coder.yaml': `${VALID}addressable: { external: false, a2a: false }\n` }), 'coder');
    expect(after?.hash).toBe(before?.hash);
    const a2a = await loadPersona(await workspace({ 'coder.yaml': `${VALID}addressable: { a2a: true }\n` }), 'coder');
    expect(a2a?.addressable).toEqual({ external: false, a2a: true });
  });

  it('changes with the role', async () => {
    const { personas } = await listPersonas(await workspace({ 'a.yaml': VALID, 'b.yaml': VALID }));
    expect(personas[0]?.hash).not.toBe(personas[1]?.hash);
  });
});

describe('listPersonas', () => {
  it('returns nothing when the folder does not exist', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'nxs-personas-'));
    roots.push(root);
    expect(await listPersonas(root)).toEqual({ personas: [], errors: [] });
  });

  it('reports every bad file and still returns the good ones', async () => {
    const root = await workspace({
      'coder.yaml': VALID,
      'reviewer.yaml': `${VALID}tool: [Read]\n`,
      'planner.yaml': 'model: m\n',
      'Bad.yaml': VALID,
      'twin.yaml': VALID,
      'twin.yml': VALID,
      'notes.md': 'not a persona',
    });
    const { personas, errors } = await listPersonas(root);
    expect(personas.map((p) => p.role)).toEqual(['coder']);
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ file: '.nxs-personas/reviewer.yaml', field: 'tool' }),
        expect.objectContaining({ file: '.nxs-personas/planner.yaml', field: 'system_prompt' }),
        expect.objectContaining({ file: '.nxs-personas/planner.yaml', field: 'runtime' }),
        expect.objectContaining({ file: '.nxs-personas/Bad.yaml', field: null }),
        expect.objectContaining({ file: '.nxs-personas/twin.yaml', field: null }),
      ]),
    );
    expect(errors).toHaveLength(5);
  });
});

describe('a model its provider retires', () => {
  it('nxs personas list names each persona whose model the provider SDK lists as retired or retiring, and exits 0', async () => {
    const ws = await makeWorkspace({ git: false });
    try {
      const dir = path.join(ws.root, '.nxs-personas');
      await mkdir(dir, { recursive: true });
      const declare = (role: string, lines: string[]) => writeFile(path.join(dir, `${role}.yaml`), [`system_prompt: You are ${role}.`, ...lines].join('\n') + '\n');
      await declare('old', ['model: claude-sonnet-4-5', 'runtime: claude-code']);
      await declare('built', ['model: anything', 'runtime:', '  builtin:', '    provider: anthropic', '    model: claude-opus-4-5']);
      await declare('current', ['model: claude-sonnet-4-6', 'runtime: claude-code']);
      await declare('elsewhere', ['model: claude-sonnet-4-5', 'runtime: codex']); // not an Anthropic runtime: not its list
      const json = await ws.nxs(['personas', 'list', '--json']);
      expect(json.code).toBe(0);
      const warnings = json.json.model_warnings as Array<{ role: string; model: string; retired: boolean; end_of_life: string }>;
      expect(warnings.map((w) => [w.role, w.model]).sort()).toEqual([['built', 'claude-opus-4-5'], ['old', 'claude-sonnet-4-5']]);
      // The SDK's date for claude-sonnet-4-5 has passed (30 November 2026); the one for claude-opus-4-5 has not.
      const old = warnings.find((w) => w.role === 'old')!;
      expect(old.retired).toBe(Date.parse('2026-12-01T00:00:00Z') <= Date.now());
      const text = await ws.nxs(['personas', 'list']);
      expect(text.code).toBe(0);
      expect(text.stdout).toMatch(/^WARNING old: the model claude-sonnet-4-5 (was|will be) retired by anthropic on November 30th, 2026/m);
      expect(text.stdout).not.toContain('WARNING current');
      expect(text.stdout).not.toContain('WARNING elsewhere');
    } finally {
      await ws.cleanup();
    }
  });
});
