// The built-in runtime's loop: ask the model, run the tool calls it may make, until it answers or a limit ends the run.
import { isNexusError } from '../../../protocol/errors.js';
import { EMPTY_USAGE, type Block, type Message, type PendingCall, type RunStatus, type TerminalStatus, type ToolCallBlock } from '../../../protocol/runs.js';
import { account, remainingMs, toolsOffered, type BudgetState, type Verdict } from './budget.js';
import { Journal, readJournal, writeRunState } from './journal.js';
import { ProviderError, type ModelReply, type ProviderFailure } from './model.js';
import { restore } from './resume.js';
import { defaultBackoff, PROGRESS_INTERVAL_MS, Stop, summary, type RunOptions, type RunResult } from './run-types.js';
import { decide, ESCALATE_TOOL, EscalateInput, executeTool, isReadOnlyTool, offeredTools, TOOL_INPUTS, toolSpecs, type ToolName } from './tools/index.js';

export { defaultBackoff, PROGRESS_INTERVAL_MS, type Approver, type RunEvent, type RunIdentity, type RunOptions, type RunResult } from './run-types.js';

/** Runs (or resumes) one agent run to its end. Never throws for anything the run can end in; the result says how it ended. */
export async function executeRun(opts: RunOptions): Promise<RunResult> {
  const now = opts.now ?? Date.now;
  const backoff = opts.backoffMs ?? defaultBackoff;
  // A journal that cannot be resumed ends the run failed with the reason, like any other failure.
  let restored: ReturnType<typeof restore> | null = null;
  let unresumable: unknown = null;
  if (opts.resume) {
    try {
      restored = restore(readJournal(opts.files.journal));
    } catch (err) {
      unresumable = err;
    }
  }
  const journal = new Journal(opts.files.journal, now);
  const startedAt = restored?.started_at ?? opts.startedAt ?? now();
  let budget: BudgetState = { limits: restored?.limits ?? opts.limits, usage: restored?.usage ?? EMPTY_USAGE };
  const system = restored?.system ?? opts.system;
  const messages: Message[] = restored?.messages ?? [];
  const runId = restored?.run_id ?? opts.identity.run_id;
  let pending: PendingCall[] = [];
  let output: string | null = null;

  const writeState = (status: RunStatus, reason: string | null, ended: boolean) =>
    writeRunState(opts.files.state, {
      version: 1,
      run_id: runId,
      runtime: 'builtin',
      provider: opts.client.provider,
      model: opts.client.model,
      role: opts.identity.role,
      session: opts.identity.session,
      turn: opts.identity.turn,
      thread: opts.identity.thread,
      status,
      reason,
      started_at: new Date(startedAt).toISOString(),
      updated_at: new Date(now()).toISOString(),
      ended_at: ended ? new Date(now()).toISOString() : null,
      limits: budget.limits,
      usage: budget.usage,
      journal: opts.files.journal,
      pending_calls: pending,
      output,
      pid: process.pid,
    });
  // Usage between status changes is shown at most this often: a rename per model call would cost more than the call's bookkeeping.
  let lastProgress = 0;
  const progress = () => {
    if (now() - lastProgress < PROGRESS_INTERVAL_MS) return;
    lastProgress = now();
    writeState('running', null, false);
  };
  const setStatus = (status: RunStatus, reason: string | null = null) => {
    journal.append({ t: 'status', status, reason }, true);
    writeState(status, reason, false);
    opts.onEvent?.({ type: 'status', status, reason });
  };
  const push = (m: Message) => {
    messages.push(m);
    journal.append({ t: 'message', message: m });
  };

  // Cancellation from outside, or the deadline: either aborts whatever is in flight.
  const deadline = new AbortController();
  const deadlineTimer = setTimeout(() => deadline.abort(new Error('deadline')), Math.max(0, budget.limits.deadline_at - now()));
  const signals = [deadline.signal, ...(opts.signal ? [opts.signal] : [])];
  const stopSignal = AbortSignal.any(signals);
  const stopped = (): Stop | null => {
    if (opts.signal?.aborted) return new Stop('cancelled', 'the run was cancelled');
    if (deadline.signal.aborted || now() >= budget.limits.deadline_at) return new Stop('timed_out', `the ${budget.limits.timeout_ms / 1000} s deadline passed`);
    return null;
  };
  const checkpoint = () => {
    const s = stopped();
    if (s) throw s;
  };
  const apply = (v: Verdict) => {
    if (v.kind === 'stop') throw new Stop(v.status, v.reason);
  };
  // One abort listener for the whole run. Each step (a model call, a tool call, a wait) runs one at a
  // time under a signal of its own that this listener aborts, so whatever a step (or a provider's
  // SDK) hangs on its signal is dropped with the step instead of piling up on the run's.
  let step = new AbortController();
  stopSignal.addEventListener('abort', () => step.abort(stopSignal.reason), { once: true });
  const stepSignal = (): AbortSignal => {
    step = new AbortController();
    if (stopSignal.aborted) step.abort(stopSignal.reason);
    return step.signal;
  };
  const waitFor = <T>(p: Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const signal = stepSignal();
      const onAbort = () => reject(stopped() ?? new Stop('cancelled', 'the run was cancelled'));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  const sleep = (ms: number) => waitFor(new Promise<void>((r) => setTimeout(r, ms).unref()));

  const expected = { value: '' };
  const owner = opts.identity.session ? `${opts.identity.role}/${opts.identity.session}#${opts.identity.turn}` : `${opts.identity.role}/${runId}`;

  // The provider failure of the attempt before this one, cleared by an answer: a run that a limit ends
  // while the provider keeps failing says what the provider did, and where it was called.
  const last: { failure: ProviderError | null } = { failure: null };
  const failed = (pe: ProviderError, reason: string) => new Stop('failed', `${pe.code}: ${reason}`, pe.failure());

  async function ask(callNo: number): Promise<ModelReply> {
    for (let attempt = 1; ; attempt++) {
      checkpoint();
      const d = account(budget, { kind: 'model_call' }, now());
      apply(d.verdict);
      budget = d.state;
      const names = toolsOffered(budget) ? offeredTools(opts.policy, opts.approve !== undefined) : [];
      const tools = toolSpecs([...names, ESCALATE_TOOL]);
      journal.append({ t: 'request', call: callNo, attempt, tools: tools.map((t) => t.name) });
      opts.onEvent?.({ type: 'request', call: callNo, attempt, tools: tools.map((t) => t.name) });
      try {
        const reply = await opts.client.call({ system, messages, tools, signal: stepSignal(), timeoutMs: remainingMs(budget, now()), onText: (delta) => opts.onEvent?.({ type: 'text', delta }) });
        last.failure = null;
        return reply;
      } catch (err) {
        checkpoint();
        const pe = err instanceof ProviderError ? err : new ProviderError(`the request failed: ${String(err)}`, false, null, false, { cause: err });
        last.failure = pe;
        if (!pe.transient) throw failed(pe, `the provider refused the request: ${pe.message}`);
        const v = account(budget, { kind: 'transient_failure', attempt, error: pe.message }, now()).verdict;
        if (v.kind === 'stop') throw failed(pe, v.reason);
        const waitMs = Math.min(backoff(attempt, pe.retryAfterMs), remainingMs(budget, now()));
        journal.append({ t: 'retry', call: callNo, attempt, error: pe.message });
        opts.onEvent?.({ type: 'retry', attempt, error: pe.message, waitMs });
        await sleep(waitMs);
      }
    }
  }

  /** Runs the calls of one reply; returns their results and the reason a correction is needed, if any. */
  async function runCalls(calls: ToolCallBlock[]): Promise<{ results: Block[]; malformed: string | null; escalation: string | null }> {
    const results: Block[] = [];
    let malformed: string | null = null;
    const escalation = calls.find((c) => c.name === ESCALATE_TOOL);
    if (escalation !== undefined) {
      const parsed = EscalateInput.safeParse(escalation.input);
      if (parsed.success) return { results, malformed, escalation: parsed.data.reason };
    }
    for (const call of calls) {
      const result = (content: string, is_error: boolean) => results.push({ type: 'tool_result', id: call.id, content, is_error });
      if (call.input === null) {
        malformed = `the arguments of ${call.name} were not valid JSON`;
        result(`Your arguments were not valid JSON (${JSON.stringify((call.raw ?? '').slice(0, 200))}). Nothing was run; call again with a JSON object.`, true);
        continue;
      }
      const schema = call.name === ESCALATE_TOOL ? EscalateInput : TOOL_INPUTS[call.name as ToolName];
      const check = schema?.safeParse(call.input);
      if (check === undefined || !check.success) {
        malformed = check === undefined ? `there is no tool named ${call.name}` : `the arguments of ${call.name} do not fit its schema`;
        result(`${malformed}: ${check === undefined ? 'use one of the tools offered' : check.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ')}. Nothing was run.`, true);
        continue;
      }
      const pc: PendingCall = { id: call.id, tool: call.name, summary: summary(call) };
      const decision = decide(opts.policy, call.name, call.input, opts.root);
      if (decision.kind === 'deny') {
        journal.append({ t: 'tool_call', id: call.id, name: call.name, decision: 'denied', lease: null });
        opts.onEvent?.({ type: 'tool_refused', call: pc, reason: decision.reason });
        result(`Refused: ${decision.reason}.`, true);
        continue;
      }
      if (decision.kind === 'needs_approval') {
        if (opts.approve === undefined) {
          journal.append({ t: 'tool_call', id: call.id, name: call.name, decision: 'refused_needs_approval', lease: null });
          opts.onEvent?.({ type: 'tool_refused', call: pc, reason: `${decision.reason}, and nobody is here to approve it` });
          result(`Refused: ${decision.reason}, and nobody is here to approve it. Do without it, or escalate.`, true);
          continue;
        }
        pending = [pc];
        setStatus('waiting_approval', decision.reason);
        const yes = await waitFor(opts.approve(pc, decision.reason));
        pending = [];
        setStatus('running');
        if (!yes) {
          journal.append({ t: 'tool_call', id: call.id, name: call.name, decision: 'denied_by_person', lease: null });
          opts.onEvent?.({ type: 'tool_refused', call: pc, reason: 'you said no' });
          result('Refused: the person running you said no.', true);
          continue;
        }
      }
      checkpoint();
      const admit = account(budget, { kind: 'tool_call' }, now());
      if (admit.verdict.kind === 'refuse_call') {
        journal.append({ t: 'tool_call', id: call.id, name: call.name, decision: 'over_budget', lease: null });
        opts.onEvent?.({ type: 'tool_refused', call: pc, reason: admit.verdict.reason });
        result(`Refused: ${admit.verdict.reason}.`, true);
        continue;
      }
      apply(admit.verdict);
      budget = admit.state;
      const acting = !isReadOnlyTool(call.name);
      // An acting command is on disk before it runs, so a crash mid-command is known as one whose effect is unknown.
      journal.append({ t: 'tool_call', id: call.id, name: call.name, decision: 'admitted', lease: null }, acting);
      opts.onEvent?.({ type: 'tool_start', call: pc });
      const out = await executeTool(call.name as ToolName, call.input, {
        root: opts.root,
        env: opts.env,
        signal: stepSignal(),
        maxChars: budget.limits.max_tool_output_chars,
        leases: opts.leases,
        owner,
        revision: opts.revision,
        expected,
        heartbeatMs: opts.heartbeatMs,
        host: opts.toolHost,
      });
      journal.append({ t: 'tool_call', id: call.id, name: call.name, decision: 'ran', lease: out.lease });
      journal.append({ t: 'tool_done', id: call.id, content: out.content, is_error: out.is_error, artifact: out.artifact });
      journal.append({ t: 'usage', usage: budget.usage }, acting || 'soon');
      opts.onEvent?.({ type: 'tool_end', call: pc, is_error: out.is_error, content: out.content });
      result(out.content, out.is_error);
      checkpoint();
    }
    return { results, malformed, escalation: null };
  }

  let status: TerminalStatus = 'completed';
  let reason: string | null = null;
  let escalate = false;
  let error: ProviderFailure | null = null;
  try {
    if (unresumable !== null) throw unresumable;
    if (restored) journal.append({ t: 'resume' }, true);
    else {
      journal.append({ t: 'start', run_id: runId, started_at: new Date(startedAt).toISOString(), limits: budget.limits, system, runtime: 'builtin', provider: opts.client.provider, model: opts.client.model });
      push({ role: 'user', content: [{ type: 'text', text: opts.prompt }] });
    }
    setStatus('running');
    expected.value = await waitFor(opts.revision());
    const last = messages.at(-1);
    if (last?.role === 'assistant' && !last.content.some((b) => b.type === 'tool_call')) {
      // Resumed after the answer was recorded but before the run was closed: that answer stands.
      output = last.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('').trim();
    }
    for (let callNo = budget.usage.model_calls + 1; output === null; callNo = budget.usage.model_calls + 1) {
      const reply = await ask(callNo);
      const spent = account(budget, { kind: 'model_reply', tokens: reply.usage }, now());
      apply(spent.verdict);
      budget = spent.state;
      push({ role: 'assistant', content: reply.content });
      journal.append({ t: 'usage', usage: budget.usage }, 'soon');
      progress();
      const calls = reply.content.filter((b): b is ToolCallBlock => b.type === 'tool_call');
      const text = reply.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('').trim();
      if (calls.length === 0 && text !== '') {
        output = text;
        break;
      }
      const { results, malformed, escalation } = calls.length > 0 ? await runCalls(calls) : { results: [], malformed: 'the reply was empty', escalation: null };
      if (escalation !== null) {
        output = escalation;
        escalate = true;
        break;
      }
      const follow: Block[] = [...results];
      if (malformed !== null) {
        const c = account(budget, { kind: 'correction', reason: malformed }, now());
        apply(c.verdict);
        budget = c.state;
        journal.append({ t: 'correction', count: budget.usage.corrections, reason: malformed });
        if (calls.length === 0) follow.push({ type: 'text', text: 'Your reply was empty. Answer in plain text, or call the escalate tool.' });
      }
      push({ role: 'user', content: follow });
      // Not synced: each result was synced as its tool finished, and a resume rebuilds this message from those.
      journal.append({ t: 'usage', usage: budget.usage });
      progress();
    }
  } catch (err) {
    if (err instanceof Stop) {
      status = err.status;
      reason = err.reason;
      error = err.error;
      const lastFailure = last.failure;
      if (error === null && lastFailure !== null) {
        // A limit (the budget, the deadline, a cancel) ended a run whose provider was failing: say so.
        error = lastFailure.failure();
        reason = `${reason}; the provider's last failure: ${lastFailure.code}: ${lastFailure.message}`;
      }
    } else {
      status = 'failed';
      reason = isNexusError(err) ? `${err.code}: ${err.message}` : `the runtime failed: ${err instanceof Error ? err.message : String(err)}`;
    }
  } finally {
    clearTimeout(deadlineTimer);
  }
  pending = [];
  journal.append({ t: 'usage', usage: budget.usage });
  journal.append({ t: 'status', status, reason }, true);
  journal.close();
  writeState(status, reason, true);
  opts.onEvent?.({ type: 'status', status, reason });
  return { run_id: runId, status, reason, output, escalate, usage: budget.usage, limits: budget.limits, started_at: startedAt, ended_at: now(), journal: opts.files.journal, error };
}
