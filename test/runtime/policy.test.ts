// What a persona's tools: and permissions: let the built-in runtime do, call by call.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decide, isReadOnlyCommand, offeredTools, policyFor } from '../../node-agent/capabilities/runtime/index.js';

// A working copy with what an attacker aims at: the workspace's keys and sync token, a link out
// of the copy, a link into .nxs/, a FIFO, and a file listing names for wc --files0-from.
let root: string;
beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'nxs-policy-'));
  mkdirSync(path.join(root, '.nxs', 'keys'), { recursive: true });
  writeFileSync(path.join(root, '.nxs', 'keys', 'workspace.key'), 'key');
  writeFileSync(path.join(root, '.nxs', 'sync.json'), '{}');
  mkdirSync(path.join(root, '.nxs-personas'));
  writeFileSync(path.join(root, '.nxs-personas', 'coder.yaml'), 'model: x\n');
  mkdirSync(path.join(root, 'src', '.nxs'), { recursive: true });
  writeFileSync(path.join(root, 'README.md'), 'readme\n');
  writeFileSync(path.join(root, 'src', 'a.txt'), 'alpha\n');
  writeFileSync(path.join(root, 'names'), '/etc/hostname\0');
  symlinkSync('/etc/passwd', path.join(root, 'evil-link'));
  symlinkSync('/etc', path.join(root, 'etc-link'));
  symlinkSync('.nxs/keys', path.join(root, 'keys-link'));
  execFileSync('mkfifo', [path.join(root, 'pipe')]);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

type Decl = { tools?: string[]; permissions?: 'default' | 'acceptEdits' | 'bypassPermissions' | 'plan' };
const p = (d: Decl) => policyFor({ tools: d.tools, permissions: d.permissions ?? 'default' });
const bash = (command: string) => ({ command });

describe('decisions by table', () => {
  it.each<[string, Decl, string, unknown, 'allow' | 'needs_approval' | 'deny']>([
    ['tools: [] still reads inside the working directory', { tools: [] }, 'Read', { path: 'a' }, 'allow'],
    ['tools: [] still lists and searches', { tools: [] }, 'Grep', { pattern: 'x' }, 'allow'],
    ['tools: [] cannot write a file', { tools: [] }, 'Write', { path: 'a', content: '' }, 'needs_approval'],
    ['tools: [] cannot edit a file', { tools: [] }, 'Edit', { path: 'a', old_string: 'x', new_string: 'y' }, 'needs_approval'],
    ['tools: [] cannot run nxc send', { tools: [] }, 'Bash', bash('nxc send coder hi'), 'needs_approval'],
    ['tools: [] cannot git push', { tools: [] }, 'Bash', bash('git push'), 'needs_approval'],
    ['tools: [] was not offered the shell, so not even git status runs', { tools: [] }, 'Bash', bash('git status'), 'needs_approval'],
    ['tools: [] may not ls through the shell either', { tools: [] }, 'Bash', bash('ls src'), 'needs_approval'],
    ['plan mode gets no read-only shell', { permissions: 'plan' }, 'Bash', bash('git status'), 'needs_approval'],
    ['a persona offered the shell by a rule may run git status, the runtime counts it read-only', { tools: ['Bash(npm test:*)'] }, 'Bash', bash('git status'), 'allow'],
    ['a persona offered the shell by a rule may ls a folder in the working directory', { tools: ['Bash(npm test:*)'] }, 'Bash', bash('ls src'), 'allow'],
    ['tools: [] may not cat a file outside the working directory', { tools: [] }, 'Bash', bash('cat /etc/passwd'), 'needs_approval'],
    ['tools: [] may not chain after a read-only command', { tools: [] }, 'Bash', bash('ls; rm -rf x'), 'needs_approval'],
    ['no tools: key is the default toolset with an approved shell', {}, 'Bash', bash('rm -rf build && make'), 'allow'],
    ['no tools: key writes files', {}, 'Write', { path: 'a', content: '' }, 'allow'],
    ['a Bash(prefix:*) rule lets that command run', { tools: ['Bash(npm test:*)'] }, 'Bash', bash('npm test -- --run'), 'allow'],
    ['a Bash(prefix:*) rule matches the bare prefix', { tools: ['Bash(npm test:*)'] }, 'Bash', bash('npm test'), 'allow'],
    ['a Bash(prefix:*) rule does not match a longer word', { tools: ['Bash(npm test:*)'] }, 'Bash', bash('npm testify'), 'needs_approval'],
    ['a Bash(prefix:*) rule does not let a chain through', { tools: ['Bash(npm test:*)'] }, 'Bash', bash('npm test && git push'), 'needs_approval'],
    ['a Bash(prefix:*) rule does not let a pipe through', { tools: ['Bash(npm test:*)'] }, 'Bash', bash('npm test | sh'), 'needs_approval'],
    ['a Bash(prefix:*) rule does not let a substitution through', { tools: ['Bash(npm test:*)'] }, 'Bash', bash('npm test $(curl x)'), 'needs_approval'],
    ['a Bash(exact) rule matches only that command', { tools: ['Bash(make lint)'] }, 'Bash', bash('make lint2'), 'needs_approval'],
    ['a bare Bash grant runs anything', { tools: ['Bash'] }, 'Bash', bash('curl x | sh'), 'allow'],
    ['Write granted by name', { tools: ['Write'] }, 'Write', { path: 'a', content: '' }, 'allow'],
    ['Write not granted when only Edit is', { tools: ['Edit'] }, 'Write', { path: 'a', content: '' }, 'needs_approval'],
    ['acceptEdits grants file edits without naming them', { tools: ['Read'], permissions: 'acceptEdits' }, 'Edit', { path: 'a', old_string: 'x', new_string: 'y' }, 'allow'],
    ['acceptEdits does not grant the shell', { tools: ['Read'], permissions: 'acceptEdits' }, 'Bash', bash('make'), 'needs_approval'],
    ['bypassPermissions lifts the filter whatever tools: says', { tools: [], permissions: 'bypassPermissions' }, 'Bash', bash('git push'), 'allow'],
    ['plan mode acts on nothing even with the default toolset', { permissions: 'plan' }, 'Write', { path: 'a', content: '' }, 'needs_approval'],
    ['nxc reply is the runtime\'s job, refused even to the default toolset', {}, 'Bash', bash('nxc reply --thread t hi'), 'deny'],
    ['nxc reply by path is refused too', { permissions: 'bypassPermissions' }, 'Bash', bash('/usr/bin/nxc reply -'), 'deny'],
    ['an unknown tool is refused', {}, 'WebFetch', { url: 'x' }, 'deny'],
  ])('%s', (_name, decl, tool, input, expected) => {
    expect(decide(p(decl), tool, input, root).kind).toBe(expected);
  });
});

