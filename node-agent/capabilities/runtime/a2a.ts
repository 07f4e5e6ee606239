// A session turn on `runtime: {a2a: {url, card}}`: the turn's prompt sent as one A2A task to an agent outside
// Nexus (the A2A SDK's own client), its answer posted as the session's answer; anything but completed escalates.
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import type { TurnInput, TurnOutcome } from './session.js';
import { EMPTY_USAGE } from '../../../protocol/runs.js';

const textOf = (parts: readonly Part[] | undefined): string =>
  (parts ?? []).flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join('\n');

/** What an A2A answer says: a message's text, or a task's artifacts (else its status message) and whether it completed. */
export function a2aAnswer(result: Message | Task): { text: string; completed: boolean; state: string } {
  if (!('status' in result) && 'parts' in result) return { text: textOf(result.parts), completed: true, state: 'message' };
  const task = result;
  const state = task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED;
  const artifacts = task.artifacts.map((a) => textOf(a.parts)).filter((t) => t !== '').join('\n');
  const text = artifacts !== '' ? artifacts : textOf(task.status?.message?.parts);
  return { text, completed: state === TaskState.TASK_STATE_COMPLETED, state: TaskState[state] ?? String(state) };
}

/** Sends the turn to the outside agent and posts what it answered; a failure to reach it escalates with the reason. */
export async function runA2aTurn(input: TurnInput & { a2a: { url: string; card?: string | undefined } }): Promise<TurnOutcome> {
  const files = { state: '', journal: '' };
  const usage = { ...EMPTY_USAGE };
  try {
    const client = await new ClientFactory().createFromUrl(input.a2a.url, input.a2a.card);
    const message: Message = {
      messageId: randomUUID(),
      contextId: input.turn.session,
      taskId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: input.prompt }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    };
    const result = await client.sendMessage({ tenant: '', message, configuration: undefined, metadata: undefined }, { signal: input.signal });
    const answer = a2aAnswer(result);
    const escalate = !answer.completed || answer.text.trim() === '';
    const text = escalate ? `[runtime] the A2A agent at ${input.a2a.url} ended ${answer.state}${answer.text ? `: ${answer.text}` : ' without an answer'}` : answer.text;
    const result2 = { status: escalate ? ('failed' as const) : ('completed' as const), reason: escalate ? answer.state : null, output: answer.text, escalate, usage };
    return { result: result2, answer: await input.answer(text, { escalate }), files };
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    const result = { status: 'failed' as const, reason, output: null, escalate: true, usage };
    return { result, answer: await input.answer(`[runtime] the A2A agent at ${input.a2a.url} could not be asked: ${reason}`, { escalate: true }), files };
  }
}
