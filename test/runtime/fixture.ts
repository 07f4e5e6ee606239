// Shared set-up for the runtime's tests: a real git working copy in a temp folder and a run wired to the fake provider.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUlid } from '../../protocol/ids.js';
import { RunStateFileSchema, type RunLimits } from '../../protocol/runs.js';
import {
  createModelClient,
  executeRun,
  fileCommandLeases,
  leaseFile,
  policyFor,
  readJournal,
  resolveLimits,
  workingCopyRevision,
  type RunOptions,
  type RunResult,
} from '../../node-agent/capabilities/runtime/index.js';
import type { FakeProvider } from '../helpers/fake-provider/index.js';
import { gitEnv } from '../helpers/git-env.js';

export function git(root: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd: root, env: gitEnv(), encoding: 'utf8' });
}

/** Repositories already made in this worker, by their files: a new one is a copy, not three more git processes. */
const madeRepos = new Map<string, string>();

/** A git repository with one commit and a .nxs/ folder git ignores, as a workspace has. */
export function makeWorkingCopy(files: Record<string, string> = { 'README.md': '# demo\n' }): { root: string; cleanup: () => void } {
  const key = JSON.stringify(Object.entries(files));
  let made = madeRepos.get(key);
  if (made === undefined || !existsSync(path.join(made, '.git'))) {
    made = mkdtempSync(path.join(tmpdir(), 'nxs-runtime-made-'));
    git(made, 'init', '-q', '-b', 'main');
    mkdirSync(path.join(made, '.nxs'));
    writeFileSync(path.join(made, '.nxs', '.gitignore'), '*\n');
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(made, name)), { recursive: true });
      writeFileSync(path.join(made, name), text);
    }
    git(made, 'add', '-A');
    git(made, 'commit', '-q', '-m', 'start');
    madeRepos.set(key, made);
  }
  const root = mkdtempSync(path.join(tmpdir(), 'nxs-runtime-'));
  cpSync(made, root, { recursive: true });
  return { root, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

export type RunSetup = Partial<Omit<RunOptions, 'limits'>> & {
  provider?: 'anthropic' | 'openai';
  limits?: Partial<RunLimits>;
  tools?: string[] | undefined;
  permissions?: 'default' | 'acceptEdits' | 'bypassPermissions' | 'plan';
};

/** Runs the built-in loop against the fake provider in `root`, with real leases, journal and tools. */
export async function runAgainst(fake: FakeProvider, root: string, setup: RunSetup = {}): Promise<RunResult> {
  const provider = setup.provider ?? 'anthropic';
  const client = createModelClient(
    { provider, model: 'fake-model', base_url: provider === 'anthropic' ? fake.anthropicUrl : fake.openaiUrl },
    { ANTHROPIC_API_KEY: 'test-key', OPENAI_API_KEY: 'test-key' },
  );
  const startedAt = setup.startedAt ?? Date.now();
  const limits = { ...resolveLimits(undefined, 60_000, startedAt), ...setup.limits };
  if (setup.limits?.timeout_ms !== undefined && setup.limits.deadline_at === undefined) limits.deadline_at = startedAt + setup.limits.timeout_ms;
  const dir = path.join(root, '.nxs', 'runs', 'r');
  mkdirSync(dir, { recursive: true });
  const revision = setup.revision ?? workingCopyRevision(root);
  const policy = setup.policy ?? policyFor({ tools: 'tools' in setup ? setup.tools : undefined, permissions: setup.permissions ?? 'default' });
  return executeRun({
    identity: { run_id: randomUlid(), role: 'coder', session: null, turn: null, thread: null },
    root,
    files: { journal: path.join(dir, 'journal.jsonl'), state: path.join(dir, 'run.json') },
    system: 'You are a test agent.',
    prompt: 'Do the task.',
    client,
    policy,
    leases: setup.leases ?? fileCommandLeases({ file: leaseFile(root), revision }),
    revision,
    env: { PATH: process.env['PATH'] ?? '' },
    backoffMs: () => 0,
    ...setup,
    limits,
    startedAt,
  });
}

export function stateFile(root: string) {
  return RunStateFileSchema.parse(JSON.parse(readFileSync(path.join(root, '.nxs', 'runs', 'r', 'run.json'), 'utf8')));
}

export function journalOf(root: string) {
  return readJournal(path.join(root, '.nxs', 'runs', 'r', 'journal.jsonl'));
}