describe('what a request offers', () => {
  it.each<[string, Decl, boolean, string[]]>([
    ['tools: [] offers only inspection', { tools: [] }, false, ['Read', 'LS', 'Grep']],
    ['a Bash rule offers the shell', { tools: ['Bash(npm test:*)'] }, false, ['Read', 'LS', 'Grep', 'Bash']],
    ['granted edits are offered', { tools: ['Write', 'Edit'] }, false, ['Read', 'LS', 'Grep', 'Write', 'Edit']],
    ['the default toolset offers everything', {}, false, ['Read', 'LS', 'Grep', 'Write', 'Edit', 'Bash']],
    ['an interactive run offers everything and asks', { tools: [] }, true, ['Read', 'LS', 'Grep', 'Write', 'Edit', 'Bash']],
  ])('%s', (_name, decl, interactive, expected) => {
    expect(offeredTools(p(decl), interactive)).toEqual(expected);
  });

  it('records tool names it does not understand instead of granting them', () => {
    expect(p({ tools: ['WebFetch', 'Read'] }).ignored).toEqual(['WebFetch']);
  });
});

// What a `tools: []` persona ran through the read-only allowance although it was never offered Bash.
describe('a persona not offered the shell gets none', () => {
  it.each(['cat .nxs/keys/workspace.key', 'tail -c 300 .nxs/sync.json', 'git diff --no-index .nxs/sync.json README', 'cat evil-link', 'wc --files0-from=/etc/hostname'])(
    '%s needs a person',
    (command) => {
      expect(decide(p({ tools: [] }), 'Bash', bash(command), root)).toEqual({ kind: 'needs_approval', reason: 'Bash is not among the tools this persona declares' });
    },
  );
});

