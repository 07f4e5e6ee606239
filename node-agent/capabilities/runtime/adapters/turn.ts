// Runs a coding CLI (claude -p, codex exec) as a session turn: deadline, budgets read from its events, run state, its answer.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { randomUlid } from '../../../../protocol/ids.js';
import { runStateFileName, type RunStatus, type RunUsage, type TerminalStatus } from '../../../../protocol/runs.js';
import { appendStream } from '../../../adapters/sessions/index.js';
import { endingMessage } from '../answer.js';
import { operationTokensLeft, resolveLimits } from '../budget.js';
import { writeRunState } from '../journal.js';
import { DEFAULT_RUN_TIMEOUT_MS, type TurnInput, type TurnOutcome } from '../session.js';
import { claudeArgs, claudeReader } from './claude-code.js';
import { codexArgs, codexReader } from './codex.js';
import { claudeMcp, codexMcpArgs } from './mcp.js';
import type { Tally } from './tally.js';

export type AdapterKind = 'claude-code' | 'codex';

/** The program each adapter starts: found on PATH unless the environment names another binary. */
export const PROGRAM_VARIABLES = { 'claude-code': 'NXS_CLAUDE_BIN', codex: 'NXS_CODEX_BIN' } as const;
const PROGRAMS = { 'claude-code': 'claude', codex: 'codex' } as const;

/** The full command line for a turn; `allowedTools` is the engine's list (null: the CLI's defaults). */
export function adapterCommand(kind: AdapterKind, input: Pick<TurnInput, 'persona' | 'env'> & { workspaceDir: string; allowedTools: readonly string[] | null; inSandbox?: boolean }): string[] {
  const program = input.env[PROGRAM_VARIABLES[kind]] || PROGRAMS[kind];
  if (kind === 'claude-code') {
    const mcp = claudeMcp(input.persona, input.allowedTools);
    return [program, ...claudeArgs(input.persona, mcp.allowedTools), ...mcp.args];
  }
  // The prompt (`-`, stdin) stays the last argument.
  const args = codexArgs(input.persona, input.workspaceDir, input.inSandbox === true);
  return [program, ...args.slice(0, -1), ...codexMcpArgs(input.persona, input.env), ...args.slice(-1)];
}

/** The engine's list for a turn, as it writes NXC_ALLOWED_TOOLS: absent means the default toolset. */
export function allowedFromEnv(env: NodeJS.ProcessEnv): string[] | null {
  const raw = env['NXC_ALLOWED_TOOLS'];
  return raw === undefined ? null : raw.split(',').filter((t) => t !== '');
}

function overBudget(t: Tally, l: ReturnType<typeof resolveLimits>): string | null {
  if (t.model_calls > l.max_model_calls) return `the model-call budget of ${l.max_model_calls} is used`;
  if (t.tool_calls > l.max_tool_calls) return `the tool-call budget of ${l.max_tool_calls} is used`;
  if (l.max_tokens !== null && t.tokens_in + t.tokens_out > l.max_tokens) return `the token budget of ${l.max_tokens} is used`;
  if (l.operation_tokens_left !== undefined && t.tokens_in + t.tokens_out > l.operation_tokens_left) return `the operation's token budget is used: this turn spent ${t.tokens_in + t.tokens_out} of the ${l.operation_tokens_left} its operation had left (operation_budget.max_tokens)`;
  return null;
}

