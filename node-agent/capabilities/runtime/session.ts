// One session turn on the built-in runtime: everything a run needs, read from the turn's spec and the persona.
import path from 'node:path';
import { randomUlid } from '../../../protocol/ids.js';
import { isNexusError } from '../../../protocol/errors.js';
import type { Persona } from '../../../protocol/persona.js';
import { EMPTY_USAGE, journalFileName, runStateFileName, type RunLimits } from '../../../protocol/runs.js';
import { readWorkingCopy } from '../../adapters/git/index.js';
import type { TurnSandbox } from '../../adapters/sandbox/index.js';
import { endingMessage, type Answer, type AnswerOutcome } from './answer.js';
import { operationTokensLeft, resolveLimits } from './budget.js';
import { writeRunState } from './journal.js';
import { fileCommandLeases, type CommandLeases } from './lease.js';
import { createModelClient } from './providers/index.js';
import { executeRun, type RunEvent, type RunResult } from './run.js';
import { policyFor, sandboxedTools } from './tools/index.js';

/** A persona that declares no timeout still gets a deadline; the same figure a person's foreground run gets. */
export const DEFAULT_RUN_TIMEOUT_MS = 300_000;

/** Where a working copy's single command lease lives: a lock folder, its holder in `owner.json` inside. */
export function leaseFile(workspaceRoot: string): string {
  return path.join(workspaceRoot, '.nxs', 'command-lease');
}

/** The working copy's fingerprint, the revision a command lease checks; a folder outside git has one fixed revision. */
export function workingCopyRevision(root: string): () => Promise<string> {
  return async () => (await readWorkingCopy(root))?.fingerprint ?? 'no-working-copy';
}

const SESSION_NOTE = [
  '',
  '## How this runtime works',
  'You run inside the Nexus built-in runtime. Your final message is posted as your reply to the thread for you:',
  'do not run `nxc reply` yourself. To hand the task back instead of answering, call the escalate tool.',
  'Tools act inside the working directory only. A tool call that is refused tells you why; a REVISION_CONFLICT means',
  'the files changed since you last looked: read them again before acting.',
].join('\n');

export function systemPrompt(persona: Pick<Persona, 'system_prompt'>, note = SESSION_NOTE): string {
  return `${persona.system_prompt.trim()}\n${note}\n`;
}

export type TurnInput = {
  /** The turn's facts, as the engine wrote them in its spec. */
  turn: { session: string; turn: number; thread: string; role: string; workspace_dir: string; written_at: string; sessionDir: string };
  persona: Persona;
  prompt: string;
  env: NodeJS.ProcessEnv;
  answer: Answer;
  signal?: AbortSignal | undefined;
  now?: (() => number) | undefined;
  onEvent?: ((e: RunEvent) => void) | undefined;
  leases?: CommandLeases | undefined;
  backoffMs?: ((attempt: number, retryAfterMs: number | null) => number) | undefined;
  /** Continue the turn's journal instead of starting afresh. */
  resume?: boolean | undefined;
  /** Where what the turn runs (a CLI, the builtin runtime's tools) is put: the turn's OS sandbox, or nothing when it is off. */
  sandbox?: TurnSandbox | undefined;
};

export type TurnOutcome = { result: Pick<RunResult, 'status' | 'reason' | 'output' | 'escalate' | 'usage'>; answer: AnswerOutcome; files: { state: string; journal: string } };

/**
 * Runs one turn to its end and posts what it ended with. A missing key or a persona that is
 * not on the built-in runtime is refused before any model call, and the turn escalates with why.
 */
export async function runSessionTurn(input: TurnInput): Promise<TurnOutcome> {
  const { persona, turn } = input;
  const now = input.now ?? Date.now;
  const files = { state: path.join(turn.sessionDir, runStateFileName(turn.turn)), journal: path.join(turn.sessionDir, journalFileName(turn.turn)) };
  const startedAt = Number.isNaN(Date.parse(turn.written_at)) ? now() : Date.parse(turn.written_at);
  const limits = resolveLimits(persona.budget, persona.timeout_ms ?? DEFAULT_RUN_TIMEOUT_MS, startedAt, operationTokensLeft(input.env));
  const identity = { run_id: randomUlid(), role: turn.role, session: turn.session, turn: turn.turn, thread: turn.thread };
  const runtime = persona.runtime;
  const refuse = async (reason: string, model: string, provider: string | null): Promise<TurnOutcome> => {
    const at = new Date(now()).toISOString();
    writeRunState(files.state, { version: 1, ...identity, runtime: 'builtin', provider, model, status: 'failed', reason, started_at: at, updated_at: at, ended_at: at, limits, usage: EMPTY_USAGE, journal: files.journal, pending_calls: [], output: null, pid: process.pid });
    const msg = endingMessage({ status: 'failed', reason, output: null, escalate: true, usage: EMPTY_USAGE, limits, elapsedMs: now() - startedAt, journal: null });
    const answer = await input.answer(msg.text, { escalate: true });
    return { result: { status: 'failed', reason, output: null, escalate: true, usage: EMPTY_USAGE }, answer, files };
  };
  if (!('kind' in runtime) || runtime.kind !== 'builtin') return refuse('the persona is not declared for the built-in runtime', persona.model, null);
  const cfg = { ...runtime.builtin, model: runtime.builtin.model ?? persona.model };
  let client;
  try {
    client = createModelClient(cfg, input.env);
  } catch (err) {
    return refuse(isNexusError(err) ? err.message : String(err), cfg.model, cfg.provider);
  }
  const revision = workingCopyRevision(turn.workspace_dir);
  // The model is called from here, with the key; the tools run in the turn's sandbox, which never sees it.
  const tools = input.sandbox?.on === true ? sandboxedTools(input.sandbox, turn.workspace_dir, input.env, limits.max_tool_output_chars) : undefined;
  const result = await executeRun({
    identity,
    root: turn.workspace_dir,
    files,
    system: systemPrompt(persona),
    prompt: input.prompt,
    client,
    limits: limits satisfies RunLimits,
    policy: policyFor(persona),
    leases: input.leases ?? fileCommandLeases({ file: leaseFile(turn.workspace_dir), revision }),
    revision,
    env: input.env,
    onEvent: input.onEvent,
    signal: input.signal,
    now,
    backoffMs: input.backoffMs,
    resume: input.resume,
    startedAt,
    toolHost: tools,
  }).finally(() => tools?.close());
  const msg = endingMessage({ ...result, elapsedMs: result.ended_at - result.started_at });
  const answer = await input.answer(msg.text, { escalate: msg.escalate });
  return { result, answer, files };
}
