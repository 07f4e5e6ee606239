// `npm start`: a guided walk-through on embedded defaults. A temp git repository becomes a workspace,
// a planner persona is commissioned, it commissions a coder, both answer, and the status is printed.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { packageRoot } from '../paths.js';

const root = packageRoot();
const bin = join(root, 'bin');
const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}${delimiter}${process.env['PATH'] ?? ''}`, NXC_ACTOR: process.env['NXC_ACTOR'] ?? 'you' };
for (const k of Object.keys(env)) if (k.startsWith('NXC_') && k !== 'NXC_ACTOR') delete env[k];

function step(text: string): void {
  process.stdout.write(`\n== ${text}\n`);
}

function run(cmd: string, args: string[], cwd: string, show = true): string {
  if (show) process.stdout.write(`$ ${cmd} ${args.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(' ')}\n`);
  const out = execFileSync(cmd === 'nxc' || cmd === 'nxs' ? join(bin, cmd) : cmd, args, { cwd, env, encoding: 'utf8' });
  if (show) process.stdout.write(out);
  return out;
}

async function waitIdle(dir: string, timeoutMs: number): Promise<void> {
  const sessions = join(dir, '.nxs', 'sessions');
  const deadline = Date.now() + timeoutMs;
  let quiet = 0;
  while (Date.now() < deadline) {
    let pending = 0;
    for (const s of existsSync(sessions) ? readdirSync(sessions) : []) {
      const files = readdirSync(join(sessions, s));
      pending += files.filter((f) => /^turn-\d+\.started$/.test(f) && !files.includes(f.replace('.started', '.done'))).length;
    }
    quiet = pending === 0 ? quiet + 1 : 0;
    if (quiet >= 2) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('the demo sessions did not finish in time');
}

async function main(): Promise<void> {
  const dir = join(mkdtempSync(join(tmpdir(), 'nexus-walkthrough-')), 'project');
  mkdirSync(dir);
  step(`a project to work in: ${dir}`);
  const hasGit = spawnSync('git', ['--version']).status === 0;
  if (hasGit) {
    run('git', ['init', '-q', '-b', 'main'], dir, false);
    run('git', ['-c', 'user.name=Nexus', '-c', 'user.email=nexus@localhost', 'commit', '-q', '--allow-empty', '-m', 'start'], dir, false);
    process.stdout.write('a fresh git repository with one commit\n');
  } else {
    process.stdout.write('git is not installed: the walk-through runs without a working copy\n');
  }

  step('make it a workspace (the first run on a machine prepares a store template, a few seconds)');
  run('nxs', ['init', '--name', 'walkthrough'], dir);

  step('declare two personas in .nxs-personas/ (version-controlled, like code)');
  const agent = [process.execPath, join(root, 'dist', 'node-agent', 'walkthrough', 'demo-agent.js')];
  mkdirSync(join(dir, '.nxs-personas'));
  const persona = (role: string, prompt: string, tools: string) =>
    writeFileSync(
      join(dir, '.nxs-personas', `${role}.yaml`),
      `model: demo\nsystem_prompt: ${prompt}\ntools: ${tools}\nworking_tree: shared\ntimeout: 2m\nruntime:\n  command: ${JSON.stringify(agent)}\n`,
    );
  persona('planner', 'You split work and commission the coder.', '[Bash]');
  persona('coder', 'You write code and answer with what you did.', '[Bash, Edit]');
  run('nxs', ['personas', 'list'], dir);
  if (hasGit) run('git', ['-c', 'user.name=Nexus', '-c', 'user.email=nexus@localhost', 'add', '.nxs-personas'], dir, false);
  if (hasGit) run('git', ['-c', 'user.name=Nexus', '-c', 'user.email=nexus@localhost', 'commit', '-q', '-m', 'personas'], dir, false);

  step('commission the planner: it commissions the coder, waits in silence, and answers when woken');
  run('nxc', ['send', 'planner', '--subject', 'a parser for the config format', 'Plan and deliver a parser for our config format.'], dir);
  await waitIdle(dir, 60_000);

  step('the truth, from the op log');
  run('nxc', ['status', '--all'], dir);
  const report = JSON.parse(run('nxc', ['status', '--all', '--json'], dir, false)) as { operations: Array<{ operation: string }> };
  const op = report.operations[0]?.operation;
  if (op) run('nxc', ['threads', 'show', op], dir);

  step('next');
  process.stdout.write(
    [
      `cd ${dir}`,
      `export PATH="${bin}:$PATH"`,
      'nxc status --all --json            # the same facts, as the JSON contract',
      'NXC_ACTOR=you nxc send coder --subject "tests" "add tests for the parser"',
      'nxc send --help',
      '',
    ].join('\n'),
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`walk-through failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
