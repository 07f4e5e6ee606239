// Shell completion generated from the Verb tables: every verb and flag is offered where it applies, and
// bash (the shell this machine has) completes real command lines with the generated script.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { completionScript, completionTree } from '../node-agent/cli/completion.js';
import { NXC } from '../node-agent/cli/nxc.js';
import { NXS } from '../node-agent/cli/nxs.js';

const PROGRAMS = [NXC, NXS];

describe('the completion tree', () => {
  it('holds every verb of both tables, each with its flags, --json and --help', () => {
    for (const p of PROGRAMS) {
      const tree = completionTree(p);
      for (const v of p.verbs) {
        const node = tree.nodes.get(v.path.join(' '));
        expect(node, `${p.name} ${v.path.join(' ')}`).toBeDefined();
        expect(node!.flags).toEqual(expect.arrayContaining(['--json', '--help', ...Object.keys(v.flags ?? {}).map((f) => `--${f}`)]));
        for (let i = 0; i < v.path.length; i++) expect(tree.nodes.get(v.path.slice(0, i).join(' '))!.words).toContain(v.path[i]);
      }
    }
  });

  it('is refused for a shell it does not know', () => {
    expect(() => completionScript('tcsh', PROGRAMS)).toThrow(/bash, zsh or fish/);
  });

  it.each(['zsh', 'fish'])('%s gets a script naming every verb', (shell) => {
    const script = completionScript(shell, PROGRAMS);
    for (const word of ['send', 'wait', 'completion', 'threads', 'sync', 'bind', '--until-caught-up', '--token-file']) expect(script).toContain(shell === 'fish' ? word.replace(/^--/, '-l ') : word);
  });
});

/** What bash's completion offers for `line` (the last word is the one being completed). */
function complete(line: string[]): string[] {
  const script = completionScript('bash', PROGRAMS);
  const words = line.map((w) => `'${w}'`).join(' ');
  const out = execFileSync('bash', ['--norc', '--noprofile', '-c', `${script}\nCOMP_WORDS=(${words}); COMP_CWORD=${line.length - 1}; _nexus_complete; printf '%s\\n' "\${COMPREPLY[@]}"`], { encoding: 'utf8' });
  return out.split('\n').filter(Boolean);
}

describe('bash, with the generated script', () => {
  it.each([
    [['nxc', ''], ['send', 'reply', 'status', 'threads', 'tick', 'wait', 'completion']],
    [['nxc', 'th'], ['threads']],
    [['nxc', 'threads', ''], ['show']],
    [['nxc', 'wait', '--t'], ['--thread', '--timeout']],
    [['nxc', 'send', 'coder', '--s'], ['--subject']],
    [['nxs', 'sync', 'bind', 'http://relay:7420', '--to'], ['--token', '--token-file']],
    [['nxs', 'node', 'st'], ['start', 'stop', 'status']],
    [['nxs', 'relay', 'stream', ''], ['create', 'list', 'delete', 'rotate-token']],
  ])('%j offers %j', (line, expected) => {
    expect(complete(line)).toEqual(expect.arrayContaining(expected));
    if (!line.at(-1)!.startsWith('-') && line.at(-1) !== '') expect(complete(line).every((w) => w.startsWith(line.at(-1)!))).toBe(true);
  });

  it('offers no words after a flag that takes a value (the shell completes a file there)', () => {
    expect(complete(['nxs', 'sync', 'bind', 'http://relay:7420', '--token-file', ''])).toEqual([]);
  });
});
