// The README's two-machine recipe, pasted as a person would: each line of its shell block runs through bash
// with the built commands on PATH, one NEXUS_HOME and one repository per machine, against a real relay.
// Only the placeholders are filled in, and the reviewer's runtime is a shell command instead of a model.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR, RelayProcess, relayFolders } from '../helpers/relay.js';
import { gitEnv } from '../helpers/git-env.js';
import { TEST_RUN_VARIABLE } from '../helpers/leftovers.js';
import { until } from '../helpers/until.js';
import { REPO } from '../helpers/workspace.js';

const run = promisify(execFile);

type Machine = 'A' | 'B';
type Step = { on: Machine[]; command: string };

/** The recipe's commands in order, each with the machines it runs on, as the block's comments say. */
function recipe(readme: string): { serve: string; create: string; steps: Step[] } {
  const block = /## Two machines[^\n]*\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  if (block === undefined) throw new Error('README has no shell block under "Two machines"');
  const lines = block.split('\n');
  let section = '';
  let serve = '';
  let create = '';
  const steps: Step[] = [];
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!;
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      section = line;
      continue;
    }
    if (line.includes("<<'EOF'")) {
      while (lines[i] !== 'EOF') line += '\n' + lines[++i];
    }
    const tail = / # on ([AB])$/.exec(line);
    const command = line.replace(/\s+#[^'\n]*$/, '');
    if (section.includes('relay machine')) {
      if (command.includes('relay serve')) serve = command;
      else create = command;
    } else if (tail) steps.push({ on: [tail[1] as Machine], command });
    else if (section.includes('On machine A and on machine B')) steps.push({ on: ['A', 'B'], command });
    else if (section.includes('On B')) steps.push({ on: ['B'], command });
    else if (section.includes('On A')) steps.push({ on: ['A'], command });
    else throw new Error(`no machine for "${command}" under "${section}"`);
  }
  return { serve, create, steps };
}

describe("the README's two-machine recipe", () => {
  let folders: Awaited<ReturnType<typeof relayFolders>>;
  let relay: RelayProcess;
  let root: string;
  const home = (m: Machine) => join(root, m, 'home');
  const repo = (m: Machine) => join(root, m, 'repo');

  async function sh(m: Machine, command: string): Promise<{ code: number; stdout: string; stderr: string }> {
    const env = {
      ...gitEnv(),
      PATH: `${join(REPO, 'bin')}:${process.env['PATH']}`,
      NEXUS_HOME: home(m),
      [TEST_RUN_VARIABLE]: process.env[TEST_RUN_VARIABLE] ?? '',
    };
    try {
      const r = await run('bash', ['-c', command], { cwd: repo(m), env, timeout: 60_000 });
      return { code: 0, stdout: r.stdout, stderr: r.stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  }

  beforeAll(async () => {
    folders = await relayFolders();
    relay = new RelayProcess(folders.fresh());
    await relay.start();
    root = mkdtempSync(join(tmpdir(), 'nexus-recipe-'));
    for (const m of ['A', 'B'] as const) {
      mkdirSync(repo(m), { recursive: true });
      mkdirSync(home(m), { recursive: true });
      await run('git', ['init', '-q'], { cwd: repo(m) });
    }
  });

  afterAll(async () => {
    for (const m of ['A', 'B'] as const) await sh(m, 'nxs node stop').catch(() => undefined);
    await relay?.stop();
    folders?.cleanup();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('runs line by line on two machines, and both read the commission answered', { timeout: 180_000 }, async () => {
    const { serve, create, steps } = recipe(readFileSync(join(REPO, 'README.md'), 'utf8'));
    expect(serve).toMatch(/^nxs relay serve /);
    const hostPort = `127.0.0.1:${relay.port}`;
    const made = await sh('A', create.replace('<operator token>', OPERATOR).replace('relay-host:7420', hostPort));
    expect(made.code, made.stderr).toBe(0);
    const streamToken = /stream token \(shown this once\): (\S+)/.exec(made.stdout + made.stderr)?.[1];
    expect(streamToken).toBeDefined();
    const invites: Partial<Record<Machine, string>> = {};
    // A step for both machines runs on both at once, as two people would paste it.
    for (const step of steps) {
      await Promise.all(
        step.on.map(async (m) => {
          const command = step.command
            .replaceAll('relay-host:7420', hostPort)
            .replaceAll('<stream token>', streamToken!)
            .replaceAll('app-a', m === 'A' ? 'app-a' : 'app-b')
            .replaceAll("<B's invite line>", invites.B ?? '<missing>')
            .replaceAll("<A's invite line>", invites.A ?? '<missing>')
            .replace('runtime: claude-code', `runtime:\n  command: [sh, -c, 'cat >/dev/null; nxc reply --thread "$NXC_THREAD" "reviewed on B"']`);
          const r = await sh(m, command);
          expect(r.code, `${m}: ${command}\n${r.stdout}${r.stderr}`).toBe(0);
          if (command.includes('key show --invite')) invites[m] = r.stdout.trim();
        }),
      );
    }
    // The commission crossed: both machines read it answered by B's reviewer, in the same operation.
    for (const m of ['A', 'B'] as const) {
      await until(`the answer on ${m}`, async () => {
        const r = await sh(m, 'nxc status --all --json');
        const op = JSON.parse(r.stdout).operations.find((o: any) => o.threads.some((t: any) => t.subject === 'review'));
        return op?.threads[0]?.state === 'answered' && String(op.threads[0].answered_by).endsWith('/reviewer') ? true : undefined;
      });
    }
  });
});
