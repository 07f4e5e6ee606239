// What a persona's tools: and permissions: let the built-in runtime do, call by call.
import { describe, expect, it } from 'vitest';
import { decide, isReadOnlyCommand, offeredTools, policyFor } from '../../node-agent/capabilities/runtime/index.js';

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
    ['tools: [] may run git status, the runtime counts it read-only', { tools: [] }, 'Bash', bash('git status'), 'allow'],
    ['tools: [] may ls a folder in the working directory', { tools: [] }, 'Bash', bash('ls src'), 'allow'],
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
    expect(decide(p(decl), tool, input).kind).toBe(expected);
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

describe('read-only commands', () => {
  it.each([
    ['git status', true],
    ['git log --oneline', true],
    ['cat README.md', true],
    ['cat ../secret', false],
    ['cat ~/.ssh/id_rsa', false],
    ['ls -la', true],
    ['git diff --output=x', false],
    ['rm README.md', false],
    ['cat a > b', false],
    ['', false],
  ])('%s -> %s', (command, expected) => {
    expect(isReadOnlyCommand(command)).toBe(expected);
  });
});