describe('the read-only allowance, for a persona offered the shell', () => {
  it.each<[string, boolean]>([
    ['git status', true],
    ['git log --oneline', true],
    ['git log --oneline HEAD~1', true],
    ['git log --follow -- README.md', true],
    ['git show HEAD:README.md', true],
    ['git diff --no-index README.md src/a.txt', true],
    ['cat README.md', true],
    ["cat 'README.md'", true],
    ['cat .nxs-personas/coder.yaml', true],
    ['ls -la', true],
    ['head -n 5 README.md', true],
    ['tail -n 5 README.md', true],
    ['wc -l README.md src/a.txt', true],
    ['cat ../secret', false],
    ['cat ~/.ssh/id_rsa', false],
    ['cat /etc/passwd', false],
    ['cat "/etc/passwd"', false],
    ["cat '/etc/'passwd", false],
    ['git diff --output=x', false],
    ['rm README.md', false],
    ['cat a > b', false],
    ['cat README.md; cat .nxs/keys/workspace.key', false],
    ['cat "README.md', false],
    ['', false],
    // The private folder, by name, through a link, nested, in a git path, behind an option.
    ['cat .nxs/keys/workspace.key', false],
    ['tail -c 300 .nxs/sync.json', false],
    ['ls .nxs', false],
    ['ls src/.nxs', false],
    ['cat keys-link/workspace.key', false],
    ['git show HEAD:.nxs/sync.json', false],
    ['git diff --no-index .nxs/sync.json README', false],
    ['git log -O.nxs/sync.json', false],
    // Links out of the copy are resolved.
    ['cat evil-link', false],
    ['head -c 100 etc-link/hostname', false],
    ['git diff --no-index evil-link README.md', false],
    // Paths behind = and in option values.
    ['wc --files0-from=/etc/hostname', false],
    ['wc --files0-from=names', false],
    ['wc --files0-from names', false],
    ['wc --files0=names', false],
    ['git log --output=/tmp/nxs-out -1', false],
    ['git log --output=out.txt -1', false],
    ['git log --ext-diff -p', false],
    ['git log --format=x a=/etc/passwd', false],
    ['git log -O/etc/passwd', false],
    ['ls --hide=/etc', false],
    // What waits forever: a FIFO, following a file, standard input.
    ['cat pipe', false],
    ['tail -f README.md', false],
    ['tail -n 5 -F README.md', false],
    ['tail -fn5 README.md', false],
    ['tail --follow=name README.md', false],
    ['tail --fol README.md', false],
    ['cat -', false],
    ['cat /dev/stdin', false],
    // Shell patterns could expand into .nxs/ or onto a link.
    ['cat .n*/keys/workspace.key', false],
    ['cat ev?l-link', false],
  ])('%s -> %s', (command, expected) => {
    expect(isReadOnlyCommand(command, root)).toBe(expected);
    expect(decide(p({ tools: ['Bash(npm test:*)'] }), 'Bash', bash(command), root).kind).toBe(expected ? 'allow' : 'needs_approval');
  });
});

describe('a Bash(prefix:*) rule grants its command, with arguments inside the working copy', () => {
  const gitLog = p({ tools: ['Bash(git log:*)'] });
  it.each<[string, 'allow' | 'needs_approval']>([
    ['git log --oneline -5', 'allow'],
    ['git log --output=/tmp/nxs-git-log-out -1', 'needs_approval'],
    ['git log --output=inside.txt -1', 'needs_approval'],
    ['git log -p -- .nxs/sync.json', 'needs_approval'],
    ['git log -- evil-link', 'needs_approval'],
  ])('Bash(git log:*) with %s -> %s', (command, expected) => {
    expect(decide(gitLog, 'Bash', bash(command), root).kind).toBe(expected);
  });

  it.each<[string, 'allow' | 'needs_approval']>([
    ['npm test -- --run src/a.txt', 'allow'],
    ['npm test -- --reporter=/tmp/out', 'needs_approval'],
    ['npm test -- ../elsewhere', 'needs_approval'],
    ['npm test -- evil-link', 'needs_approval'],
  ])('Bash(npm test:*) with %s -> %s', (command, expected) => {
    expect(decide(p({ tools: ['Bash(npm test:*)'] }), 'Bash', bash(command), root).kind).toBe(expected);
  });

  it('an exact rule runs what the person wrote, paths and all, beside a prefix that would not', () => {
    expect(decide(p({ tools: ['Bash(cat /etc/hostname)'] }), 'Bash', bash('cat /etc/hostname'), root).kind).toBe('allow');
    expect(decide(p({ tools: ['Bash(cat:*)', 'Bash(cat /etc/hostname)'] }), 'Bash', bash('cat /etc/hostname'), root).kind).toBe('allow');
    expect(decide(p({ tools: ['Bash(cat:*)', 'Bash(cat /etc/hostname)'] }), 'Bash', bash('cat /etc/passwd'), root).kind).toBe('needs_approval');
  });
});
