// `nxs agent run <role> "task"`: a person runs a persona in the foreground, watches it work and approves what it asks.
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { randomUlid } from '../../../protocol/ids.js';
import { NexusError } from '../../../protocol/errors.js';
import type { PendingCall, RunLimits } from '../../../protocol/runs.js';
import { loadPersona } from '../../adapters/personas/index.js';
import { workspacePaths } from '../../paths.js';
import { resolveLimits } from './budget.js';
import { fileCommandLeases, type CommandLeases } from './lease.js';
import { createModelClient } from './providers/index.js';
import { executeRun, type RunEvent, type RunResult } from './run.js';
import { DEFAULT_RUN_TIMEOUT_MS, leaseFile, systemPrompt, workingCopyRevision } from './session.js';
import { policyFor } from './tools/index.js';

/** A person's foreground run gets twenty tool calls unless the persona says otherwise. */
export const FOREGROUND_TOOL_CALLS = 20;

/** The terminal: where progress goes and where approvals are asked. */
export type Terminal = {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Asks yes or no; absent when nobody can answer (stdin is not a terminal): then nothing waits for approval. */
  ask?: ((question: string) => Promise<boolean>) | undefined;
};

export type ForegroundInput = {
  workspaceRoot: string;
  role: string;
  task: string;
  env: NodeJS.ProcessEnv;
  terminal: Terminal;
  signal?: AbortSignal | undefined;
  now?: (() => number) | undefined;
  leases?: CommandLeases | undefined;
  /** Resume the run in this folder (`.nxs/runs/<id>`) instead of starting one. */
  resumeDir?: string | undefined;
  backoffMs?: ((attempt: number, retryAfterMs: number | null) => number) | undefined;
};

const FOREGROUND_NOTE = [
  '',
  '## How this runtime works',
  'A person runs you from a terminal and reads your final message. Tools act inside the working directory only;',
  'a tool this persona is not granted asks the person first. To hand the task back, call the escalate tool.',
].join('\n');

/**
 * The terminal of this process: progress on stdout/stderr, approvals asked on stdin when it
 * is a terminal. Without one nobody can answer, so ungranted calls are refused instead of waiting.
 */
export function processTerminal(): Terminal {
  const ask = process.stdin.isTTY
    ? async (question: string) => {
        const rl = createInterface({ input: process.stdin, output: process.stderr });
        try {
          return /^y(es)?$/i.test((await rl.question(`\n${question} [y/N] `)).trim());
        } finally {
          rl.close();
        }
      }
    : undefined;
  return { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s), ask };
}

/** Live progress for a person: streamed text on `out`, one line per tool call and status change on `err`. */
export function progressPrinter(t: Terminal): (e: RunEvent) => void {
  return (e) => {
    switch (e.type) {
      case 'text':
        t.out(e.delta);
        break;
      case 'tool_start':
        t.err(`\n▸ ${e.call.summary}\n`);
        break;
      case 'tool_refused':
        t.err(`\n▸ ${e.call.summary}\n  ✗ refused: ${e.reason}\n`);
        break;
      case 'tool_end':
        if (e.is_error) t.err(`  ✗ ${e.content.split('\n')[0]}\n`);
        break;
      case 'retry':
        t.err(`  provider: ${e.error}; retrying in ${Math.round(e.waitMs)} ms\n`);
        break;
      case 'status':
        if (e.status !== 'running') t.err(`\n[${e.status}]${e.reason ? ` ${e.reason}` : ''}\n`);
        break;
      default:
        break;
    }
  };
}

/**
 * Runs `role` on the built-in runtime with `task` as its prompt, in the foreground. The run's
 * files go to `.nxs/runs/<run id>/` (run.json, journal.jsonl). Approval prompts go to the terminal.
 * @throws NexusError UNKNOWN_RECIPIENT (no such persona), RUNTIME_UNCONFIGURED (not builtin, or no key)
 */
export async function runForeground(input: ForegroundInput): Promise<RunResult> {
  const persona = await loadPersona(input.workspaceRoot, input.role);
  if (persona === null) throw new NexusError('UNKNOWN_RECIPIENT', `no persona "${input.role}" in ${input.workspaceRoot}`);
  const runtime = persona.runtime;
  if (!('kind' in runtime) || runtime.kind !== 'builtin') {
    throw new NexusError('RUNTIME_UNCONFIGURED', `persona "${input.role}" is not declared for the built-in runtime (runtime: {builtin: {...}})`);
  }
  const client = createModelClient({ ...runtime.builtin, model: runtime.builtin.model ?? persona.model }, input.env);
  const now = input.now ?? Date.now;
  const runId = input.resumeDir ? path.basename(input.resumeDir) : randomUlid();
  const dir = input.resumeDir ?? path.join(workspacePaths(input.workspaceRoot).nxs, 'runs', runId);
  const startedAt = now();
  const budget = { max_tool_calls: FOREGROUND_TOOL_CALLS, ...persona.budget };
  const limits: RunLimits = resolveLimits(budget, persona.timeout_ms ?? DEFAULT_RUN_TIMEOUT_MS, startedAt);
  const revision = workingCopyRevision(input.workspaceRoot);
  const ask = input.terminal.ask;
  const approve = ask === undefined ? undefined : (call: PendingCall, reason: string) => ask(`${reason}.\nAllow ${call.summary}?`);
  return executeRun({
    identity: { run_id: runId, role: input.role, session: null, turn: null, thread: null },
    root: input.workspaceRoot,
    files: { journal: path.join(dir, 'journal.jsonl'), state: path.join(dir, 'run.json') },
    system: systemPrompt(persona, FOREGROUND_NOTE),
    prompt: input.task,
    client,
    limits,
    policy: policyFor(persona),
    leases: input.leases ?? fileCommandLeases({ file: leaseFile(input.workspaceRoot), revision }),
    revision,
    env: input.env,
    approve,
    onEvent: progressPrinter(input.terminal),
    signal: input.signal,
    now,
    resume: input.resumeDir !== undefined,
    startedAt,
    backoffMs: input.backoffMs,
  });
}