/** Runs the turn's CLI to its end, then posts its final answer unless it replied itself; a bad end escalates. */
export async function runAdapterTurn(input: TurnInput & { kind: AdapterKind }): Promise<TurnOutcome> {
  const { turn, persona, kind } = input;
  const now = input.now ?? Date.now;
  const startedAt = Number.isNaN(Date.parse(turn.written_at)) ? now() : Date.parse(turn.written_at);
  const limits = resolveLimits(persona.budget, persona.timeout_ms ?? DEFAULT_RUN_TIMEOUT_MS, startedAt, operationTokensLeft(input.env));
  const files = { state: path.join(turn.sessionDir, runStateFileName(turn.turn)), journal: path.join(turn.sessionDir, `turn-${turn.turn}.${kind}.jsonl`) };
  const reader = kind === 'claude-code' ? claudeReader() : codexReader();
  const runId = randomUlid();
  const usage = (): RunUsage => ({ model_calls: reader.tally.model_calls, tool_calls: reader.tally.tool_calls, tokens_in: reader.tally.tokens_in, tokens_out: reader.tally.tokens_out, corrections: 0 });
  const write = (status: RunStatus, reason: string | null, ended: boolean) =>
    writeRunState(files.state, {
      version: 1, run_id: runId, runtime: kind, provider: null, model: persona.model, role: turn.role, session: turn.session, turn: turn.turn, thread: turn.thread,
      status, reason, started_at: new Date(startedAt).toISOString(), updated_at: new Date(now()).toISOString(), ended_at: ended ? new Date(now()).toISOString() : null,
      limits, usage: usage(), ...(reader.tally.cost_usd === null ? {} : { cost_usd: reader.tally.cost_usd }), journal: files.journal, pending_calls: [], output: reader.tally.final, pid: process.pid,
    });
  const [program, ...args] = adapterCommand(kind, { persona, env: input.env, workspaceDir: turn.workspace_dir, allowedTools: allowedFromEnv(input.env), inSandbox: input.sandbox?.on === true });
  write('running', null, false);
  const log = appendStream(files.journal);
  let stop: { status: Exclude<TerminalStatus, 'completed'>; reason: string } | null = null;
  const box = input.sandbox;
  const argv = box?.on === true ? box.wrap([program!, ...args], turn.workspace_dir) : [program!, ...args];
  const env = box?.on === true ? box.env(input.env) : input.env;
  const child = spawn(argv[0]!, argv.slice(1), { cwd: turn.workspace_dir, env, stdio: ['pipe', 'pipe', 'inherit'], detached: true });
  const kill = (why: NonNullable<typeof stop>) => {
    stop ??= why;
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
  };
  const timer = setTimeout(() => kill({ status: 'timed_out', reason: `the ${limits.timeout_ms / 1000} s deadline passed` }), Math.max(0, limits.deadline_at - now()));
  const onAbort = () => kill({ status: 'cancelled', reason: 'the run was cancelled' });
  input.signal?.addEventListener('abort', onAbort, { once: true });
  const exit = new Promise<{ code: number | null; error: string | null }>((resolve) => {
    child.once('error', (err) => resolve({ code: null, error: `${program} could not be started: ${err.message}` }));
    child.once('close', (code) => resolve({ code, error: null }));
  });
  child.stdin.on('error', () => undefined);
  child.stdin.end(input.prompt);
  for await (const line of createInterface({ input: child.stdout })) {
    log.write(line + '\n');
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      continue; // a line that is not an event (a banner, a warning) is kept in the log only
    }
    reader.feed(event);
    const over = overBudget(reader.tally, limits);
    if (over !== null) kill({ status: 'budget_exhausted', reason: over });
    write('running', null, false);
  }
  const { code, error } = await exit;
  clearTimeout(timer);
  input.signal?.removeEventListener('abort', onAbort);
  await new Promise<void>((r) => log.end(r));
  const t = reader.tally;
  let status: TerminalStatus = 'completed';
  let reason: string | null = null;
  if (stop !== null) ({ status, reason } = stop);
  else if (error !== null || t.error !== null || code !== 0) {
    status = 'failed';
    reason = error ?? t.error ?? `${program} exited with code ${code}`;
  } else if (limits.max_tokens !== null && t.model_calls > 0 && t.tokens_in + t.tokens_out === 0) {
    status = 'failed';
    reason = 'the CLI reported no token usage, and a token budget is set';
  }
  write(status, reason, true);
  const result = { status, reason, output: t.final, escalate: false, usage: usage() };
  // What the CLI already posted stands, however the run ended; the runtime answers only for a CLI that did not.
  if (t.replied) return { result, answer: { posted: true }, files };
  if (status === 'completed' && (t.final ?? '').trim() === '') {
    const msg = `[runtime] ${PROGRAMS[kind]} finished without an answer or a reply.`;
    return { result, answer: await input.answer(msg, { escalate: true }), files };
  }
  const msg = endingMessage({ ...result, limits, elapsedMs: now() - startedAt, journal: files.journal });
  return { result, answer: await input.answer(msg.text, { escalate: msg.escalate }), files };
}
