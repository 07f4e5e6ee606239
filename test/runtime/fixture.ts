// Shared set-up for the runtime's tests: a real git working copy in a temp folder and a run wired to the fake provider.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ulid } from 'ulidx';
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

/** A git repository with one commit and a .nxs/ folder git ignores, as a workspace has. */
export function makeWorkingCopy(files: Record<string, string> = { 'README.md': '# demo\n' }): { root: string; cleanup: () => void } {
  const root = mkdtempSync(path.join(tmpdir(), 'nxs-runtime-'));
  git(root, 'init', '-q', '-b', 'main');
  mkdirSync(path.join(root, '.nxs'));
  writeFileSync(path.join(root, '.nxs', '.gitignore'), '*\n');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), text);
  }
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'start');
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
    identity: { run_id: ulid(), role: 'coder', session: null, turn: null, thread: null },
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
